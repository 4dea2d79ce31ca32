# Aggregation: Table 1 beside the paper, per-task scores beside published references, learning curves.

REPORT_DIR = f"{RESULTS}/report"
ANCHOR_STEM = f"per_task_{STUDY.anchor.replace('_', '')}"
REPORT_FILES = [
    f"{REPORT_DIR}/{name}"
    for name in ("table1.csv", "table1.md", "table1_per_task.csv", f"{ANCHOR_STEM}.csv", f"{ANCHOR_STEM}.md",
                 "curves_steps.png", "curves_walltime.png", "rank_agreement.json", "deviations.csv",
                 "random_scores.csv")
]
CATEGORY = f"{STUDY.name} ({STUDY.scale})"


rule deviations:
    output:
        report(f"{REPORT_DIR}/deviations.csv", caption="../report/deviations.rst", category=CATEGORY),
        f"{REPORT_DIR}/deviations.md",
    log:
        f"logs/{STUDY.name}/{STUDY.scale}/deviations.log",
    shell:
        "{PY} workflow/scripts/deviations.py --study {STUDY.name} --scale {STUDY.scale} --seeds {STUDY.seeds} "
        "--out {output[0]} > {log} 2>&1"


rule random_scores:
    input:
        [random_score(t) for t in STUDY.tasks],
    output:
        report(f"{REPORT_DIR}/random_scores.csv", caption="../report/random_scores.rst", category=CATEGORY),
    run:
        import pandas as pd

        rows = [(Path(f).stem, *(lambda d: (d.episode_return.mean(), d.episode_return.std(), len(d)))(pd.read_parquet(f))) for f in input]
        pd.DataFrame(rows, columns=["task", "random_mean_return", "std", "episodes"]).to_csv(output[0], index=False)


rule table1_report:
    input:
        runs=run_outputs(STUDY.runs()),
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
    params:
        budget=STUDY.label,
        anchor=STUDY.anchor,
        n_resamples=config["bootstrap"]["n_resamples"],
        seed=config["bootstrap"]["seed"],
    log:
        f"logs/{STUDY.name}/{STUDY.scale}/table1_report.log",
    shell:
        "{PY} workflow/scripts/table1_report.py --runs {RUNS_DIR} --random {input.random} "
        "--reference-dir reference --out-dir {REPORT_DIR} --budget-note '{params.budget}' "
        "--variant {params.anchor} --n-resamples {params.n_resamples} --seed {params.seed} > {log} 2>&1"
