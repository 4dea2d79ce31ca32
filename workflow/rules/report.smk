# The report's own outputs: provenance of the results, and every CSV table as an HTML page.
# Included after analysis.smk (and after any rule file that adds a CSV to REPORT_FILES): it reads
# REPORT_FILES to find the tables.
#
# Snakemake's HTML report shows images, PDFs and HTML results in place, but any other file, CSV included,
# only as a download link. So each CSV in REPORT_FILES gets an HTML twin (workflow/scripts/table_html.py)
# with the CSV's caption and category; the report shows it as a table in place.

from snakemake.io import get_flag_value, is_flagged

TABLE_SOURCES = [f for f in REPORT_FILES if f.endswith(".csv")] + [f"{report_dir(s)}/provenance.csv" for s in STUDIES]


for _study in STUDIES:

    rule:
        name:
            f"provenance_{_study.name}"
        input:
            # Rebuilt whenever a run or any other report output of the study changes, so the code and
            # software versions it records are those of the latest rebuild of the tables.
            manifests=manifests(_study),
            outputs=[f for f in REPORT_FILES if f.startswith(report_dir(_study) + "/")],
        output:
            report(f"{report_dir(_study)}/provenance.csv", caption="../report/provenance.rst", category=category(_study)),
        params:  # nothing that changes per invocation: params changes make Snakemake re-run the job
            study=_study.name,
            scale=_study.scale,
            seeds=_study.seeds,
            tasks=list(_study.tasks),  # the study as the config narrowed it (./repro atari-three: 3 of 49 games)
            variants=[v.name for v in _study.variants],
        log:
            f"{log_dir(_study)}/provenance.log",
        shell:
            "python workflow/scripts/provenance.py --study {params.study:q} --scale {params.scale:q} "
            "--seeds {params.seeds:q} --tasks {params.tasks:q} --variants {params.variants:q} --out {output:q} "
            "--manifests {input.manifests:q} > {log:q} 2>&1"


def _report_flag(path):
    """The report() settings (caption, category, ...) an earlier rule gave its output ``path``, or None."""
    for other in workflow.rules:
        for out in other.output:
            if out == path and is_flagged(out, "report"):
                return get_flag_value(out, "report")
    return None


def _caption(flag):
    """A caption given as a path; report() resolves relative paths against this file's directory."""
    if flag is None or flag.caption is None:
        return "../report/table_view.rst"
    return str(flag.caption.get_path_or_uri(secret_free=True))


TABLE_VIEWS = []
for _source in TABLE_SOURCES:
    _view = _source[: -len(".csv")] + ".html"
    _flag = _report_flag(_source)
    TABLE_VIEWS.append(_view)

    rule:
        name:
            "table_view_" + "".join(c if c.isalnum() else "_" for c in f"{Path(_source).parts[1]}_{Path(_source).stem}")
        input:
            _source,
        output:
            report(_view, caption=_caption(_flag), category=_flag and _flag.category),
        shell:
            "python workflow/scripts/table_html.py {input:q} {output:q}"


REPORT_FILES += [f"{report_dir(s)}/provenance.csv" for s in STUDIES] + TABLE_VIEWS


# The report's first page and ./repro's last screen: what ran, what it cost, each study's headline table, and the
# paper beside them: the project's published paper-scale runs as the paper's Table 1 and Figure 3 with a verdict per
# study (workflow/scripts/front_page.py). The page opens on this run's result; the terminal's summary ends on it.
def front_page_options():
    options = []
    for s in STUDIES:
        rep = REPORTS[s.report]
        options += ["--study", f"{report_dir(s)}/provenance.csv", f"{report_dir(s)}/{rep.headline}",
                    ",".join(rep.headline_columns) or "all"]
    return options + ["--n-resamples", str(config["bootstrap"]["n_resamples"]), "--seed", str(config["bootstrap"]["seed"])]


# Table 1 and Figure 3 at the paper's scale are normalised with our random policy's score on their tasks (Table 1's
# zero point), in every run that has the published runs: a few seconds each (rule random_policy).
PUBLISHED_INDEX = [p for p in ["published/INDEX.csv"] if Path(p).exists()]  # none in a copy without published/
PAPER_RANDOM = [random_score(t) for t in sorted({t for name in ("table1", "figure3")
                                                 if Path(PUBLISHED_DIR, name, "paper").is_dir()
                                                 for t in load_study(name, "paper").tasks})]


rule front_page:
    input:
        [f"{report_dir(s)}/provenance.csv" for s in STUDIES],
        [f"{report_dir(s)}/{REPORTS[s.report].headline}" for s in STUDIES],
        PUBLISHED_INDEX,
        random=PAPER_RANDOM,
        code=report_code("front_page.py"),
    output:
        "results/front_page.md",
        "results/front_page.rst",
        "results/summary.md",
    params:
        options=front_page_options(),
    log:
        "logs/front_page.log",
    shell:
        "python workflow/scripts/front_page.py {params.options:q} --published published --random {input.random:q} "
        "--out-md {output[0]:q} --out-rst {output[1]:q} --out-summary {output[2]:q} > {log:q} 2>&1"


REPORT_FILES += ["results/front_page.md"]
