"""The reports' figures as a researcher reads them (issue 34): settings coloured by family with ε = 0.2 emphasised,
every seed under its mean, the random policy and the checked or SB3 line beside the runs, the legend off the data,
diagnostics, interval estimates, a performance profile whose τ axis opens up near 1, CEM's staircase explained,
and no text under 10 px once a figure is shown 980 px wide (GitHub's column)."""
from __future__ import annotations

import colorsys

import numpy as np
import pandas as pd
import pytest
from conftest import write_run
from matplotlib.colors import to_rgb

from analysis.aggregate import (aggregate_metrics, default_taus, draw_interval_estimates, draw_performance_profile,
                                improvement_vs_anchor, interval_method, performance_profile, tau_scale,
                                tau_transform)
from analysis.curves import (SB3_STYLE, beside_runs, beside_style, draw_curves, draw_diagnostics, identical_tasks,
                             draw_sample_efficiency, resample_runs, sample_efficiency, update_curves)
from analysis.figure3 import generation_note
from analysis.io import load_random, load_study
from analysis.references import SB3_VARIANT, load_sb3_runs
from analysis.scores import final_scores
from analysis.style import (ANCHOR_WIDTH, MIN_TEXT_PX, SEED_WIDTH, draw_message, family_of, smallest_text_px,
                            variant_styles)
from analysis.table1 import normalize_scores

TABLE1 = ["no_clip", "clip_0.1", "clip_0.2", "clip_0.3", "kl_adaptive_0.003", "kl_adaptive_0.01", "kl_adaptive_0.03",
          "kl_fixed_0.3", "kl_fixed_1", "kl_fixed_3", "kl_fixed_10"]


def hue(color) -> float:
    """The colour's hue in degrees."""
    return colorsys.rgb_to_hsv(*to_rgb(color))[0] * 360


def data_axes(fig):
    """The figure's panels that hold data (a line with points), not the legend's empty place."""
    return [ax for ax in fig.axes if ax.axison and any(len(line.get_xdata()) for line in ax.get_lines())]


def test_settings_are_coloured_by_family_and_the_anchor_stands_out():
    styles = variant_styles(TABLE1, "clip_0.2")
    families = {v: family_of(v) for v in TABLE1}
    assert families["clip_0.3"] == "Clipping" and families["kl_adaptive_0.01"] == "Adaptive KL"
    assert families["kl_fixed_10"] == "Fixed KL" and families["no_clip"] == "None"
    assert family_of("mistake_clip_0.5") == family_of("a2c") == "Others"
    for variant in TABLE1:
        r, g, b = to_rgb(styles[variant].color)
        if families[variant] == "Clipping":
            assert b > r and b > g, variant  # blues
        elif families[variant] == "Adaptive KL":
            assert g > r and g > b, variant  # greens
        elif families[variant] == "Fixed KL":
            assert 15 <= hue(styles[variant].color) <= 40, variant  # oranges
        else:
            assert max(r, g, b) - min(r, g, b) < 0.05, variant  # grey
    # within a family, no two settings look alike: another shade or another dash
    for family in {"Clipping", "Adaptive KL", "Fixed KL"}:
        members = [styles[v] for v in TABLE1 if families[v] == family]
        assert len({(s.color, s.dash) for s in members}) == len(members)
    anchor = styles["clip_0.2"]
    assert anchor.width == ANCHOR_WIDTH > max(s.width for v, s in styles.items() if v != "clip_0.2")
    assert anchor.zorder > max(s.zorder for v, s in styles.items() if v != "clip_0.2")
    assert sum(to_rgb(anchor.color)) < min(sum(to_rgb(styles[v].color)) for v in ("clip_0.1", "clip_0.3"))
    # Figure 3's algorithms: no blue among them, so blue stays PPO's
    others = variant_styles(["a2c", "trpo", "cem", "vpg_adaptive", "a2c_trust_region"], None)
    assert not any(180 <= hue(s.color) <= 250 and max(to_rgb(s.color)) - min(to_rgb(s.color)) > 0.2
                   for s in others.values())


@pytest.fixture
def two_task_study(make_run, tmp_path):
    """Hopper and Swimmer, clip_0.2 and no_clip, 3 seeds each, 1000 steps."""
    for task in ("Hopper-v5", "Swimmer-v5"):
        for variant, base in (("clip_0.2", 10.0), ("no_clip", 1.0)):
            for seed in range(3):
                make_run(task, variant, seed, [base + seed + k for k in range(10)])
    return load_study(tmp_path / "runs")


def test_curves_draw_every_seed_under_the_mean_with_the_random_policy_and_the_legend_off_the_data(two_task_study):
    episodes, _, manifests = two_task_study
    per_run = resample_runs(episodes, manifests, "global_step", n_points=20)
    random = pd.Series({"Hopper-v5": 3.5, "Swimmer-v5": -2.0})
    fig = draw_curves(per_run, anchor="clip_0.2", random_scores=random)
    panels = data_axes(fig)
    assert sorted(ax.get_title() for ax in panels) == ["Hopper-v5", "Swimmer-v5"]
    styles = variant_styles(["clip_0.2", "no_clip"], "clip_0.2")
    for ax in panels:
        lines = ax.get_lines()
        seeds = [line for line in lines if line.get_linewidth() == SEED_WIDTH]
        assert len(seeds) == 6  # 2 settings x 3 seeds
        assert all(line.get_zorder() < 2 for line in seeds)  # under every mean line
        means = [line for line in lines if line.get_linewidth() > SEED_WIDTH and len(line.get_xdata()) > 2]
        assert {to_rgb(line.get_color()) for line in means} == {to_rgb(s.color) for s in styles.values()}
        anchor_line = max(means, key=lambda line: line.get_linewidth())
        assert to_rgb(anchor_line.get_color()) == to_rgb(styles["clip_0.2"].color)
        # the mean is the mean of the seeds
        seed_values = np.array([line.get_ydata() for line in seeds if line.get_color() == anchor_line.get_color()])
        np.testing.assert_allclose(anchor_line.get_ydata()[5:], seed_values.mean(axis=0)[5:])
        flat = [line for line in lines if len(set(np.asarray(line.get_ydata(), float))) == 1
                and len(line.get_xdata()) == 2]
        assert [line.get_ydata()[0] for line in flat] == [random[ax.get_title()]]
        assert ax.get_legend() is None  # no legend over the data
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1 and not legends[0].axes.axison
    texts = [t.get_text() for t in legends[0].get_texts()]
    assert "Clipping" in texts and "ε = 0.2" in texts and "random policy" in texts
    assert smallest_text_px(fig) >= MIN_TEXT_PX


def test_a_check_draws_the_line_it_checks_and_sb3_beside_its_own(two_task_study, make_run, tmp_path):
    episodes, _, manifests = two_task_study
    # the check: ε = 0.2 on Hopper-v4; the line it checks is the v5 run of another study at the same budget
    root = tmp_path / "check"
    for seed in range(2):
        write_run(root, "Hopper-v4", "clip_0.2", seed, [5.0 + k for k in range(10)])
    check_eps, _, check = load_study(root)
    other_eps, other = beside_runs(episodes, manifests.assign(study="table1"), ["Hopper-v4"], 1000)
    assert set(other["task"]) == {"Hopper-v4"} and set(other["variant"]) == {"clip_0.2@table1", "no_clip@table1"}
    assert other.loc[other["variant"] == "clip_0.2@table1", "variant_label"].iloc[0] == \
        "Clipping, ε = 0.2: table1 (v5)"
    assert beside_runs(episodes, manifests.assign(study="table1"), ["Hopper-v4"], 2000)[1].empty  # other budget
    chosen = other[other["variant"] == "clip_0.2@table1"]
    own, checked_runs = resample_runs(check_eps, check, n_points=20), resample_runs(other_eps, chosen, n_points=20)
    assert identical_tasks(own, checked_runs) == [] and identical_tasks(checked_runs, checked_runs) == ["Hopper-v4"]
    per_run = pd.concat([own, checked_runs])
    checked = beside_style("clip_0.2")
    fig = draw_curves(per_run, anchor="clip_0.2", styles={"clip_0.2@table1": checked})
    (panel,) = data_axes(fig)
    dashed = [line for line in panel.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and to_rgb(dashed[0].get_color()) == to_rgb(variant_styles(["clip_0.2"], "clip_0.2")
                                                                        ["clip_0.2"].color)
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)
    assert "References" in [t.get_text() for t in legend.get_texts()]

    # SB3's runs of the same budget, drawn black and dashed
    for seed in range(2):
        run = tmp_path / "sb3" / "Hopper-v5" / f"seed{seed}"
        run.mkdir(parents=True)
        pd.DataFrame({"global_step": [100, 500, 1000], "episode_return": [1.0, 2.0, 3.0],
                      "episode_length": [100, 400, 500]}).to_parquet(run / "episodes.parquet")
        (run / "manifest.json").write_text(f'{{"task": "Hopper-v5", "seed": {seed}, "total_steps": 1000}}')
    sb3_eps, sb3 = load_sb3_runs(tmp_path / "sb3", 1000)
    assert len(sb3) == 2 and load_sb3_runs(tmp_path / "sb3", 5000)[1].empty and load_sb3_runs(None)[1].empty
    ours = resample_runs(episodes, manifests, n_points=20)
    both = pd.concat([ours[(ours["task"] == "Hopper-v5") & (ours["variant"] == "clip_0.2")],
                      resample_runs(sb3_eps, sb3, n_points=20)])
    fig = draw_curves(both, anchor="clip_0.2", styles={SB3_VARIANT: SB3_STYLE})
    (panel,) = data_axes(fig)
    black = [line for line in panel.get_lines() if to_rgb(line.get_color()) == (0.0, 0.0, 0.0)]
    assert len(black) == 3 and sum(line.get_linestyle() == "--" for line in black) == 1  # 2 seeds and the mean


def test_diagnostics_show_the_four_statistics_per_task(two_task_study):
    _, updates, _ = two_task_study
    updates = updates.copy()
    updates.loc[updates["variant"] == "no_clip", "clipfrac"] = np.nan  # only clipping records it
    curves = update_curves(updates, n_points=4)
    assert set(curves["stat"]) == {"approx_kl", "clipfrac", "entropy", "explained_variance"}
    one = curves[(curves["run_id"] == "Hopper-v5__clip_0.2__s0") & (curves["stat"] == "entropy")].dropna()
    assert one["value"].tolist() == [1.4, 1.3] and one["global_step"].tolist() == [500.0, 1000.0]
    fig = draw_diagnostics(curves, "clip_0.2")
    panels = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in panels[:4]] == ["approx KL", "clip fraction", "policy entropy",
                                                     "explained variance"]
    assert len(panels) == 8 and panels[0].get_yscale() == "log"
    assert [len(ax.get_lines()) for ax in panels[:4]] == [2, 1, 2, 2]  # clip fraction: clipping only
    assert {sub.get_suptitle() for sub in fig.subfigs[:2]} == {"Hopper-v5", "Swimmer-v5"}
    assert smallest_text_px(fig) >= MIN_TEXT_PX


def _normalized(scores: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    rows = [{"task": task, "variant": variant, "seed": seed, "normalized": value, "variant_label": variant}
            for variant, tasks in scores.items() for task, values in tasks.items() for seed, value in enumerate(values)]
    return pd.DataFrame(rows)


def test_the_profile_axis_opens_up_where_scores_crowd_under_one():
    crowded = _normalized({"clip_0.2": {"A": [0.97, 0.99, 0.995], "B": [0.96, 0.98, 1.0]},
                           "kl_fixed_1": {"A": [0.9, 0.95, 0.99], "B": [0.0, 0.97, 0.98]},
                           "no_clip": {"A": [0.5, 0.6, 0.7], "B": [0.2, 0.3, 0.99]}})
    scale = tau_scale(crowded)
    assert scale == pytest.approx(np.median(1 - crowded["normalized"][crowded["normalized"] < 1]))
    forward, inverse = tau_transform(scale)
    taus = np.array([-1.0, 0.0, 0.5, 0.95, 1.0, 1.2])
    np.testing.assert_allclose(inverse(forward(taus)), taus)
    assert np.all(np.diff(forward(taus)) > 0)
    # the last 5% below the best takes 4 times the 5% of the axis from 0 to 1 a linear axis gives it
    assert (forward(1.0) - forward(0.95)) / (forward(1.0) - forward(0.0)) > 0.2
    grid = default_taus(crowded, 101)
    assert grid[0] == 0.0 and grid[-1] == 1.0 and (grid >= 0.95).sum() > 20  # a linear grid: 6
    profile = performance_profile(crowded, grid, n_resamples=100)
    fig = draw_performance_profile(profile, scale, "clip_0.2")
    panels = data_axes(fig)
    assert [ax.get_title() for ax in panels] == ["Clipping", "Fixed KL, with clip_0.2", "None, with clip_0.2"]
    assert all(ax.get_xscale() == "function" for ax in panels)
    for ax in panels:  # the anchor in every family's panel
        assert max(line.get_linewidth() for line in ax.get_lines()) == ANCHOR_WIDTH
    assert f"{scale:.2g}" in fig.get_suptitle()
    assert smallest_text_px(fig) >= MIN_TEXT_PX


def test_interval_estimates_show_every_interval_and_state_their_method():
    frame = _normalized({"clip_0.2": {"A": [0.8, 0.9, 1.0], "B": [0.7, 0.9, 1.1]},
                         "kl_fixed_1": {"A": [0.5, 0.6, 0.7], "B": [0.4, 0.8, 0.9]},
                         "no_clip": {"A": [0.0, 0.1, 0.2], "B": [-0.2, 0.1, 0.3]}})
    aggregates = aggregate_metrics(frame, 500, mean_interval="t")
    improvement = improvement_vs_anchor(frame, "clip_0.2", 500)
    fig = draw_interval_estimates(aggregates, improvement, "clip_0.2", interval_method(500))
    panels = fig.axes
    assert [ax.get_title() for ax in panels] == ["IQM", "Median", "Mean", "Optimality gap", "P(X > anchor)"]
    for ax, metric in zip(panels[:4], ("iqm", "median", "mean", "optimality_gap")):
        bars = sorted(ax.patches, key=lambda p: -p.get_y())  # top row first: the table's order
        assert len(bars) == 3
        np.testing.assert_allclose([b.get_x() for b in bars], aggregates[f"{metric}_ci_low"])
        np.testing.assert_allclose([b.get_x() + b.get_width() for b in bars], aggregates[f"{metric}_ci_high"])
    assert len(panels[4].patches) == 2  # no interval of the anchor against itself
    bold = [t.get_text() for t in panels[0].get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["clip_0.2"]
    title = " ".join(fig.get_suptitle().split())  # wrapped to the figure's width
    assert "Student t interval stratified over tasks" in title
    assert "P(X > anchor): percentile bootstrap over runs stratified by task (500 resamples" in title
    assert smallest_text_px(fig) >= MIN_TEXT_PX


def test_sample_efficiency_is_coloured_by_family_and_legible(two_task_study, make_random):
    episodes, _, manifests = two_task_study
    randoms = load_random([make_random("Hopper-v5", [0.0]), make_random("Swimmer-v5", [0.0])])
    curve = sample_efficiency(episodes, manifests, normalize_scores(final_scores(episodes), randoms), n_points=10,
                              n_resamples=100)
    fig = draw_sample_efficiency(curve, "clip_0.2")
    (panel,) = data_axes(fig)
    widths = {to_rgb(line.get_color()): line.get_linewidth() for line in panel.get_lines()}
    assert widths[to_rgb(variant_styles(["clip_0.2"], "clip_0.2")["clip_0.2"].color)] == ANCHOR_WIDTH
    assert panel.get_legend() is None and smallest_text_px(fig) >= MIN_TEXT_PX


def test_cem_staircase_is_explained_from_its_records():
    """Two generations of 4 candidates on HalfCheetah (every episode recorded at the generation's end), 40 on
    Hopper: the note names HalfCheetah's generations, its candidates' mean beside the random policy, not Hopper."""
    rows, runs = [], []
    for seed in range(2):
        run = f"HalfCheetah-v5__cem__s{seed}"
        runs.append({"run_id": run, "task": "HalfCheetah-v5", "variant": "cem", "variant_label": "CEM",
                     "algorithm": "cem", "total_steps": 8000})
        for gen, step in enumerate((4000, 8000)):
            rows += [{"run_id": run, "task": "HalfCheetah-v5", "global_step": step, "episode_return": -600.0 + gen}
                     for _ in range(4)]
        run = f"Hopper-v5__cem__s{seed}"
        runs.append({"run_id": run, "task": "Hopper-v5", "variant": "cem", "variant_label": "CEM",
                     "algorithm": "cem", "total_steps": 8000})
        rows += [{"run_id": run, "task": "Hopper-v5", "global_step": 200 * g, "episode_return": 1.0}
                 for g in range(1, 41) for _ in range(4)]
    note = generation_note(pd.DataFrame(rows), pd.DataFrame(runs), pd.Series({"HalfCheetah-v5": -280.0}))
    assert note.startswith("CEM records its 4 candidates' episodes")
    assert "HalfCheetah-v5: 2 generations in 8k steps, candidates' mean -600 to -599 (random policy -280)" in note
    assert "Hopper" not in note
    assert generation_note(pd.DataFrame(rows), pd.DataFrame(runs).assign(algorithm="trpo")) == ""


def test_a_figure_with_nothing_to_draw_says_why():
    fig = draw_message("SB3 beside ours", "No Stable-Baselines3 reference run of 4,096 steps.")
    assert "No Stable-Baselines3" in " ".join(t.get_text() for t in fig.texts)
    assert smallest_text_px(fig) >= MIN_TEXT_PX
