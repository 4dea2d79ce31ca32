# Training: one job per group of runs (same task; any mix of seeds and objective settings), each run
# writing its own records. A rule per group lets each declare its runs' files as outputs, so changing
# group_size or adding seeds re-uses every finished run.

for _group in GROUPS:

    rule:
        name:
            f"train_{_group.group_id}"
        output:
            run_outputs(_group.runs),
        params:
            group=_group.group_id,
            # A run re-trains when its resolved configuration changes, and only then.
            configs={r.run_id: r.config_digest for r in _group.runs},
        log:
            f"logs/{STUDY.name}/{STUDY.scale}/train_{_group.group_id}.log",
        benchmark:
            f"benchmarks/{STUDY.name}/{STUDY.scale}/train_{_group.group_id}.tsv"
        threads: config["torch_threads"]
        resources:
            mem_mb=lambda wc, input, threads, g=_group: 1000 + 40 * len(g.runs),
            runtime=lambda wc, input, threads, g=_group: max(10, int(len(g.runs) * STUDY.total_steps / 1000 / 60)),
        shell:
            "{PY} -m ppo.run --study {STUDY.name} --scale {STUDY.scale} --seeds {STUDY.seeds} "
            "--group-size {config[group_size]} --group {params.group} --out {RUNS_DIR} "
            "--threads {threads} > {log} 2>&1"


rule random_policy:
    output:
        "results/random/{task}.parquet",
    params:
        episodes=config["random_episodes"],
    log:
        "logs/random/{task}.log",
    shell:
        "{PY} -m ppo.random_policy --task {wildcards.task} --episodes {params.episodes} --seed 0 "
        "--out {output} > {log} 2>&1"
