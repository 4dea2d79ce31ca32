# Optional: replay every run's records into wandb (offline unless config wandb.mode is online). It reads
# the finished parquet files, so enabling, disabling or switching it never re-runs a training job.

if config.get("tracking", "none") == "wandb":

    rule wandb_export:
        input:
            [f"{run_dir(r)}/{name}" for r in STUDY.runs() for name in RUN_FILES],
        output:
            f"{RESULTS}/wandb/exported.txt",
        params:
            mode=config["wandb"]["mode"],
            project=config["wandb"]["project"],
            run_dirs=[run_dir(r) for r in STUDY.runs()],
            wandb_dir=f"{RESULTS}/wandb",
        log:
            f"logs/{STUDY.name}/{STUDY.scale}/wandb_export.log",
        shell:
            "python -m ppo.tracking --mode {params.mode} --project {params.project} --dir {params.wandb_dir} "
            "--done {output} {params.run_dirs} > {log} 2>&1"

    REPORT_FILES.append(f"{RESULTS}/wandb/exported.txt")
