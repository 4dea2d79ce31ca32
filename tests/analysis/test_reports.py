"""Each registered report (ppo/pipeline/reports.py) writes exactly the files it declares, so the pipeline's rule,
made from the declaration, names every output and no other."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
import test_analysis_cli
import test_atari
import test_details
import test_figure3
import test_rlhf_analysis

from ppo.pipeline.reports import REPORTS

REPO = Path(__file__).resolve().parents[2]


def tiny_study(kind: str, root: Path, make_run, make_random) -> tuple[Path, list[Path], str]:
    """(runs folder, random-score files, anchor variant) of the report's synthetic study."""
    if kind == "table1":
        for (task, variant), values in test_analysis_cli.SCORES.items():
            for seed, value in enumerate(values):
                make_run(task, variant, seed, [value] * 3)
        return root / "runs", [make_random("Hopper-v5", [-1.0, 1.0]), make_random("Swimmer-v5", [-10.0])], "clip_0.2"
    if kind == "figure3":
        return (*test_figure3.build_study(root), "clip_0.2")
    if kind == "details":
        return (*test_details.build_study(root), "clip_0.2")
    if kind == "atari":
        return test_atari.build_study(root), [], "atari_ppo"
    if kind == "rlhf":
        return test_rlhf_analysis.build_study(root), [], ""
    raise AssertionError(f"report {kind} has no tiny study here: add one")


@pytest.mark.parametrize("kind", sorted(REPORTS))
def test_report_writes_exactly_its_declared_outputs(kind, tmp_path, make_run, make_random):
    rep = REPORTS[kind]
    runs, randoms, anchor = tiny_study(kind, tmp_path, make_run, make_random)
    out = tmp_path / "report"
    argv = ["--runs", str(runs), "--reference-dir", str(REPO / "reference"), "--out-dir", str(out),
            "--budget-note", "REDUCED BUDGET: unit-test budget", "--n-resamples", "200", "--seed", "0"]
    if rep.random_scores:
        argv += ["--random", *map(str, randoms)]
    if rep.anchor:
        argv += ["--variant", anchor]
    if rep.sb3_reference:
        argv += ["--sb3-dir", str(REPO / "published" / "sb3_reference")]
    if rep.variant_files:
        argv += ["--variant-files", *map(str, test_details.variant_files(runs))]
    spec = importlib.util.spec_from_file_location(f"report_{kind}", REPO / "workflow" / "scripts" / rep.script)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(argv) == 0
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == sorted(name for name, _ in rep.files(anchor))
    for _, caption in rep.files(anchor):
        assert caption is None or (REPO / "workflow" / "report" / caption).is_file(), caption
    # its headline (the report's first page, ./repro's last screen) is one of them, with the columns named
    assert rep.headline in written
    front_page = _script("front_page.py")
    assert front_page.headline_table(out / rep.headline, list(rep.headline_columns)).count("\n") >= 2


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), REPO / "workflow" / "scripts" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_front_page_shows_the_headline_and_the_published_paper_scale_runs(tmp_path):
    headline = tmp_path / "table1.md"
    headline.write_text("# Table 1\n\nnotes\n\n| variant | variant_label | ours | published |\n|---|---|---:|---:|\n"
                        "| clip_0.2 | Clipping, ε = 0.2 | 0.81 | 0.82 |\n\nmore notes | not a table\n")
    provenance = tmp_path / "provenance.csv"
    provenance.write_text("key,value\nstudy,table1\nscale,reduced\nscale_label,REDUCED BUDGET: 60k steps\n"
                          "runs_recorded,2\nruns_status,completed (2 runs)\nruns_training_seconds,125\n"
                          "tasks,Hopper-v5\ncpu_count,2\ngit_commit,0123456789abcdef\n")
    md, rst = tmp_path / "front.md", tmp_path / "front.rst"
    argv = ["--study", str(provenance), str(headline), "variant_label,ours,published",
            "--published", str(REPO / "published"), "--out-md", str(md), "--out-rst", str(rst)]
    assert _script("front_page.py").main(argv) == 0
    text = md.read_text()
    assert "## table1 (reduced)" in text and "Training: 2 min 5 s, summed over jobs" in text
    assert "| setting | normalised score | paper |\n| --- | ---: | ---: |\n| Clipping, ε = 0.2 | 0.81 | 0.82 |" \
        in text.replace("|---|---:|---:|", "| --- | ---: | ---: |")
    # Walker2d-v5's Table 1 is published complete (11 settings x 3 seeds): its row for ε = 0.2 is shown
    walker = [line for line in text.splitlines() if line.startswith("| Clipping, ε = 0.2 |") and "," in line]
    assert walker, text
    assert "<table>" in rst.read_text() and ".. raw:: html" in rst.read_text()


def test_front_page_says_which_settings_are_within_noise():
    table = ("| variant_label | ours | ci_low | ci_high |\n| --- | ---: | ---: | ---: |\n"
             "| A | 0.90 | 0.80 | 0.95 |\n| B | 0.85 | 0.70 | 0.81 |\n| C | 0.40 | 0.30 | 0.79 |")
    note = _script("front_page.py").noise_note(table)
    assert note.strip() == ("Highest mean: A. Within noise of it (95% intervals overlap, or less than 0.02 apart): B. "
                            "Clearly below it: C.")
    assert _script("front_page.py").noise_note(table.replace("0.79", "")) == ""  # no interval, no verdict


def test_the_noise_note_names_the_interval_its_report_used(tmp_path):
    """With a vs_best column the note reads the report's verdicts, by the method its seeds note names: Welch's
    interval below 5 seeds per cell, the studentized bootstrap from 5 (a ten-seed Table 1 said 'Welch's' before)."""
    from analysis.seeds import seed_counts

    front_page = _script("front_page.py")
    table = ("| variant_label | ours | ci_low | ci_high | vs_best |\n| --- | ---: | ---: | ---: | --- |\n"
             "| A | 0.90 | 0.80 | 0.95 | highest mean |\n| B | 0.85 | 0.70 | 0.90 | not distinguishable |\n"
             "| C | 0.40 | 0.30 | 0.50 | below |")
    for seeds, words in ((3, "Welch's 95% interval"), (10, "95% studentized bootstrap interval")):
        runs = pd.DataFrame([{"variant": v, "task": "Hopper-v5", "seed": k} for v in "ABC" for k in range(seeds)])
        report = tmp_path / f"table1_{seeds}.md"
        report.write_text(f"{table}\n\n- Seeds: {seed_counts(runs).text()}\n", encoding="utf-8")
        method = front_page.report_method(report)
        assert method == ("t" if seeds == 3 else "bootstrap-t")
        assert front_page.noise_note(table, method).strip() == (
            f"Highest mean: A. Not distinguishable from it ({words} of the difference from it crosses 0, or the "
            "difference is under 0.02; analysis.table1.BEST_RULE): B. Below it: C.")
    (tmp_path / "old.md").write_text(table + "\n", encoding="utf-8")
    assert front_page.report_method(tmp_path / "old.md") == "t"  # no seeds note: the t interval it always was


def test_the_front_page_names_columns_for_a_reader_and_drops_empty_ones():
    table = ("| variant_label | n_runs | ours | published |\n| --- | ---: | ---: | ---: |\n"
             "| A | 6 | 0.90 |  |\n| B | 6 | 0.85 |  |")
    assert _script("front_page.py").readable_headings(table).splitlines() == [
        "| setting | runs | normalised score |", "| --- | ---: | ---: |", "| A | 6 | 0.90 |", "| B | 6 | 0.85 |"]


def test_a_difference_at_the_ceiling_smaller_than_the_margin_is_a_tie():
    """CartPole: settings that always reach 500 have zero-width intervals; 0.995 is not 'clearly below' 1.0."""
    from analysis.table1 import clearly_below
    table = pd.DataFrame({"variant": ["a", "b", "c"], "ours": [1.0, 0.995, 0.80],
                          "ci_low": [1.0, 0.99, 0.75], "ci_high": [1.0, 0.999, 0.85]})
    assert clearly_below(table) == ("a", ["b"], ["c"])
