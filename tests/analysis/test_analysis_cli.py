"""workflow/scripts/table1_report.py end to end on a synthetic study.

The study is the hand-normalised example of test_analysis_table1.py with
T1 = Hopper-v5 (random 0), T2 = Swimmer-v5 (random -10), a = clip_0.2, b = no_clip;
every run repeats one return, so its final score is that return.
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
        "per_task_clip0.2.md", "curves_steps.png", "curves_walltime.png", "rank_agreement.json",
    ):
        assert (out / name).is_file(), name

    t1 = pd.read_csv(out / "table1.csv").set_index("variant")
    assert t1.loc["clip_0.2", "ours"] == pytest.approx(0.65)
    assert t1.loc["no_clip", "ours"] == pytest.approx(2 / 3)
    assert (t1.loc["clip_0.2", "ci_low"], t1.loc["clip_0.2", "ci_high"]) == (pytest.approx(13 / 30), pytest.approx(13 / 15))
    assert (t1.loc["no_clip", "ci_low"], t1.loc["no_clip", "ci_high"]) == (pytest.approx(8 / 15), pytest.approx(4 / 5))
    assert t1.loc["no_clip", "n_diverged"] == 1 and t1.loc["clip_0.2", "n_runs"] == 4
    assert t1.loc["clip_0.2", "published"] == _published("clipping", "epsilon=0.2")
    assert t1.loc["no_clip", "published"] == _published("no_clipping_or_penalty", "")
    assert t1.loc["clip_0.2", "variant_label"] == "Clipping, ε = 0.2"

    md = (out / "table1.md").read_text()
    assert "**Differences from the paper**" in md and "- unit-test budget" in md
    assert "Training budget: 1k env steps per run (paper: 1M)." in md
    assert "Environments: Gymnasium MuJoCo v5 (paper: Gym v1)." in md
    assert "1 of 8 runs diverged." in md

    per_task = pd.read_csv(out / "table1_per_task.csv").set_index("task")
    assert per_task.loc["Swimmer-v5", "clip_0.2"] == pytest.approx(0.3)
    assert per_task.loc["Hopper-v5", "best_variant"] == "clip_0.2"

    refs = pd.read_csv(out / "per_task_clip0.2.csv")
    hopper = refs[refs["task"] == "Hopper-v5"]
    assert set(hopper["our_mean"]) == {15.0}
    assert len(hopper) > 0 and hopper["ref_algo"].str.contains("ppo", case=False).all()
    assert hopper["comparable"].str.contains("vs our v5").all()

    agreement = json.loads((out / "rank_agreement.json").read_text())
    assert agreement["n"] == 2 and agreement["rho"] is None  # two variants: no rank test


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
