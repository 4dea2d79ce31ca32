# Training of the RLHF studies (kind: rlhf, ppo/pipeline/rlhf_study.py): one job per distinct pair of starting models
# (the SFT policy and the reward model, ppo.rlhf.train.models_key of the run's config: with pipeline_seeds, one per
# seed and reward-model setting), then one job per pending run, which loads them. A model file is written to a temporary name and renamed, and only its own job writes it, so runs that
# share it never build it twice or read it half-written. Finished runs (ppo.pipeline.study.is_current) get no job, so
# a rebuilt model file never re-trains them. A run published with the project (published/rlhf/<scale>/runs, by
# ppo.pipeline.publish) under the configuration the study now resolves, or the same run of another RLHF study, is
# copied, not trained (COPY_JOBS, common.smk): one job per study and source, ppo.pipeline.rlhf_job --copy-plan.


def rlhf_models_file(study, key):
    return f"{results_dir(study)}/models/models-{key}.pt"


def rlhf_rule_name(*parts):
    return "_".join("".join(c if c.isalnum() else "_" for c in str(p)) for p in parts)


for _study in [s for s in STUDIES if s.kind == "rlhf"]:
    _pending = [r for r in _study.runs() if not is_current(_study, r) and copy_source(_study, r) is None]
    _seeds_option = ["--seeds", str(config["seeds"])] if config.get("seeds") else []
    for _key in sorted({r.models_key for r in _pending}):

        rule:
            name:
                rlhf_rule_name("rlhf_models", _study.name, _key)
            output:
                rlhf_models_file(_study, _key),
            params:
                study=_study.name,
                scale=_study.scale,
                key=_key,
                cache=f"{results_dir(_study)}/models",
                seeds=_seeds_option,  # with pipeline seeds the models' keys depend on how many seeds there are
            log:
                f"{log_dir(_study)}/models-{_key}.log",
            benchmark:
                f"{benchmarks_dir(_study)}/models-{_key}.tsv"
            threads: config["torch_threads"]
            priority: 1000000 + sum(r.models_key == _key for r in _pending)  # its runs wait: most-needed first
            shell:
                "python -m ppo.pipeline.rlhf_job --study {params.study:q} --scale {params.scale:q} {params.seeds:q} "
                "--build-models {params.key:q} "
                "--models-cache {params.cache:q} --threads {threads:q} > {log:q} 2>&1"

    for _run in _pending:
        _cfg = _run.variant.config

        rule:
            name:
                rlhf_rule_name("train", _study.name, _run.variant.name, f"seed{_run.seed}")
            input:
                rlhf_models_file(_study, _run.models_key),
            output:
                run_outputs(_study, [_run]),
            params:
                study=_study.name,
                scale=_study.scale,
                cell=_run.variant.name,
                seed=_run.seed,
                digest=_run.config_digest,
                out=run_dir(_study, _run),
                cache=f"{results_dir(_study)}/models",
                seeds=_seeds_option,
            log:
                f"{log_dir(_study)}/train_{_run.variant.name}_seed{_run.seed}.log",
            benchmark:
                f"{benchmarks_dir(_study)}/train_{_run.variant.name}_seed{_run.seed}.tsv"
            threads: config["torch_threads"]
            # longest first: ReMax samples twice per update, best-of-n trains nothing
            priority: 0 if _cfg.algorithm == "best_of_n" else _cfg.updates * _cfg.batch_size * (2 if _cfg.algorithm == "remax" else 1)
            resources:
                mem_mb=1500,
            shell:
                "python -m ppo.pipeline.rlhf_job --study {params.study:q} --scale {params.scale:q} {params.seeds:q} "
                "--cell {params.cell:q} --seed {params.seed:q} --digest {params.digest:q} --out {params.out:q} "
                "--models-cache {params.cache:q} --threads {threads:q} > {log:q} 2>&1"


for (_name, _owner), (_study, _copies) in [(k, v) for k, v in COPY_JOBS.items() if v[0].kind == "rlhf"]:

    rule:
        name:
            rlhf_rule_name("copy", _name, copy_id(_owner))
        input:
            plan=COPY_PLANS[(_name, _owner)],
            sources=[f for _, _, files in _copies for f in files],
        output:
            run_outputs(_study, [run for run, _, _ in _copies]),
        log:
            f"{log_dir(_study)}/copy_{copy_id(_owner)}.log",
        localrule: True
        shell:
            "python -m ppo.pipeline.rlhf_job --copy-plan {input.plan:q} > {log:q} 2>&1"
