"""analysis.curves: resampling onto the grid, seed averaging and plotting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.curves import learning_curves, plot_curves, plot_curves_walltime, resample_runs, run_curve
from analysis.io import load_study


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

    steps = learning_curves(episodes, manifests, "global_step", n_points=5, n_resamples=200)
    png = plot_curves(steps, tmp_path / "out" / "steps.png")
    png2 = plot_curves_walltime(wall, tmp_path / "out" / "wall.png")
    for path in (png, png2):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="wall_time"):
        plot_curves_walltime(steps, tmp_path / "bad.png")
