# Aggregation, per study: the deviations from the paper, the random-policy zero point (MuJoCo), then the
# study's report, declared in ppo/pipeline/reports.py (REPORTS: its script, outputs with captions, extra inputs).


from ppo.pipeline.reports import BESIDE, REPORTS

REPORT_FILES = []


# Stable-Baselines3 reference runs published with the project (benchmarks/mujoco_sb3_reference.py): the
# Table 1 report compares its anchor with those at the same budget; a new one re-runs the report.
SB3_REFERENCE_FILES = sorted(str(p) for p in Path("published/sb3_reference").glob("*/seed*/*"))


# A report is rebuilt when the code or the published numbers it reads change, not only its runs: its script, analysis/
# and reference/ are inputs of the report jobs (by mtime, like every input), so an edited analysis never leaves a
# stale table behind. Training jobs never read them: a run's records depend on its config and seed alone.
ANALYSIS_CODE = sorted(str(p) for p in (*Path("analysis").rglob("*.py"), *Path("reference").glob("*.csv")))


def report_code(script):
    """The inputs that make a report job run again when they change: its script, analysis/ and reference/."""
    return [f"workflow/scripts/{script}", *ANALYSIS_CODE]


def variant_files(study):
    """The study's variant files, relative to the project (inputs of a report that reads their claims)."""
    return [os.path.relpath(v.path, PROJECT) for v in study.variants]


def beside_manifests(study):
    """The manifests of the runs a check draws beside its own (ppo.pipeline.reports.BESIDE): the checked study's runs
    of the variant at the same scale, this pipeline's when it runs the study, else the published ones, else none."""
    if study.name not in BESIDE:
        return []
    name, variant = BESIDE[study.name]
    ours = next((s for s in STUDIES if s.name == name), None)
    if ours is not None:
        return [f"{run_dir(ours, r)}/manifest.json" for r in ours.runs() if r.variant.name == variant]
    published = Path(PUBLISHED_DIR, name, study.scale, "runs")
    return sorted(str(p) for p in published.glob(f"*/{variant}/seed*/manifest.json"))


def report_options(rep, study):
    """The script and the options only some reports take (the rule quotes each). A rule's shell command is evaluated
    again when its job runs, after this loop has moved on, so it can name nothing but the job's own values."""
    options = [f"workflow/scripts/{rep.script}", "--runs", runs_dir(study), "--manifests", *manifests(study)]
    if rep.random_scores:
        options += ["--random", *[random_score(t) for t in study.tasks]]
    options += ["--reference-dir", "reference", "--out-dir", report_dir(study), "--budget-note", study.label]
    if rep.anchor:
        options += ["--variant", study.anchor]
    options += ["--n-resamples", str(config["bootstrap"]["n_resamples"]), "--seed", str(config["bootstrap"]["seed"])]
    if rep.sb3_reference:
        options += ["--sb3-dir", "published/sb3_reference"]
    if rep.variant_files:
        options += ["--variant-files", *variant_files(study)]
    if beside_manifests(study):
        options += ["--beside-manifests", *beside_manifests(study)]
    return options


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

    _report = REPORTS[_study.report]
    # Our random policy is the zero point of the MuJoCo studies only: Atari uses the published random scores.
    if _report.random_scores:
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

    _files = _report.files(_study.anchor)
    REPORT_FILES += [f"{_out}/{name}" for name, _ in _files]

    rule:
        name:
            f"{_study.report}_report_{_study.name}"
        input:
            runs=run_outputs(_study, _study.runs()),
            manifests=manifests(_study),
            random=[random_score(t) for t in _study.tasks] if _report.random_scores else [],
            sb3=SB3_REFERENCE_FILES if _report.sb3_reference else [],
            variants=variant_files(_study) if _report.variant_files else [],
            beside=beside_manifests(_study),
            code=report_code(_report.script),
        output:
            [f"{_out}/{name}" if caption is None else report(f"{_out}/{name}", caption=f"../report/{caption}", category=_cat)
             for name, caption in _files],
        params:
            command=report_options(_report, _study),
        log:
            f"{log_dir(_study)}/{_study.report}_report.log",
        # the outputs kept beside their folder: a later failed report job leaves them in place (last_good.py)
        shell:
            "python {params.command:q} > {log:q} 2>&1 && python workflow/scripts/last_good.py save {output:q}"
