# Optional: replay every run's records into wandb (offline unless config wandb.mode is online). It reads
# the finished parquet files, so enabling, disabling or switching it never re-runs a training job.

# (the MuJoCo and Atari studies: ppo.pipeline.tracking replays their episode records; an RLHF run has none)
for _study in [s for s in STUDIES if s.kind == "mujoco"] if config.get("tracking", "none") == "wandb" else []:

    rule:
        name:
            f"wandb_export_{_study.name}"
        input:
            run_outputs(_study, _study.runs()),
        output:
            f"{results_dir(_study)}/wandb/exported.txt",
        params:
            mode=config["wandb"]["mode"],
            project=config["wandb"]["project"],
            run_dirs=[run_dir(_study, r) for r in _study.runs()],
            wandb_dir=f"{results_dir(_study)}/wandb",
            entity=config["wandb"].get("entity", ""),
        log:
            f"{log_dir(_study)}/wandb_export.log",
        shell:
            "python -m ppo.pipeline.tracking --mode {params.mode:q} --project {params.project:q} --dir {params.wandb_dir:q} "
            + ("--entity {params.entity:q} " if config["wandb"].get("entity") else "")
            + "--done {output:q} {params.run_dirs:q} > {log:q} 2>&1"

    REPORT_FILES.append(f"{results_dir(_study)}/wandb/exported.txt")
