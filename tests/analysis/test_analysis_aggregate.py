"""analysis.aggregate: rliable's aggregate metrics on tiny examples worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis.aggregate import (
    aggregate_metrics,
    default_taus,
    improvement_vs_anchor,
    performance_profile,
    plot_performance_profile,
    probability_of_improvement,
)
from analysis.stats import mean, stratified_bootstrap, stratified_bootstrap_ci


def _frame(variant: str, by_task: dict[str, list[float]]) -> pd.DataFrame:
    """Long normalised-score table: one row per (task, seed)."""
    rows = [
        {"task": task, "variant": variant, "seed": seed, "normalized": value}
        for task, values in by_task.items()
        for seed, value in enumerate(values)
    ]
    return pd.DataFrame(rows)


# Three tasks x two runs. Pooled, sorted: 0, 0.4, 0.6, 0.9, 1.0, 2.3.
EVEN = {"A": [0.0, 0.4], "B": [0.6, 1.0], "C": [0.9, 2.3]}


def test_point_metrics_even_count():
    """By hand, 6 runs:
    IQM drops floor(6/4) = 1 run each end: (0.4 + 0.6 + 0.9 + 1.0) / 4 = 0.725.
    median = median of the task means 0.2, 0.8, 1.6 = 0.8 (the pooled median would be 0.75).
    mean = 5.2 / 6.
    optimality gap = mean of max(0, 1 - x) = (1 + 0.6 + 0.4 + 0 + 0.1 + 0) / 6 = 0.35:
    the 2.3 counts as 0, it does not offset the others (1 - mean would be 0.1333).
    """
    row = aggregate_metrics(_frame("x", EVEN), n_resamples=200).iloc[0]
    assert row["iqm"] == pytest.approx(0.725)
    assert row["median"] == pytest.approx(0.8)
    assert row["mean"] == pytest.approx(5.2 / 6)
    assert row["optimality_gap"] == pytest.approx(0.35)
    assert (row["n_tasks"], row["n_runs"], row["variant_label"]) == (3, 6, "x")


def test_point_metrics_odd_count():
    """9 runs 1..8 and 100: IQM drops floor(9/4) = 2 each end -> mean(3, 4, 5, 6, 7) = 5.
    Task means 2, 5, 115/3 -> median 5. Every score is above 1, so the optimality gap is 0.
    """
    row = aggregate_metrics(_frame("x", {"A": [1, 2, 3], "B": [4, 5, 6], "C": [7, 8, 100]}), 200).iloc[0]
    assert row["iqm"] == pytest.approx(5.0)
    assert row["median"] == pytest.approx(5.0)
    assert row["mean"] == pytest.approx(136 / 9)
    assert row["optimality_gap"] == 0.0
    assert row["optimality_gap_ci_low"] == 0.0 and row["optimality_gap_ci_high"] == 0.0


def test_median_interval_by_hand():
    """EVEN: task A's resampled mean (0 to 0.4) is always the lowest, so median = min(B, C).
    B's resampled mean is 0.6 with probability 1/4 -> lower bound 0.6.
    The median is 1.0 when B = 1.0 (1/4) and C >= 1.6 (3/4): 3/16 > 2.5% -> upper bound 1.0.
    """
    row = aggregate_metrics(_frame("x", EVEN), n_resamples=4000, seed=2).iloc[0]
    assert (row["median_ci_low"], row["median_ci_high"]) == (pytest.approx(0.6), pytest.approx(1.0))


def test_stratified_interval_is_narrower_than_unstratified():
    """A = [0, 0.2], B = [1.0, 1.2]. Stratified: each task keeps two runs, so the mean is
    (sum_A + sum_B) / 4 with sum_A in {0, .2, .4}, sum_B in {2, 2.2, 2.4}: between 0.5 and
    0.7, each extreme with probability 1/16 = 6.25% > 2.5% -> interval exactly [0.5, 0.7].
    An unstratified bootstrap draws all four runs from A with probability 1/16, giving a
    mean <= 0.2, so its lower bound falls below 0.5.
    """
    frame = _frame("x", {"A": [0.0, 0.2], "B": [1.0, 1.2]})
    row = aggregate_metrics(frame, n_resamples=4000, seed=0).iloc[0]
    assert row["mean"] == pytest.approx(0.6)
    assert (row["mean_ci_low"], row["mean_ci_high"]) == (pytest.approx(0.5), pytest.approx(0.7))
    # IQM of 4 runs = mean of the middle two = (max of A's resample + min of B's) / 2:
    # (0 + 1.0) / 2 = 0.5 with probability 1/4 * 3/4 = 3/16, (0.2 + 1.2) / 2 = 0.7 likewise.
    assert (row["iqm_ci_low"], row["iqm_ci_high"]) == (pytest.approx(0.5), pytest.approx(0.7))
    pooled = frame["normalized"].to_numpy()
    unstratified = scipy.stats.bootstrap(
        (pooled,), np.mean, n_resamples=4000, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert unstratified.low < 0.5 - 0.1 and unstratified.high > 0.7 + 0.1


def test_reproducible_and_mean_interval_matches_table1():
    """Same seed -> same table; the mean's interval equals Table 1's function exactly,
    because the resample indices are drawn in the same order from the same seed."""
    rng = np.random.default_rng(11)
    frame = pd.concat(
        [_frame(v, {t: list(rng.normal(size=3)) for t in ("A", "B", "C")}) for v in ("x", "y")],
        ignore_index=True,
    )
    first = aggregate_metrics(frame, n_resamples=1000, seed=5)
    pd.testing.assert_frame_equal(first, aggregate_metrics(frame, n_resamples=1000, seed=5))
    other = aggregate_metrics(frame, n_resamples=1000, seed=6)
    assert not np.allclose(first["iqm_ci_low"], other["iqm_ci_low"])
    for _, row in first.iterrows():
        runs = frame[frame["variant"] == row["variant"]]
        by_task = {t: g["normalized"].to_numpy() for t, g in runs.groupby("task")}
        ci = stratified_bootstrap_ci(by_task, mean, 1000, seed=5)
        assert row["mean"] == pytest.approx(ci.point, abs=1e-12)
        assert row["mean_ci_low"] == pytest.approx(ci.low, abs=1e-12)
        assert row["mean_ci_high"] == pytest.approx(ci.high, abs=1e-12)


def test_single_run_tasks():
    """A task with one run is held fixed; with one run everywhere there is no interval."""
    lone = aggregate_metrics(_frame("x", {"A": [0.3], "B": [0.5]}), n_resamples=100).iloc[0]
    assert lone["mean"] == pytest.approx(0.4) and math.isnan(lone["iqm_ci_low"])
    # A resampled sums 0, 1, 2 (1/4, 1/2, 1/4); B fixed at 7: means 7/3, 8/3, 3.
    mixed = aggregate_metrics(_frame("x", {"A": [0.0, 1.0], "B": [7.0]}), n_resamples=2000).iloc[0]
    assert (mixed["mean_ci_low"], mixed["mean_ci_high"]) == (pytest.approx(7 / 3), pytest.approx(3.0))


def test_rejects_missing_columns_and_nan():
    with pytest.raises(KeyError, match="normalized"):
        aggregate_metrics(_frame("x", EVEN).drop(columns="normalized"))
    bad = _frame("x", {"A": [0.0, math.nan]})
    with pytest.raises(ValueError, match="A / x / seed 1"):
        aggregate_metrics(bad)


def test_performance_profile_strict_inequality():
    """EVEN at tau = 1.0: only 2.3 is strictly above (1.0 itself is not) -> 1/6.
    tau = 0: five of six (0.0 is not above 0). tau = 2.3: none.
    Band at tau = 1.0: only task C can contribute; its resample holds 0, 1 or 2 copies of
    2.3 (1/4, 1/2, 1/4) -> fraction 0, 1/6, 2/6 -> band [0, 1/3].
    """
    profile = performance_profile(_frame("x", EVEN), [0.0, 1.0, 2.3], n_resamples=2000)
    assert profile["fraction"].tolist() == pytest.approx([5 / 6, 1 / 6, 0.0])
    at_one = profile[profile["tau"] == 1.0].iloc[0]
    assert (at_one["ci_low"], at_one["ci_high"]) == (0.0, pytest.approx(1 / 3))
    at_top = profile[profile["tau"] == 2.3].iloc[0]
    assert (at_top["ci_low"], at_top["ci_high"]) == (0.0, 0.0)
    taus = default_taus(_frame("x", EVEN), n=24)
    assert (taus[0], taus[-1], len(taus)) == (0.0, 2.3, 24)


def test_probability_of_improvement_with_ties():
    """Task A: X = [1, 2, 3], Y = [2, 2, 0]. Pairs won by X (ties 1/2):
    x=1: beats 0 -> 1; x=2: two ties + beats 0 -> 2; x=3: beats all -> 3. 6/9 = 2/3.
    Task B: X = [0, 0, 0], Y = [0, 1, 1]: each x ties one y -> 3 * 0.5 / 9 = 1/6.
    Average over tasks: (2/3 + 1/6) / 2 = 5/12.
    """
    frame = pd.concat(
        [_frame("x", {"A": [1, 2, 3], "B": [0, 0, 0]}), _frame("y", {"A": [2, 2, 0], "B": [0, 1, 1]})],
        ignore_index=True,
    )
    ci = probability_of_improvement(frame, "x", "y", n_resamples=500)
    assert ci.point == pytest.approx(5 / 12)
    u_a = scipy.stats.mannwhitneyu([1, 2, 3], [2, 2, 0], alternative="greater").statistic / 9
    assert u_a == pytest.approx(2 / 3)  # same as scipy's U statistic, normalised
    back = probability_of_improvement(frame, "y", "x", n_resamples=500)
    assert back.point == pytest.approx(1 - 5 / 12)  # P(X>Y) + P(Y>X) = 1 with ties halved


def test_probability_of_improvement_interval_by_hand():
    """Task A: X = [5, 6] always beats Y = [1, 2] -> 1 in every resample.
    Task B: X = Y = [0, 1]. If X's resample has a ones and Y's b ones,
    P_B = (a(2 - b) + (ab + (2 - a)(2 - b)) / 2) / 4: 0 when a = 0, b = 2 (prob 1/16),
    1 when a = 2, b = 0 (1/16), 1/2 on the original data.
    Overall (1 + P_B) / 2: point 0.75, interval [0.5, 1.0].
    """
    frame = pd.concat(
        [_frame("x", {"A": [5, 6], "B": [0, 1]}), _frame("y", {"A": [1, 2], "B": [0, 1]})], ignore_index=True
    )
    ci = probability_of_improvement(frame, "x", "y", n_resamples=4000, seed=3)
    assert (ci.point, ci.low, ci.high) == (0.75, 0.5, 1.0)
    assert ci == probability_of_improvement(frame, "x", "y", n_resamples=4000, seed=3)


def test_improvement_vs_anchor_table():
    """Anchor a: A = [0, 1]. b = [2, 3] beats it always -> 1. c = [0, 1] ties it -> 1/2."""
    frame = pd.concat(
        [_frame("a", {"A": [0, 1]}), _frame("b", {"A": [2, 3]}), _frame("c", {"A": [0, 1]})], ignore_index=True
    )
    table = improvement_vs_anchor(frame, "a", n_resamples=500)
    assert list(table.columns) == ["variant", "anchor", "p_improvement", "ci_low", "ci_high"]
    assert table["variant"].tolist() == ["b", "c"] and set(table["anchor"]) == {"a"}
    assert table["p_improvement"].tolist() == [1.0, 0.5]
    assert (table.loc[0, "ci_low"], table.loc[0, "ci_high"]) == (1.0, 1.0)
    with pytest.raises(ValueError, match="anchor variant 'z'"):
        improvement_vs_anchor(frame, "z")
    with pytest.raises(ValueError, match="share no task"):
        probability_of_improvement(pd.concat([frame, _frame("d", {"B": [1, 2]})]), "d", "a")


def test_stratified_bootstrap_multi_output_and_batches():
    """Several values per resample, evaluated in several batches, and 2-D strata.
    A = [0, 1], B = [10, 10]: sum over runs of each row; A's resample sum is 0, 1 or 2."""
    point, low, high = stratified_bootstrap(
        [np.array([[0.0, 5.0], [1.0, 5.0]]), np.array([[10.0, 1.0], [10.0, 1.0]])],
        lambda parts: np.concatenate(parts, axis=1).sum(axis=1),
        n_resamples=3000,
        seed=0,
        cost_per_value=200_000,  # 8 values x 200k -> batches of 2 resamples
    )
    np.testing.assert_allclose(point, [21.0, 12.0])
    np.testing.assert_allclose(low, [20.0, 12.0])
    np.testing.assert_allclose(high, [22.0, 12.0])
    with pytest.raises(ValueError):
        stratified_bootstrap([np.array([])], lambda parts: parts[0].sum(axis=1))


def test_plot_performance_profile(tmp_path):
    frame = pd.concat([_frame("x", EVEN), _frame("y", {"A": [0.1, 0.2], "B": [0.3, 0.9], "C": [1.1, 1.5]})])
    profile = performance_profile(frame, default_taus(frame, 11), n_resamples=200)
    path = plot_performance_profile(profile, tmp_path / "fig" / "profile.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mean_interval_t_is_table1s_and_the_order_is_the_mean():
    # x: A [0, 1], B [2, 10] -> mean of task means (0.5 + 6) / 2 = 3.25 (= the pooled mean, 2 runs each);
    # v = s^2/n = 0.5/2 = 0.25 and 32/2 = 16; se = sqrt(16.25) / 2; dof = 16.25^2 / (0.25^2 + 16^2) = 1.031242;
    # t(0.975, 1.031242) = 11.831682 (scipy.stats.t.ppf): half-width 23.847518.
    # y: A [1.6, 1.7], B [1.8, 1.9]: IQM 1.75 above x's (1 + 2) / 2 = 1.5, mean 1.75 below x's: sorted by the
    # mean, Table 1's order, x first.
    frame = pd.concat([_frame("x", {"A": [0.0, 1.0], "B": [2.0, 10.0]}),
                       _frame("y", {"A": [1.6, 1.7], "B": [1.8, 1.9]})], ignore_index=True)
    table = aggregate_metrics(frame, n_resamples=200, mean_interval="t")
    assert table["variant"].tolist() == ["x", "y"] and table.loc[1, "iqm"] > table.loc[0, "iqm"]
    x = table.iloc[0]
    assert (x["mean"], x["mean_ci_low"], x["mean_ci_high"]) == (
        pytest.approx(3.25), pytest.approx(3.25 - 23.847518, abs=1e-5), pytest.approx(3.25 + 23.847518, abs=1e-5))
    with pytest.raises(ValueError, match="mean_interval"):
        aggregate_metrics(frame, mean_interval="range")
