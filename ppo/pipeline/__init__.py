"""What the Snakemake workflow and the scripts call: studies, jobs, publishing, carrying, tracking, progress."""
