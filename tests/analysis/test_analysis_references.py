"""analysis.references: matching published PPO rows and describing how they differ."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.references import (comparable_note, difference_ci, format_steps, load_references, per_task_reference,
                                 reference_metric, reference_sd, reference_spread, task_env_name, versus_reference)
from analysis.stats import interval_side

REFERENCE_CSV = Path(__file__).resolve().parents[2] / "reference" / "mujoco_reference_scores.csv"


def test_small_helpers():
    assert task_env_name("Hopper-v5") == "Hopper"
    assert task_env_name("InvertedDoublePendulum-v4") == "InvertedDoublePendulum"
    assert [format_steps(s) for s in (1e6, 2e6, 1.5e6, 50_000, 512)] == ["1M", "2M", "1.5M", "50k", "512"]
    assert format_steps(math.nan) == "?"


def test_metric_of_every_ppo_row_in_the_real_csv():
    refs = load_references(REFERENCE_CSV)
    ppo = refs[refs["algo"].str.contains("ppo", case=False)]
    metrics = ppo.apply(lambda r: reference_metric(r["source"], r["note"]), axis=1)
    by_family = {
        "Fujimoto": "max-over-training eval",
        "tianshou": "max-over-training eval",
        "rl-baselines3-zoo": "single-run final-agent eval",
        "cleanrl": "last-100 training episodes",
        "Henderson et al. 2018 Deep RL that Matters arXiv:1709.06560v3 Table 1": "last-100 training episodes",
        "Henderson et al. 2018 Deep RL that Matters arXiv:1709.06560v3 Table 3": "bootstrap mean of final return, window not stated",
        "benchmarks_mujoco1M": "final training reward, window not stated",
    }
    for family, label in by_family.items():
        rows = metrics[ppo["source"].str.contains(family, regex=False)]
        assert len(rows) > 0, family
        assert set(rows) == {label}, family
    assert "metric not stated" not in set(metrics)


def _refs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "source": ["Fujimoto et al. 2018 TD3", "Fujimoto et al. 2018 TD3", "vwxyzjn/cleanrl docs", "D4RL"],
            "env": ["Hopper", "Hopper", "Hopper", "Hopper"],
            "env_version": ["v1", "v1", "v5", "D4RL gym_mujoco"],
            "algo": ["ppo (baselines)", "trpo (baselines)", "ppo (cleanrl)", "random policy"],
            "steps": [1_000_000, 1_000_000, 50_000, math.nan],
            "mean": [2164.7, 2471.3, 900.0, -20.0],
            "std": [math.nan, math.nan, 12.0, math.nan],
            "n_seeds": [10, 10, math.nan, math.nan],
            "note": ["metric = MAX over training of eval return", "same", "window 100", "random"],
        }
    )


def test_per_task_reference_rows_and_notes():
    scores = pd.DataFrame(
        {
            "run_id": ["h0", "h1", "s0", "x0"],
            "task": ["Hopper-v5", "Hopper-v5", "Swimmer-v5", "Hopper-v5"],
            "variant": ["clip_0.2", "clip_0.2", "clip_0.2", "no_clip"],
            "score": [100.0, 200.0, 30.0, -5.0],
        }
    )
    manifests = pd.DataFrame(
        {"run_id": ["h0", "h1", "s0", "x0"], "env_version": "v5", "total_steps": 50_000}
    )
    table = per_task_reference(scores, manifests, _refs(), "clip_0.2", n_resamples=2000)
    hopper = table[table["task"] == "Hopper-v5"]
    assert hopper["ref_algo"].tolist() == ["ppo (baselines)", "ppo (cleanrl)"]  # no trpo, no random
    first = hopper.iloc[0]
    assert first["our_mean"] == 150.0 and first["our_n_seeds"] == 2
    # Two seeds: sd 70.710678, se 50, t(0.975, 1) = 12.706205: 150 ± 635.310 (the old bootstrap gave 100 to 200).
    assert (first["our_ci_low"], first["our_ci_high"]) == (pytest.approx(150 - 635.310, abs=1e-3),
                                                           pytest.approx(150 + 635.310, abs=1e-3))
    assert first["our_env_version"] == "v5" and first["our_steps"] == 50_000
    assert first["comparable"] == "v1 vs our v5; 1M vs our 50k steps; metric: max-over-training eval"
    second = hopper.iloc[1]
    assert second["comparable"] == (
        "same env version v5; same budget 50k steps; "
        "metric: last-100 training episodes (same as ours); seeds not stated"
    )
    swimmer = table[table["task"] == "Swimmer-v5"].iloc[0]
    assert swimmer["our_mean"] == 30.0 and math.isnan(swimmer["our_ci_low"])  # one seed
    assert pd.isna(swimmer["ref_source"])  # no reference row: kept with blanks
    with pytest.raises(ValueError, match="no scored runs"):
        per_task_reference(scores, manifests, _refs(), "clip_0.3")


def test_comparable_note_spread_caveats():
    refs = load_references(REFERENCE_CSV)
    zoo = refs[refs["source"].str.contains("zoo") & refs["algo"].str.startswith("ppo")].iloc[0]
    note = comparable_note(zoo, "v5", 1_000_000)
    assert note.startswith("v3 vs our v5; same budget 1M steps; metric: single-run final-agent eval")
    assert note.endswith("single run; std over eval episodes, not seeds")
    henderson = refs[refs["note"].str.contains("STANDARD ERROR") & refs["algo"].str.startswith("ppo")].iloc[0]
    assert comparable_note(henderson, "v5", 1_000_000).endswith("± is standard error, std blank")


def test_sb3_difference_by_hand(tmp_path):
    import json

    from analysis.references import load_sb3_scores, sb3_difference
    from ppo.training import records

    for seed, returns in enumerate([[0.0] * 50 + [1.0] * 100, [5.0] * 10 + [3.0] * 100]):
        folder = tmp_path / "Hopper-v5" / f"seed{seed}"
        records.write_parquet(pd.DataFrame({"global_step": range(len(returns)), "episode_return": returns,
                                            "episode_length": [1] * len(returns)}), folder / "episodes.parquet")
        (folder / "manifest.json").write_text(json.dumps({"task": "Hopper-v5", "seed": seed, "total_steps": 1000}))
    sb3 = load_sb3_scores(tmp_path)
    assert sb3["score"].tolist() == [1.0, 3.0]  # the last 100 episodes of each run
    ours = pd.DataFrame({"task": ["Hopper-v5"] * 3 + ["Walker2d-v5"], "variant": ["clip_0.2"] * 4,
                         "score": [4.0, 4.0, 4.0, 9.0]})
    table = sb3_difference(ours, sb3, n_resamples=4000)
    assert table["task"].tolist() == ["Hopper-v5"]  # no SB3 runs on Walker2d
    row = table.iloc[0]
    assert (row["our_mean"], row["sb3_mean"], row["difference"]) == (4.0, 2.0, 2.0)
    # Welch: ours has no spread (v = 0); SB3's (1, 3): s^2 = 2, v = 1; dof = 1 / (1 / 1) = 1, t(0.975, 1) = 12.706205
    assert (row["difference_ci_low"], row["difference_ci_high"]) == (pytest.approx(2 - 12.706205, abs=1e-6),
                                                                     pytest.approx(2 + 12.706205, abs=1e-6))
    assert row["difference_text"] == "+2.0 (-10.7 to +14.7)"
    same = sb3_difference(pd.DataFrame({"task": "Hopper-v5", "variant": "clip_0.2", "score": [3.0, 1.0]}), sb3)
    assert same.loc[0, "difference_text"] == "identical"  # not "+0.0 (-x to +x)"
    assert difference_ci([1.0, 3.0], [3.0, 1.0]) == (0.0, 0.0, 0.0)
    assert row["sb3_n_seeds"] == 2 and row["sb3_steps"] == 1000


def test_reference_spread_judges_only_comparable_rows():
    """Each row at our budget that scores the end of training is compared with ours by Welch's interval (when
    it states its spread over seeds) or by our t interval (its mean taken as exact: here no seed count either); a
    max-over-training row (Fujimoto) and a row at another budget do not count.

    Ours [1900, 2000, 2100]: mean 2000, sd 100, t half-width 4.302653 * 100 / sqrt(3) = 248.414.
    CleanRL 2000 ± 200 over 3 seeds: difference 0, crosses 0 (consistent). baselines 2300, no spread: 2000 ± 248.4
    − 2300 = −548.4 to −51.6, below. So "within", consistent with 1 of 2.
    Ours [1000, 1100, 1200] against CleanRL: −1000; v = 10000/3 + 40000/3; dof = (50000/3)^2 / ((10000/3)^2 / 2
    + (40000/3)^2 / 2) = 2.941176; t(0.975, 2.941176) = 3.218... : half-width < 420, wholly below; and below 2300.
    Ours [2140, 2150, 2160] against two rows without spread, 2000 and 2300: 2150 ± 24.8, above one and below
    the other: "mixed"."""
    refs = pd.DataFrame({
        "source": ["vwxyzjn/cleanrl docs", "openai/baselines benchmarks_mujoco1M", "Fujimoto et al. 2018 TD3",
                   "vwxyzjn/cleanrl docs"],
        "env": "Hopper", "env_version": ["v4", "v2", "v1", "v4"], "algo": "ppo (x)",
        "steps": [1_000_000, 1_000_000, 1_000_000, 2_000_000],
        "mean": [2000.0, 2300.0, 3500.0, 500.0], "std": [200.0, math.nan, math.nan, 10.0],
        "n_seeds": [3, math.nan, 3, 3],
        "note": ["window 100", "page value = final reward", "metric = MAX over training of eval return", ""],
    })
    assert reference_spread(refs, 1_000_000, [1900.0, 2000.0, 2100.0]) == {
        "refs_low": 2000.0, "refs_high": 2300.0, "n_refs_compared": 2, "n_refs_consistent": 1,
        "refs_text": "2,000.0 to 2,300.0 (2 references)", "vs_refs": "within"}
    assert reference_spread(refs, 1_000_000, [1000.0, 1100.0, 1200.0])["vs_refs"] == "below"
    assert reference_spread(refs, 1_000_000, [2900.0, 3000.0, 3100.0])["vs_refs"] == "above"  # not Fujimoto's 3500
    assert reference_spread(refs.assign(std=math.nan), 1_000_000, [2140.0, 2150.0, 2160.0])["vs_refs"] == "mixed"
    assert reference_spread(refs, 1_000_000, [2000.0])["vs_refs"] == "no interval"
    assert reference_spread(refs, 50_000, [0.0, 1.0])["vs_refs"] == ""  # no row at that budget
    assert reference_spread(refs.iloc[:0], 1_000_000, [0.0, 1.0])["vs_refs"] == ""
    one = reference_spread(refs.iloc[1:2], 1_000_000, [2200.0, 2300.0, 2400.0])
    assert one["refs_text"] == "2,300.0 (1 reference)"  # one reference is one number, not "2,300.0 to 2,300.0"


def test_reference_sd_and_difference_by_hand():
    # rlops' population std over 3 seeds, 46.03, is the sample std 46.03 * sqrt(3/2) = 56.375; "not defined" and
    # missing seeds give none.
    row = pd.Series({"mean": 1442.64, "std": 46.03, "n_seeds": 3.0, "note": "(population) std across seeds"})
    assert reference_sd(row) == (pytest.approx(46.03 * math.sqrt(1.5)), 3)
    assert reference_sd(pd.Series({**row, "note": "meaning of ± not defined on the page"})) is None
    assert reference_sd(pd.Series({"mean": 1.0, "std": 2.0, "n_seeds": math.nan, "note": ""})) is None
    # Welch(2, 1, 3; 0, 1, 3): dof 4, ± 2.266958; without a spread, our t interval minus the mean: 2 ± 2.484138 − 0.
    welch = versus_reference([1.0, 2.0, 3.0], pd.Series({"mean": 0.0, "std": 1.0, "n_seeds": 3, "note": ""}))
    assert (welch.low, welch.high) == (pytest.approx(2 - 2.266958, abs=1e-6), pytest.approx(2 + 2.266958, abs=1e-6))
    exact = versus_reference([1.0, 2.0, 3.0], pd.Series({"mean": 0.0, "std": math.nan, "n_seeds": math.nan, "note": ""}))
    assert (exact.low, exact.high) == (pytest.approx(2 - 2.484138, abs=1e-6), pytest.approx(2 + 2.484138, abs=1e-6))
    # A mean over 6 seeds without its spread (baselines ppo2's): one of 6 runs with our spread, s = 1 over n = 3:
    # 2 ± t(0.975, 2) · 1 · √(1/3 + 1/6) = 2 ± 4.302653 · 0.707107 = 2 ± 3.042435, 2 degrees of freedom.
    six = versus_reference([1.0, 2.0, 3.0], pd.Series({"mean": 0.0, "std": math.nan, "n_seeds": 6, "note": ""}))
    assert (six.point, six.low, six.high, six.dof) == (2.0, pytest.approx(2 - 3.042435, abs=1e-6),
                                                       pytest.approx(2 + 3.042435, abs=1e-6), 2.0)
    # Taken as exact, it differs from ours at 10 seeds where the widened interval still holds 0: ours 10 seeds of
    # sd 1 around 0.9 (t half-width 2.262157 / √10 = 0.715357), against 0: exact 0.18 to 1.62 (different);
    # one of 6 runs: ± 0.715357 · √(1 + 10/6) = ± 1.168173, −0.27 to 2.07 (not distinguishable).
    ten = 0.9 + np.array([-1.5, -1.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.5]) / math.sqrt(7.0 / 9.0)
    assert ten.std(ddof=1) == pytest.approx(1.0)
    widened = versus_reference(ten, pd.Series({"mean": 0.0, "std": math.nan, "n_seeds": 6, "note": ""}))
    assert (widened.low, widened.high) == (pytest.approx(0.9 - 1.168173, abs=1e-6), pytest.approx(0.9 + 1.168173, abs=1e-6))
    assert interval_side(widened.low, widened.high) == "crosses 0"


def test_per_task_reference_marks_a_task_outside_the_spread():
    scores = pd.DataFrame({"run_id": ["h0", "h1", "h2"], "task": "Hopper-v5", "variant": "clip_0.2",
                           "score": [400.0, 500.0, 600.0]})
    manifests = pd.DataFrame({"run_id": ["h0", "h1", "h2"], "env_version": "v5", "total_steps": 1_000_000})
    refs = _refs().assign(steps=1_000_000, note=["metric = MAX over training of eval return", "same", "window 100",
                                                 "random"], source=["Fujimoto", "Fujimoto", "vwxyzjn/cleanrl", "D4RL"])
    table = per_task_reference(scores, manifests, refs, "clip_0.2", n_resamples=2000)
    # CleanRL's 900 (seeds not stated: taken as exact) is the only comparable row: our 500 ± 248.4 lies below it,
    # on every row of the task
    assert table["vs_refs"].tolist() == ["below", "below"]
    assert table["refs_text"].tolist() == ["900.0 (1 reference)"] * 2
