# Aggregation, per study: the deviations from the paper, the random-policy zero point (MuJoCo), then the
# study's report: Table 1 beside the paper (report: table1), Figure 3 beside published references (figure3),
# or Tables 6 and 2 with human-normalised aggregates (atari).

REPORT_FILES = []

TABLE1_FILES = ("table1.csv", "table1.md", "table1_per_task.csv", "curves_steps.png", "curves_walltime.png",
                "rank_agreement.json", "sb3_comparison.csv", "aggregates.csv", "probability_of_improvement.csv",
                "performance_profile.png", "sample_efficiency.png")
FIGURE3_FILES = ("figure3_curves.png", "figure3_final_scores.csv", "figure3_final_scores.md",
                 "figure3_aggregate.csv", "figure3_claim.csv", "figure3_throughput.csv")
ATARI_FILES = ("atari_table6.csv", "atari_table6.md", "atari_table2.csv", "atari_table2.md", "atari_aggregate.csv",
               "atari_aggregate.md", "atari_curves.png", "atari_references.csv", "atari_references.md")


# Stable-Baselines3 reference runs published with the project (benchmarks/mujoco_sb3_reference.py): the
# Table 1 report compares its anchor with those at the same budget; a new one re-runs the report.
SB3_REFERENCE_FILES = sorted(str(p) for p in Path("published/sb3_reference").glob("*/seed*/*"))


def anchor_stem(study):
    return f"per_task_{study.anchor.replace('_', '')}"


def report_params(study):
    return dict(runs_dir=runs_dir(study), report_dir=report_dir(study), budget=study.label, anchor=study.anchor,
                n_resamples=config["bootstrap"]["n_resamples"], seed=config["bootstrap"]["seed"])


for _study in STUDIES:
    _out, _cat = report_dir(_study), category(_study)
    REPORT_FILES += [f"{_out}/deviations.csv"]

    rule:
        name:
            f"deviations_{_study.name}"
        output:
            report(f"{_out}/deviations.csv", caption="../report/deviations.rst", category=_cat),
            f"{_out}/deviations.md",
        params:
            study=_study.name,
            scale=_study.scale,
            seeds=_study.seeds,
        log:
            f"{log_dir(_study)}/deviations.log",
        shell:
            "python workflow/scripts/deviations.py --study {params.study:q} --scale {params.scale:q} "
            "--seeds {params.seeds:q} --out {output[0]:q} > {log:q} 2>&1"

    # Our random policy is the zero point of the MuJoCo studies only: Atari uses the published random scores.
    if _study.report != "atari":
        REPORT_FILES += [f"{_out}/random_scores.csv"]

        rule:
            name:
                f"random_scores_{_study.name}"
            input:
                [random_score(t) for t in _study.tasks],
            output:
                report(f"{_out}/random_scores.csv", caption="../report/random_scores.rst", category=_cat),
            shell:
                "python workflow/scripts/random_scores.py {output:q} {input:q}"

    if _study.report == "table1":
        _anchor = anchor_stem(_study)
        REPORT_FILES += [f"{_out}/{name}" for name in (*TABLE1_FILES, f"{_anchor}.csv", f"{_anchor}.md")]

        rule:
            name:
                f"table1_report_{_study.name}"
            input:
                runs=run_outputs(_study, _study.runs()),
                manifests=manifests(_study),
                random=[random_score(t) for t in _study.tasks],
                sb3=SB3_REFERENCE_FILES,
            output:
                table=report(f"{_out}/table1.csv", caption="../report/table1.rst", category=_cat),
                table_md=f"{_out}/table1.md",
                per_task=report(f"{_out}/table1_per_task.csv", caption="../report/table1_per_task.rst", category=_cat),
                anchor=report(f"{_out}/{_anchor}.csv", caption="../report/per_task_reference.rst", category=_cat),
                anchor_md=f"{_out}/{_anchor}.md",
                curves=report(f"{_out}/curves_steps.png", caption="../report/curves.rst", category=_cat),
                curves_wall=report(f"{_out}/curves_walltime.png", caption="../report/curves_walltime.rst", category=_cat),
                rank=f"{_out}/rank_agreement.json",
                sb3=report(f"{_out}/sb3_comparison.csv", caption="../report/sb3_comparison.rst", category=_cat),
                sb3_md=f"{_out}/sb3_comparison.md",
                aggregates=report(f"{_out}/aggregates.csv", caption="../report/aggregates.rst", category=_cat),
                aggregates_md=f"{_out}/aggregates.md",
                improvement=report(f"{_out}/probability_of_improvement.csv", caption="../report/probability_of_improvement.rst", category=_cat),
                improvement_md=f"{_out}/probability_of_improvement.md",
                profile=report(f"{_out}/performance_profile.png", caption="../report/performance_profile.rst", category=_cat),
                efficiency=report(f"{_out}/sample_efficiency.png", caption="../report/sample_efficiency.rst", category=_cat),
            params:
                **report_params(_study),
            log:
                f"{log_dir(_study)}/table1_report.log",
            shell:
                "python workflow/scripts/table1_report.py --runs {params.runs_dir:q} --manifests {input.manifests:q} "
                "--random {input.random:q} --reference-dir reference --out-dir {params.report_dir:q} --budget-note {params.budget:q} "
                "--variant {params.anchor:q} --n-resamples {params.n_resamples:q} --seed {params.seed:q} "
                "--sb3-dir published/sb3_reference > {log:q} 2>&1"

    elif _study.report == "figure3":
        REPORT_FILES += [f"{_out}/{name}" for name in FIGURE3_FILES]

        rule:
            name:
                f"figure3_report_{_study.name}"
            input:
                runs=run_outputs(_study, _study.runs()),
                manifests=manifests(_study),
                random=[random_score(t) for t in _study.tasks],
            output:
                curves=report(f"{_out}/figure3_curves.png", caption="../report/figure3_curves.rst", category=_cat),
                scores=report(f"{_out}/figure3_final_scores.csv", caption="../report/figure3_final_scores.rst", category=_cat),
                scores_md=f"{_out}/figure3_final_scores.md",
                aggregate=report(f"{_out}/figure3_aggregate.csv", caption="../report/figure3_aggregate.rst", category=_cat),
                aggregate_md=f"{_out}/figure3_aggregate.md",
                claim=report(f"{_out}/figure3_claim.csv", caption="../report/figure3_claim.rst", category=_cat),
                claim_md=f"{_out}/figure3_claim.md",
                throughput=report(f"{_out}/figure3_throughput.csv", caption="../report/figure3_throughput.rst", category=_cat),
                throughput_md=f"{_out}/figure3_throughput.md",
            params:
                **report_params(_study),
            log:
                f"{log_dir(_study)}/figure3_report.log",
            shell:
                "python workflow/scripts/figure3_report.py --runs {params.runs_dir:q} --manifests {input.manifests:q} "
                "--random {input.random:q} --reference-dir reference --out-dir {params.report_dir:q} --budget-note {params.budget:q} "
                "--variant {params.anchor:q} --n-resamples {params.n_resamples:q} --seed {params.seed:q} > {log:q} 2>&1"

    elif _study.report == "atari":
        REPORT_FILES += [f"{_out}/{name}" for name in ATARI_FILES]

        rule:
            name:
                f"atari_report_{_study.name}"
            input:
                runs=run_outputs(_study, _study.runs()),
                manifests=manifests(_study),
            output:
                table6=report(f"{_out}/atari_table6.csv", caption="../report/atari_table6.rst", category=_cat),
                table6_md=f"{_out}/atari_table6.md",
                table2=report(f"{_out}/atari_table2.csv", caption="../report/atari_table2.rst", category=_cat),
                table2_md=f"{_out}/atari_table2.md",
                aggregate=report(f"{_out}/atari_aggregate.csv", caption="../report/atari_aggregate.rst", category=_cat),
                aggregate_md=f"{_out}/atari_aggregate.md",
                curves=report(f"{_out}/atari_curves.png", caption="../report/atari_curves.rst", category=_cat),
                references=report(f"{_out}/atari_references.csv", caption="../report/atari_references.rst", category=_cat),
                references_md=f"{_out}/atari_references.md",
            params:
                **report_params(_study),
            log:
                f"{log_dir(_study)}/atari_report.log",
            shell:
                "python workflow/scripts/atari_report.py --runs {params.runs_dir:q} --manifests {input.manifests:q} "
                "--reference-dir reference --out-dir {params.report_dir:q} --budget-note {params.budget:q} "
                "--n-resamples {params.n_resamples:q} --seed {params.seed:q} > {log:q} 2>&1"
