# Aggregation: Table 1 beside the paper, per-task scores beside published references, learning curves.

REPORT_DIR = f"{RESULTS}/report"
ANCHOR_STEM = f"per_task_{STUDY.anchor.replace('_', '')}"
REPORT_FILES = [
    f"{REPORT_DIR}/{name}"
    for name in ("table1.csv", "table1.md", "table1_per_task.csv", f"{ANCHOR_STEM}.csv", f"{ANCHOR_STEM}.md",
                 "curves_steps.png", "curves_walltime.png", "rank_agreement.json", "deviations.csv",
                 "random_scores.csv", "aggregates.csv", "probability_of_improvement.csv",
                 "performance_profile.png", "sample_efficiency.png")
]
CATEGORY = f"{STUDY.name} ({STUDY.scale})"


rule deviations:
    output:
        report(f"{REPORT_DIR}/deviations.csv", caption="../report/deviations.rst", category=CATEGORY),
        f"{REPORT_DIR}/deviations.md",
    params:
        study=STUDY.name,
        scale=STUDY.scale,
        seeds=STUDY.seeds,
    log:
        f"logs/{STUDY.name}/{STUDY.scale}/deviations.log",
    shell:
        "python workflow/scripts/deviations.py --study {params.study} --scale {params.scale} "
        "--seeds {params.seeds} --out {output[0]} > {log} 2>&1"


rule random_scores:
    input:
        [random_score(t) for t in STUDY.tasks],
    output:
        report(f"{REPORT_DIR}/random_scores.csv", caption="../report/random_scores.rst", category=CATEGORY),
    shell:
        "python workflow/scripts/random_scores.py {output} {input}"


rule table1_report:
    input:
        runs=run_outputs(STUDY.runs()),
        manifests=[f"{run_dir(r)}/manifest.json" for r in STUDY.runs()],
        random=[random_score(t) for t in STUDY.tasks],
    output:
        table=report(f"{REPORT_DIR}/table1.csv", caption="../report/table1.rst", category=CATEGORY),
        table_md=f"{REPORT_DIR}/table1.md",
        per_task=report(f"{REPORT_DIR}/table1_per_task.csv", caption="../report/table1_per_task.rst", category=CATEGORY),
        anchor=report(f"{REPORT_DIR}/{ANCHOR_STEM}.csv", caption="../report/per_task_reference.rst", category=CATEGORY),
        anchor_md=f"{REPORT_DIR}/{ANCHOR_STEM}.md",
        curves=report(f"{REPORT_DIR}/curves_steps.png", caption="../report/curves.rst", category=CATEGORY),
        curves_wall=report(f"{REPORT_DIR}/curves_walltime.png", caption="../report/curves_walltime.rst", category=CATEGORY),
        rank=f"{REPORT_DIR}/rank_agreement.json",
        aggregates=report(f"{REPORT_DIR}/aggregates.csv", caption="../report/aggregates.rst", category=CATEGORY),
        aggregates_md=f"{REPORT_DIR}/aggregates.md",
        improvement=report(f"{REPORT_DIR}/probability_of_improvement.csv", caption="../report/probability_of_improvement.rst", category=CATEGORY),
        improvement_md=f"{REPORT_DIR}/probability_of_improvement.md",
        profile=report(f"{REPORT_DIR}/performance_profile.png", caption="../report/performance_profile.rst", category=CATEGORY),
        efficiency=report(f"{REPORT_DIR}/sample_efficiency.png", caption="../report/sample_efficiency.rst", category=CATEGORY),
    params:
        runs_dir=RUNS_DIR,
        report_dir=REPORT_DIR,
        budget=STUDY.label,
        anchor=STUDY.anchor,
        n_resamples=config["bootstrap"]["n_resamples"],
        seed=config["bootstrap"]["seed"],
    log:
        f"logs/{STUDY.name}/{STUDY.scale}/table1_report.log",
    shell:
        "python workflow/scripts/table1_report.py --runs {params.runs_dir} --manifests {input.manifests} "
        "--random {input.random} --reference-dir reference --out-dir {params.report_dir} --budget-note {params.budget:q} "
        "--variant {params.anchor} --n-resamples {params.n_resamples} --seed {params.seed} > {log} 2>&1"
