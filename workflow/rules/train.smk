# Training: one job per group of pending runs (same study, task and algorithm; any mix of seeds and, for
# PPO, objective settings), each run writing its own records, declared as the job's outputs. Which runs a job
# trains, with their resolved configs, is its plan (TRAIN_PLANS, common.smk: ppo.pipeline.plan), its one input;
# the shell command is the same text for every group (Snakemake tracks it as code). A run re-trains when its
# resolved configuration changes, and only then: its plan is rewritten, newer than the outputs.


for _study, _group in GROUPS:
    _plan = TRAIN_PLANS[(_study.name, _group.group_id)]
    _job = Path(_plan).stem  # train_<group>-<key>: the key names the runs; a group's index changes as runs finish

    rule:
        name:
            f"train_{_study.name}_{_group.group_id}"
        input:
            plan=_plan,
        output:
            run_outputs(_study, _group.runs),
        params:
            checkpoint_every=config["checkpoint_every"],
            checkpoint_seconds=config["checkpoint_seconds"],
        log:
            f"{log_dir(_study)}/{_job}.log",
        benchmark:
            f"{benchmarks_dir(_study)}/{_job}.tsv"
        threads: config["torch_threads"]
        priority: train_priority(_study, _group)
        resources:
            mem_mb=memory_mb(_study, _group),
            runtime=runtime_minutes(_study, _group),  # minutes; a job over its time limit is killed
        shell:
            "python -m ppo.pipeline.job --plan {input.plan:q} --threads {threads:q} "
            "--checkpoint-every {params.checkpoint_every:q} --checkpoint-seconds {params.checkpoint_seconds:q} > {log:q} 2>&1"


# Runs another study already trains (see SHARED in common.smk), or published with the project, are copied from
# there, records unchanged: one job per study and source (COPY_JOBS), each source checked before anything is copied.
# Its plan (COPY_PLANS) names each run's source.
for (_name, _owner), (_study, _copies) in [(k, v) for k, v in COPY_JOBS.items() if v[0].kind != "rlhf"]:  # rlhf.smk: RLHF's

    rule:
        name:
            f"copy_{_name}_{copy_id(_owner)}"
        input:
            plan=COPY_PLANS[(_name, _owner)],
            sources=[f for _, _, files in _copies for f in files],
        output:
            run_outputs(_study, [run for run, _, _ in _copies]),
        log:
            f"{log_dir(_study)}/copy_{copy_id(_owner)}.log",
        localrule: True
        shell:
            "python -m ppo.pipeline.job --plan {input.plan:q} > {log:q} 2>&1"


rule random_policy:
    output:
        "results/random/{task}.parquet",
    params:
        episodes=config["random_episodes"],
    log:
        "logs/random/{task}.log",
    shell:
        "python -m ppo.pipeline.random_policy --task {wildcards.task:q} --episodes {params.episodes:q} --seed 0 "
        "--out {output:q} > {log:q} 2>&1"


# Our random policy's episodes on a task whose published ones (published/random, ppo.pipeline.publish.publish_random)
# hold what rule random_policy would measure here (the same number of episodes, seed 0) and are as their manifest
# recorded them (checked while planning) are copied, not measured again: a fresh clone's first page and ./repro
# paper need the seven MuJoCo tasks' (and the v4 tasks'), 5-25 s of a core each.
COPIED_RANDOM = [p.stem for p in sorted(Path(PUBLISHED_DIR, "random").glob("*.parquet"))
                 if published_random(p.stem, config["random_episodes"], Path(PUBLISHED_DIR))]
if COPIED_RANDOM:

    rule copy_random:
        input:
            f"{PUBLISHED_DIR}/random/{{task}}.parquet",
        output:
            "results/random/{task}.parquet",
        wildcard_constraints:
            task="|".join(re.escape(t) for t in COPIED_RANDOM),
        localrule: True
        shell:
            "cp {input:q} {output:q}"

    ruleorder: copy_random > random_policy
