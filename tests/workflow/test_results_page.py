"""scripts/results_page.py: the paper-scale results page is assembled from the report's own outputs (tables
as written, each note once per study, figures copied), and refuses to write a partial page."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("results_page", ROOT / "scripts" / "results_page.py")
results_page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_page)

RANKS = {"n": 11, "rho": 0.7, "p": 0.01, "checks": {
    "rho": 0.7, "rho_range": [0.4, 0.9], "no_clip_rank": 11, "no_clip_last_fraction": 1.0, "best_variant": "clip_0.1",
    "best_ci": [0.8, 0.9], "anchor": "clip_0.2", "anchor_score": 0.77, "anchor_within_best_ci": False,
    "anchor_best_fraction": 0.002, "largest_rank_moves": [{"variant": "clip_0.3", "rank_ours": 2, "rank_paper": 7.0}],
    "n_resamples": 2000}}


def table(title, notes, value):
    return (f"# {title}\n\n**Differences from the paper**\n\n" + "".join(f"- {n}\n" for n in notes)
            + f"\n| variant | score |\n|---|---:|\n| clip_0.2 | {value} |\n")


INDEX_HEADER = "study,task,variant,seed,status,sha256_episodes,sha256_updates\n"


def fake_published(folder: Path, rows: str = "table1,Hopper-v5,clip_0.2,0,finished,e0,u0\n"
                                              "table1,Hopper-v5,clip_0.2,1,finished,e1,u1\n"
                                              "figure3,Hopper-v5,a2c,0,finished,e2,u2\n") -> Path:
    """published/INDEX.csv with the columns the page's record of what it read takes (the rest do not count)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "INDEX.csv").write_text(INDEX_HEADER + rows)
    return folder


def fake_results(root: Path, skip: str = "", studies=results_page.STUDIES) -> Path:
    fake_published(root.parent / "published")  # what the pipeline copied the runs from, beside results/
    for name in studies:
        study = results_page.load_study(name, "paper")
        report = root / name / "paper" / "report"
        report.mkdir(parents=True)
        for i, file in enumerate(results_page.PAGE[study.report]):
            path = report / file.format(anchor=study.anchor.replace("_", ""))
            if path.name == skip:
                continue
            if path.suffix == ".png":
                path.write_bytes(b"\x89PNG fake")
            elif path.suffix == ".json":
                path.write_text(json.dumps(RANKS))
            else:
                path.write_text(table(f"{name} {path.stem}", ["Budget: 1M steps.", f"only in {path.stem}"], i))
    (root / "table1" / "paper" / "report" / "provenance.csv").write_text(
        "key,value\nruns_status,completed (231 runs)\ngit_commit,0123456789abcdef\nwritten_utc,2026-11-24 16:25:15\n")
    (root / "front_page.md").write_text(
        "# What this run gives\n\n## table1 (paper scale)\n\nnot shown\n\n"
        "## table1: Clipping, ε = 0.2 beside the references (paper scale)\n\nnote\n\n| task | ours |\n|---|---:|\n| Hopper-v5 | 1 |\n\n"
        "## The checks of Table 1, beside it (paper scale)\n\n| task | check |\n|---|---|\n| Swimmer-v4 | v4 |\n")
    return root


def test_the_page_holds_every_output_once_with_notes_deduplicated(tmp_path):
    results = fake_results(tmp_path / "results")
    page = results_page.build(results, tmp_path / "out")
    text = page.read_text()
    assert "Runs: completed (231 runs); report built at commit 0123456789ab on 2026-11-24 16:25:15 UTC." in text
    assert "| Hopper-v5 | 1 |" in text and "| Swimmer-v4 | v4 |" in text and "not shown" not in text
    assert "ρ = 0.70, 0.40 to 0.90 over the resamples (their 2.5th to 97.5th percentiles: not a 95% interval" in text
    assert "clip_0.3 2 (paper 7)" in text
    assert "below that interval" in text and "last in 100% of the resamples" in text
    assert "- Highest mean: clip_0.1 (95% t interval of its score 0.80 to 0.90)" in text  # no method named: t
    # Each study's shared note once, each table's own note with it; every table's rows kept.
    assert text.count("- Budget: 1M steps.") == len(results_page.STUDIES)
    assert "- only in policy_entropy" in text and "| clip_0.2 | 4 |" in text
    assert (tmp_path / "out" / "table1_curves_steps.png").read_bytes() == b"\x89PNG fake"
    assert "![table1: curves_steps](table1_curves_steps.png)" in text
    assert text.index("## table1:") < text.index("## figure3:") < text.index("## swimmer_details:")


def test_reference_dumps_are_folded_and_a_study_of_one_setting_shows_no_comparison_of_settings(tmp_path):
    results = fake_results(tmp_path / "results")
    text = results_page.build(results, tmp_path / "out").read_text()
    # Table 1's and its two checks' per-task reference tables and Figure 3's final scores: folded, rows kept
    assert text.count("<details><summary>1 row × 2 columns: open to read</summary>") == 4
    assert text.count("</details>") == 4
    folded = text.split("### figure3 figure3_final_scores", 1)[1].split("</details>", 1)[0]
    assert folded.lstrip().startswith("<details>") and "| clip_0.2 |" in folded
    assert "![table1: aggregate_intervals](table1_aggregate_intervals.png)" in text
    assert "![table1: diagnostics](table1_diagnostics.png)" in text
    assert "table1_v4_aggregate_intervals.png" not in text and "table1_v4_performance_profile.png" not in text
    assert "![table1_v4: curves_steps](table1_v4_curves_steps.png)" in text  # with the line it checks
    assert "![swimmer_details: details_curves](swimmer_details_details_curves.png)" in text
    assert "![figure3: figure3_intervals](figure3_figure3_intervals.png)" in text


def test_the_sb3_figure_is_left_out_where_no_sb3_run_sits_beside_the_study(tmp_path):
    results = fake_results(tmp_path / "results")
    (results / "table1_v4" / "paper" / "report" / "sb3_comparison.md").write_text(
        "# none\n\n| task | difference |\n|---|---:|\n")
    text = results_page.build(results, tmp_path / "out").read_text()
    assert "table1_v4_sb3_curves.png" not in text and "![table1: sb3_curves](table1_sb3_curves.png)" in text


def test_a_missing_output_writes_no_page(tmp_path, capsys):
    results = fake_results(tmp_path / "results", skip="figure3_claim.md")
    assert results_page.main(["--results", str(results), "--out", str(tmp_path / "out")]) == 1
    assert "figure3_claim.md: not found" in capsys.readouterr().err
    assert not (tmp_path / "out" / "README.md").exists()


@pytest.mark.parametrize("text, expected", [
    ("# T\n\n**Differences from the paper**\n\n- a\n- b\n\n| x |\n|---|\n| 1 |\n", ("T", ["a", "b"], ["| x |", "|---|", "| 1 |"])),
    ("| x |\n|---|\n", ("", [], ["| x |", "|---|"])),
])
def test_split_markdown(text, expected):
    assert results_page.split_markdown(text) == expected


def test_a_study_without_a_report_is_listed_as_pending(tmp_path):
    results = fake_results(tmp_path / "results", studies=("table1", "figure3"))
    text = results_page.build(results, tmp_path / "out").read_text()
    assert "## figure3:" in text and "## table1_v4:" not in text
    assert "Not in this page yet: " + ", ".join(results_page.STUDIES[2:]) in text


def test_a_study_of_one_setting_has_no_rank_agreement(tmp_path):
    path = tmp_path / "rank_agreement.json"
    path.write_text(json.dumps({"n": 1, "rho": None, "p": None}))
    assert results_page.rank_agreement_lines(path) == [
        "- Not defined: 1 setting(s) with a value in the paper's Table 1 (3 or more needed)."]


def test_the_ten_seed_page_holds_the_studies_reported_at_ten_seeds(tmp_path):
    """--seeds 10: Table 1 and Figure 3 only, each where its report was built at 10 seeds (provenance.csv's seeds),
    else pending; the highest mean's interval named as rank_agreement.json's method says."""
    results = fake_results(tmp_path / "results", studies=("table1", "figure3"))
    ranks = {**RANKS, "checks": {**RANKS["checks"], "interval_method": "bootstrap-t"}}
    (results / "table1" / "paper" / "report" / "rank_agreement.json").write_text(json.dumps(ranks))
    provenance = results / "table1" / "paper" / "report" / "provenance.csv"
    provenance.write_text(provenance.read_text() + 'seeds,"10 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)"\n')
    (results / "figure3" / "paper" / "report" / "provenance.csv").write_text('key,value\nseeds,"3 (0, 1, 2)"\n')
    text = results_page.build(results, tmp_path / "out", seeds=10).read_text()
    assert text.startswith("# Table 1 and Figure 3 at 10 seeds: the report")
    assert "## table1:" in text and "## figure3:" not in text and "## table1_v4:" not in text
    assert "Not in this page yet: figure3, whose report is not at 10 seeds" in text
    assert "- Highest mean: clip_0.1 (95% studentized bootstrap interval of its score 0.80 to 0.90)" in text
    assert (tmp_path / "out" / "table1_curves_steps.png").is_file()
    assert results_page.report_seeds(results / "table1_v4" / "paper" / "report") is None  # no report there
    # without --seeds the same reports make the 3-seed page, every study in it
    three = results_page.build(results, tmp_path / "three").read_text()
    assert three.startswith("# The paper at its own scale: results") and "## figure3:" in three


def test_the_page_records_the_published_runs_it_read_and_check_says_when_they_changed(tmp_path):
    results = fake_results(tmp_path / "results")
    published = tmp_path / "published"
    page = results_page.build(results, tmp_path / "out")
    text = page.read_text()
    assert ("Built while published/INDEX.csv listed table1 2, figure3 1, table1_v4 0, table1_bootstrap 0, "
            "swimmer_details 0 runs") in text
    assert results_page.check(page, published) is None
    # a later publish: a new run of a check, then records of a run changed in place (a run trained again)
    fake_published(published, (published / "INDEX.csv").read_text().split("\n", 1)[1]
                   + "swimmer_details,Swimmer-v5,modern,0,finished,e3,u3\n")
    assert results_page.check(page, published) == "published/ has changed since it was built: swimmer_details 0 → 1 runs"
    fake_published(published, "table1,Hopper-v5,clip_0.2,0,finished,e0,u0\ntable1,Hopper-v5,clip_0.2,1,finished,e9,u1\n"
                               "figure3,Hopper-v5,a2c,0,finished,e2,u2\n")
    assert results_page.check(page, published) == "published/ has changed since it was built: table1's records"
    # the rows' order in INDEX.csv is not what the page read
    fake_published(published, "figure3,Hopper-v5,a2c,0,finished,e2,u2\ntable1,Hopper-v5,clip_0.2,1,finished,e1,u1\n"
                               "table1,Hopper-v5,clip_0.2,0,finished,e0,u0\n")
    assert results_page.check(page, published) is None
    page.write_text("# A page of before the record\n")
    assert results_page.check(page, published) == "it does not say which published runs it was built from"
    page.write_text("<!-- published runs read: table1 two e6e0481d5951 -->\n")  # edited by hand
    assert results_page.check(page, published).startswith("its record of the published runs it read is not")
    page.unlink()
    assert results_page.check(page, published) == "it does not exist"


def test_a_page_is_not_built_without_the_index_of_what_its_reports_read(tmp_path, capsys):
    results = fake_results(tmp_path / "results")
    (tmp_path / "published" / "INDEX.csv").unlink()
    assert results_page.main(["--results", str(results), "--out", str(tmp_path / "out")]) == 1
    assert "INDEX.csv: no index of the published runs the reports read" in capsys.readouterr().err
    assert not (tmp_path / "out" / "README.md").exists()


def test_the_committed_pages_were_built_from_the_runs_published_now(capsys):
    """docs/paper-results and docs/ten-seeds-report say which published runs they read: a publish of these studies'
    runs (a check, more seeds) leaves them behind until they are written again (PAGES names the commands)."""
    assert results_page.main(["--check"]) == 0, capsys.readouterr().err
