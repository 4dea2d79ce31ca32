"""workflow/scripts/table1_report.py end to end on a synthetic study.

The study is the hand-normalised example of test_analysis_table1.py with
T1 = Hopper-v5 (random 0), T2 = Swimmer-v5 (random -10), a = clip_0.2, b = no_clip;
every run repeats one return, so its final score is that return.

Normalised (best: clip on Hopper, 15; no_clip on Swimmer, 40, span 50):
clip Hopper 2/3, 4/3; Swimmer 0.2, 0.4. no_clip Hopper 4/15, 6/15; Swimmer 0.8, 1.2.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "workflow" / "scripts" / "table1_report.py"
SCORES = {
    ("Hopper-v5", "clip_0.2"): [10.0, 20.0],
    ("Hopper-v5", "no_clip"): [4.0, 6.0],
    ("Swimmer-v5", "clip_0.2"): [0.0, 10.0],
    ("Swimmer-v5", "no_clip"): [30.0, 50.0],
}


def _load_script():
    spec = importlib.util.spec_from_file_location("table1_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def study(tmp_path, make_run, make_random):
    for (task, variant), values in SCORES.items():
        for seed, value in enumerate(values):
            status = "diverged" if (task, variant, seed) == ("Swimmer-v5", "no_clip", 1) else "completed"
            make_run(task, variant, seed, [value] * 3, status=status)
    randoms = [make_random("Hopper-v5", [-1.0, 1.0]), make_random("Swimmer-v5", [-10.0])]
    return tmp_path, randoms


def _published(setting: str, param: str) -> float:
    table = pd.read_csv(REPO / "reference" / "ppo2017_table1.csv", dtype=str, keep_default_na=False)
    return float(table.loc[(table["setting"] == setting) & (table["param"] == param), "value"].iloc[0])


def test_report_end_to_end(study):
    tmp_path, randoms = study
    out = tmp_path / "report"
    argv = [
        "--runs", str(tmp_path / "runs"), "--random", *map(str, randoms),
        "--reference-dir", str(REPO / "reference"), "--out-dir", str(out),
        "--budget-note", "unit-test budget", "--n-resamples", "2000", "--curve-points", "5",
    ]
    assert _load_script().main(argv) == 0
    for name in (
        "table1.csv", "table1.md", "table1_per_task.csv", "per_task_clip0.2.csv",
        "per_task_clip0.2.md", "curves_steps.png", "diagnostics.png", "rank_agreement.json", "sb3_comparison.csv",
        "sb3_comparison.md", "sb3_curves.png", "aggregate_intervals.png",
        "aggregates.csv", "aggregates.md", "probability_of_improvement.csv",
        "probability_of_improvement.md", "performance_profile.png", "sample_efficiency.png",
    ):
        assert (out / name).is_file(), name

    t1 = pd.read_csv(out / "table1.csv").set_index("variant")
    assert t1.loc["clip_0.2", "ours"] == pytest.approx(0.65)
    assert t1.loc["no_clip", "ours"] == pytest.approx(2 / 3)
    # 95% t intervals stratified over tasks, computed by hand in test_analysis_table1.py's docstring
    assert (t1.loc["clip_0.2", "ci_low"], t1.loc["clip_0.2", "ci_high"]) == (pytest.approx(-0.907267, abs=1e-6),
                                                                             pytest.approx(2.207267, abs=1e-6))
    assert (t1.loc["no_clip", "ci_low"], t1.loc["no_clip", "ci_high"]) == (pytest.approx(-0.218141, abs=1e-6),
                                                                           pytest.approx(1.551474, abs=1e-6))
    assert t1.loc["clip_0.2", "vs_best"] == "not distinguishable" and t1.loc["no_clip", "vs_best"] == "highest mean"
    assert t1.loc["no_clip", "n_diverged"] == 1 and t1.loc["clip_0.2", "n_runs"] == 4
    assert t1.loc["clip_0.2", "published"] == _published("clipping", "epsilon=0.2")
    assert t1.loc["no_clip", "published"] == _published("no_clipping_or_penalty", "")
    assert t1.loc["clip_0.2", "variant_label"] == "Clipping, ε = 0.2"

    md = (out / "table1.md").read_text()
    assert "**Differences from the paper**" in md and "- unit-test budget" in md
    assert "Training budget: 1k env steps per run (paper: 1M)." in md
    assert "Environments: Gymnasium MuJoCo v5 (paper: Gym v1)." in md
    assert "1 of 8 runs diverged." in md
    assert "0 of 8 scored runs end no better than our random policy" in md and "Welch" in md

    per_task = pd.read_csv(out / "table1_per_task.csv").set_index("task")
    assert per_task.loc["Swimmer-v5", "clip_0.2"] == pytest.approx(0.3)
    assert per_task.loc["Hopper-v5", "best_variant"] == "clip_0.2"

    refs = pd.read_csv(out / "per_task_clip0.2.csv")
    hopper = refs[refs["task"] == "Hopper-v5"]
    assert set(hopper["our_mean"]) == {15.0}
    assert len(hopper) > 0 and hopper["ref_algo"].str.contains("ppo", case=False).all()
    assert hopper["comparable"].str.contains("vs our v5").all()

    _check_aggregates(out, t1)

    agreement = json.loads((out / "rank_agreement.json").read_text())
    assert agreement["n"] == 2 and agreement["rho"] is None  # two variants: no rank test


def _check_aggregates(out: Path, t1: pd.DataFrame) -> None:
    """clip_0.2's four runs pooled: 0.2, 0.4, 2/3, 4/3.

    IQM = mean of the middle two = (0.4 + 2/3) / 2 = 8/15. In a resample Swimmer's runs
    stay below Hopper's, so IQM = (max of Swimmer's resample + min of Hopper's) / 2:
    lowest (0.2 + 2/3) / 2 = 13/30 (Swimmer draws 0.2 twice, Hopper not 4/3 twice:
    1/4 * 3/4), highest (0.4 + 4/3) / 2 = 13/15, likewise 3/16 -> CI [13/30, 13/15].
    Median of the task means 1 and 0.3 = 0.65 = mean (Table 1's value). The mean's interval is Table 1's t
    interval stratified over tasks (-0.907 to 2.207), not the bootstrap's extremes 13/30 and 13/15 (each task's
    two runs drawn alike, 1/16 each), which cover far less than 95% with two runs per task.
    Optimality gap = (1/3 + 0 + 0.8 + 0.6) / 4 = 13/30; extremes (0 + 1.2) / 4 = 0.3 and
    (2/3 + 1.6) / 4 = 17/30, each with probability 1/16 -> CI [0.3, 17/30].
    no_clip: IQM (0.4 + 0.8) / 2 = 0.6, gap (11/15 + 9/15 + 0.2 + 0) / 4 = 23/60.
    P(no_clip > clip): Hopper 0, Swimmer 1 in every resample -> 0.5, CI [0.5, 0.5].
    """
    agg = pd.read_csv(out / "aggregates.csv").set_index("variant")
    clip = agg.loc["clip_0.2"]
    assert clip["iqm"] == pytest.approx(8 / 15)
    assert (clip["iqm_ci_low"], clip["iqm_ci_high"]) == (pytest.approx(13 / 30), pytest.approx(13 / 15))
    assert clip["median"] == pytest.approx(0.65) and clip["mean"] == pytest.approx(0.65)
    table1 = pd.read_csv(out / "table1.csv").set_index("variant").loc["clip_0.2"]
    assert (clip["mean_ci_low"], clip["mean_ci_high"]) == (pytest.approx(table1["ci_low"]), pytest.approx(table1["ci_high"]))
    assert (clip["mean_ci_low"], clip["mean_ci_high"]) == (pytest.approx(-0.9072669), pytest.approx(2.2072669))
    assert clip["optimality_gap"] == pytest.approx(13 / 30)
    gap_ci = (clip["optimality_gap_ci_low"], clip["optimality_gap_ci_high"])
    assert gap_ci == (pytest.approx(0.3), pytest.approx(17 / 30))
    assert (clip["n_tasks"], clip["n_runs"]) == (2, 4)
    assert agg.loc["no_clip", "iqm"] == pytest.approx(0.6)
    assert agg.loc["no_clip", "optimality_gap"] == pytest.approx(23 / 60)
    assert "Agarwal et al. 2021 as rliable defines them" in (out / "aggregates.md").read_text()

    poi = pd.read_csv(out / "probability_of_improvement.csv")
    assert poi.to_dict("records") == [
        {"variant": "no_clip", "anchor": "clip_0.2", "p_improvement": 0.5, "ci_low": 0.5, "ci_high": 0.5}
    ]
    assert "- unit-test budget" in (out / "probability_of_improvement.md").read_text()
    for png in ("performance_profile.png", "sample_efficiency.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_random_score_is_a_clear_error(study):
    tmp_path, randoms = study
    proc = subprocess.run(
        [
            sys.executable, str(SCRIPT), "--runs", str(tmp_path / "runs"), "--random", str(randoms[0]),
            "--reference-dir", str(REPO / "reference"), "--out-dir", str(tmp_path / "report"),
        ],
        cwd=tmp_path,  # not the repo root: the script must find the analysis package itself
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "no random score for task(s) ['Swimmer-v5']" in proc.stderr
    assert str(randoms[0]) in proc.stderr


def test_report_on_tasks_the_paper_never_trained(tmp_path, make_run, make_random):
    """The same synthetic study on CartPole-v1 and Acrobot-v1 (classic control): normalised as on MuJoCo, but the
    paper's Table 1 column stays empty and every output says why instead of comparing with the paper."""
    renamed = {"Hopper-v5": "CartPole-v1", "Swimmer-v5": "Acrobot-v1"}
    for (task, variant), values in SCORES.items():
        for seed, value in enumerate(values):
            make_run(renamed[task], variant, seed, [value] * 3)
    randoms = [make_random("CartPole-v1", [-1.0, 1.0]), make_random("Acrobot-v1", [-10.0])]
    out = tmp_path / "report"
    argv = ["--runs", str(tmp_path / "runs"), "--random", *map(str, randoms),
            "--reference-dir", str(REPO / "reference"), "--out-dir", str(out), "--n-resamples", "200",
            "--curve-points", "5"]
    assert _load_script().main(argv) == 0
    t1 = pd.read_csv(out / "table1.csv").set_index("variant")
    assert t1.loc["clip_0.2", "ours"] == pytest.approx(0.65) and t1.loc["no_clip", "ours"] == pytest.approx(2 / 3)
    assert t1["published"].isna().all() and t1["rank_published"].isna().all()
    md = (out / "table1.md").read_text()
    assert "Tasks: Acrobot-v1, CartPole-v1. The paper has no experiments on these tasks" in md
    assert "(paper:" not in md and "MuJoCo v" not in md  # no budget, version or seed comparison with the paper
    agreement = json.loads((out / "rank_agreement.json").read_text())
    assert agreement["n"] == 0 and "no number here is compared with the paper's" in agreement["note"]
    assert "checks" not in agreement
    refs = pd.read_csv(out / "per_task_clip0.2.csv")
    assert set(refs["task"]) == {"CartPole-v1", "Acrobot-v1"} and refs["ref_source"].isna().all()
