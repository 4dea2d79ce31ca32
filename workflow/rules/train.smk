# Training: one job per group of pending runs (same task; any mix of seeds and objective settings), each
# run writing its own records, declared as the job's outputs. The shell command is the same text for
# every group (Snakemake tracks it as code); which runs a job trains is given by its {output} paths.


for _group in GROUPS:

    rule:
        name:
            f"train_{_group.group_id}"
        output:
            run_outputs(_group.runs),
        params:
            study=STUDY.name,
            scale=STUDY.scale,
            # A run re-trains when its resolved configuration changes, and only then.
            configs={r.run_id: r.config_digest for r in _group.runs},
            checkpoint_every=config["checkpoint_every"],
        log:
            f"logs/{STUDY.name}/{STUDY.scale}/train_{_group.group_id}.log",
        benchmark:
            f"{RESULTS}/benchmarks/train_{_group.group_id}.tsv"
        threads: config["torch_threads"]
        priority: int(expected_seconds(_group))  # longest first: balances the cores
        resources:
            mem_mb=1000 + 40 * len(_group.runs),
            runtime=max(10, int(2 * expected_seconds(_group) / 60)),  # minutes, with a 2x margin
        shell:
            "python -m ppo.run --study {params.study} --scale {params.scale} --threads {threads} "
            "--checkpoint-every {params.checkpoint_every} {output} > {log} 2>&1"


rule random_policy:
    output:
        "results/random/{task}.parquet",
    params:
        episodes=config["random_episodes"],
    log:
        "logs/random/{task}.log",
    shell:
        "python -m ppo.random_policy --task {wildcards.task} --episodes {params.episodes} --seed 0 "
        "--out {output} > {log} 2>&1"
