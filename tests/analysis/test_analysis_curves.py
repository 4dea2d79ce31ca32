"""analysis.curves: resampling onto the grid, seed averaging and plotting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.curves import (
    learning_curves,
    plot_curves,
    plot_sample_efficiency,
    resample_runs,
    run_curve,
    sample_efficiency,
)
from analysis.io import load_random, load_study
from analysis.scores import final_scores
from analysis.table1 import normalize_scores


def test_run_curve_last_k_step_function():
    grid = np.array([0.0, 10.0, 25.0, 40.0, 50.0])
    values = run_curve(np.array([10, 20, 30, 40]), np.array([1.0, 2.0, 3.0, 4.0]), grid, smooth=2, end=45)
    # 0: no episode yet; 10: [1]; 25: last two of [1,2] -> 1.5; 40: [3,4] -> 3.5; 50 > end.
    np.testing.assert_array_equal(values[1:4], [1.0, 1.5, 3.5])
    assert math.isnan(values[0]) and math.isnan(values[4])
    with pytest.raises(ValueError):
        run_curve(np.array([1]), np.array([1.0]), grid, smooth=0)


def test_learning_curves_mean_and_band(tmp_path, make_run):
    # total_steps 100, 3 points -> grid 0, 50, 100.
    make_run("Hopper-v5", "clip_0.2", 0, [1.0, 3.0], steps=[20, 60], total_steps=100)
    make_run("Hopper-v5", "clip_0.2", 1, [5.0, 7.0], steps=[40, 90], total_steps=100)
    # Diverged at 50: its curve stops there.
    make_run("Hopper-v5", "no_clip", 0, [9.0], steps=[10], status="diverged", diverged_at_step=50, total_steps=100)
    episodes, _, manifests = load_study(tmp_path / "runs")

    per_run = resample_runs(episodes, manifests, "global_step", n_points=3, smooth=10)
    seed0 = per_run[per_run["run_id"] == "Hopper-v5__clip_0.2__s0"]["value"].to_numpy()
    assert math.isnan(seed0[0]) and seed0[1:].tolist() == [1.0, 2.0]

    curves = learning_curves(episodes, manifests, "global_step", n_points=3, smooth=10, n_resamples=2000)
    clip = curves[curves["variant"] == "clip_0.2"]
    assert clip["global_step"].tolist() == [0.0, 50.0, 100.0]
    # Seed values at 50: 1 and 5; at 100: mean(1,3)=2 and mean(5,7)=6.
    assert clip["mean"].tolist()[1:] == [3.0, 4.0]
    assert clip["ci_low"].tolist()[1:] == [1.0, 2.0]  # two seeds: band = [min, max]
    assert clip["ci_high"].tolist()[1:] == [5.0, 6.0]
    assert clip["n_runs"].tolist() == [0, 2, 2]
    no_clip = curves[curves["variant"] == "no_clip"]
    assert no_clip["mean"].tolist()[1] == 9.0 and math.isnan(no_clip["mean"].tolist()[2])
    assert no_clip["n_runs"].tolist() == [0, 1, 0]


def test_walltime_grid_and_plots(tmp_path, make_run):
    make_run("Hopper-v5", "clip_0.2", 0, [1.0, 2.0], steps=[10, 20], wall=[1.0, 4.0])
    make_run("Hopper-v5", "clip_0.2", 1, [3.0, 4.0], steps=[10, 20], wall=[2.0, 2.0])
    make_run("Swimmer-v5", "no_clip", 0, [0.5], steps=[10], wall=[3.0])
    episodes, _, manifests = load_study(tmp_path / "runs")
    wall = learning_curves(episodes, manifests, "wall_time", n_points=5, smooth=10, n_resamples=200)
    hopper = wall[wall["task"] == "Hopper-v5"]
    assert hopper["wall_time"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]  # up to the slowest run
    # Seed 1 ends at 2 s; seed 0 at 4 s. At 2 s: seed0 [1] and seed1 [3,4] -> (1 + 3.5) / 2.
    assert hopper["mean"].tolist()[2] == 2.25
    assert hopper["n_runs"].tolist() == [0, 1, 2, 1, 1]
    assert hopper["mean"].tolist()[4] == 1.5

    steps = resample_runs(episodes, manifests, "global_step", n_points=5)
    png = plot_curves(steps, tmp_path / "out" / "steps.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="wall_time"):
        plot_curves(steps, tmp_path / "bad.png", x="wall_time")


def test_sample_efficiency_iqm_of_normalised_curves(tmp_path, make_run, make_random):
    """Budget 100 steps, 5 points -> grid 0, 25, 50, 75, 100; smooth 10 keeps every episode.

    Hopper (random 0): clip seed0 returns 1, 3 at steps 20, 60; seed1 5, 7 at 40, 90.
    Final scores 2 and 6, no_clip scores 2 -> best = clip, 4. Normalised = return / 4.
    Swimmer (random -10): clip seed0 0, 10 at 30, 70; seed1 20, 30 at 35, 80.
    Final 5 and 25 -> best 15. Normalised = (return + 10) / 25.

    clip at 50: Hopper 1/4, 5/4; Swimmer 10/25, 30/25 -> sorted .25 .4 1.2 1.25,
    IQM = mean of the middle two = 0.8. At 75: Hopper mean(1,3)/4 = .5, 1.25; Swimmer
    .6, 1.2 -> 0.9. At 100: .5, 1.5, .6, 1.4 -> 1.0. At 25 only Hopper seed0 has an
    episode: Swimmer has no run there, so no value. Band at 50: each task resamples its
    two runs; the IQM is lowest when both tasks draw their low run twice
    ([.25 .25 .4 .4] -> 0.325, probability 1/16) and highest with both high runs twice
    ([1.2 1.2 1.25 1.25] -> 1.225). Likewise [0.55, 1.225] at 75 and [0.55, 1.45] at 100.

    no_clip: one Hopper run, return 2 at step 10, diverged at 50. It keeps 2/4 = 0.5
    up to its budget (the learning curves would stop at 50); one run -> no band.
    """
    make_run("Hopper-v5", "clip_0.2", 0, [1.0, 3.0], steps=[20, 60], total_steps=100)
    make_run("Hopper-v5", "clip_0.2", 1, [5.0, 7.0], steps=[40, 90], total_steps=100)
    make_run("Swimmer-v5", "clip_0.2", 0, [0.0, 10.0], steps=[30, 70], total_steps=100)
    make_run("Swimmer-v5", "clip_0.2", 1, [20.0, 30.0], steps=[35, 80], total_steps=100)
    make_run("Hopper-v5", "no_clip", 0, [2.0], steps=[10], status="diverged", diverged_at_step=50, total_steps=100)
    randoms = [make_random("Hopper-v5", [-1.0, 1.0]), make_random("Swimmer-v5", [-10.0])]
    episodes, _, manifests = load_study(tmp_path / "runs")
    normalized = normalize_scores(final_scores(episodes), load_random(randoms))

    curve = sample_efficiency(episodes, manifests, normalized, n_points=5, smooth=10, n_resamples=4000)
    clip = curve[curve["variant"] == "clip_0.2"]
    assert clip["global_step"].tolist() == [0.0, 25.0, 50.0, 75.0, 100.0]
    np.testing.assert_allclose(clip["iqm"], [np.nan, np.nan, 0.8, 0.9, 1.0])
    np.testing.assert_allclose(clip["ci_low"], [np.nan, np.nan, 0.325, 0.55, 0.55])
    np.testing.assert_allclose(clip["ci_high"], [np.nan, np.nan, 1.225, 1.225, 1.45])
    assert clip["n_runs"].tolist() == [0, 1, 4, 4, 4]
    assert clip["variant_label"].iloc[0] == "Clipping, ε = 0.2"
    no_clip = curve[curve["variant"] == "no_clip"]
    np.testing.assert_allclose(no_clip["iqm"], [np.nan, 0.5, 0.5, 0.5, 0.5])
    assert no_clip["ci_low"].isna().all() and no_clip["n_runs"].tolist() == [0, 1, 1, 1, 1]

    again = sample_efficiency(episodes, manifests, normalized, n_points=5, smooth=10, n_resamples=4000)
    pd.testing.assert_frame_equal(curve, again)  # fixed seed: same band
    png = plot_sample_efficiency(curve, tmp_path / "out" / "sample_efficiency.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(KeyError, match="Swimmer-v5"):
        sample_efficiency(episodes, manifests, normalized[normalized["task"] == "Hopper-v5"], n_points=5)
