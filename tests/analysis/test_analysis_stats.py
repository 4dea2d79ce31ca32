"""analysis.stats: IQM, the stratified percentile bootstrap, the t and Welch intervals, against exact answers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from analysis.stats import (IDENTICAL, bootstrap_ci, bootstrap_ci_columns, difference_text, interval_side, iqm, mean,
                            range_columns, same_runs, stratified_bootstrap_ci, stratified_t_interval,
                            stratified_welch, t_interval, welch_difference, welch_samples)


def test_iqm_trims_a_quarter_each_side():
    assert iqm(np.arange(1.0, 9.0)) == 4.5  # middle of 1..8 is 3,4,5,6
    assert iqm(np.array([1.0, 2.0, 3.0, 100.0])) == 2.5  # keeps 2, 3
    np.testing.assert_allclose(iqm(np.array([[1.0, 2.0, 3.0, 100.0]]), axis=-1), [2.5])


def test_stratified_bootstrap_never_mixes_tasks():
    # Task A resample sums are 0, 1, 2 (prob 1/4, 1/2, 1/4); B is always 20.
    # Pooled mean = (sumA + 20) / 4 takes only 5.0, 5.25, 5.5, each tail holding 25%,
    # so the 95% percentile interval is exactly [5.0, 5.5]. An unstratified bootstrap
    # could draw four 10s (mean 10) or four 0s.
    ci = stratified_bootstrap_ci({"A": [0.0, 1.0], "B": [10.0, 10.0]}, mean, 4000, seed=1)
    assert ci.point == 5.25
    assert (ci.low, ci.high) == (5.0, 5.5)


def _exact_bootstrap_quantiles(groups, q):
    """Enumerate every stratified resample (equally likely) and take exact quantiles."""
    per_task = []
    for values in groups:
        sums = [sum(values[i] for i in idx) for idx in itertools.product(range(len(values)), repeat=len(values))]
        per_task.append(sums)
    n = sum(len(v) for v in groups)
    dist = np.sort([sum(combo) / n for combo in itertools.product(*per_task)])
    cdf_positions = [q_ * len(dist) for q_ in q]
    return dist, [dist[int(math.floor(p))] for p in cdf_positions]


def test_stratified_bootstrap_matches_exhaustive_enumeration():
    groups = [[1.0, 2.0, 4.0], [0.0, 3.0]]
    dist, (lo, hi) = _exact_bootstrap_quantiles(groups, [0.025, 0.975])
    # 108 equally likely resamples; both quantiles fall well inside an atom
    # (checked: neighbours within 1% of probability mass have the same value).
    assert dist[int(0.015 * 108)] == lo == dist[int(0.035 * 108)]
    assert dist[int(0.965 * 108)] == hi == dist[int(0.985 * 108)]
    ci = stratified_bootstrap_ci({"a": groups[0], "b": groups[1]}, mean, 20_000, seed=3)
    assert ci.point == 2.0  # (1+2+4+0+3)/5
    assert ci.low == pytest.approx(lo, abs=1e-12)
    assert ci.high == pytest.approx(hi, abs=1e-12)
    # By hand: resample totals T = sumA + sumB. P(T=3) = 1/108 (A draws 1,1,1 and B 0,0),
    # P(T<=4) = 4/108 = 3.7% > 2.5%, so the lower bound is T=4 -> 4/5. Symmetrically
    # P(T=18) = 1/108 and P(T>=16) = 4/108, so the upper bound is 16/5.
    assert (lo, hi) == (pytest.approx(0.8), pytest.approx(3.2))


def test_single_run_task_is_held_fixed_and_all_single_gives_nan():
    # A sums 0, 1, 2; B fixed at 7: pooled means 7/3, 8/3, 3 with 25% tails.
    ci = stratified_bootstrap_ci({"A": [0.0, 1.0], "B": [7.0]}, mean, 2000, seed=0)
    assert ci.point == pytest.approx(8 / 3)
    assert ci.low == pytest.approx(7 / 3)
    assert ci.high == pytest.approx(3.0)
    lone = stratified_bootstrap_ci({"A": [2.0], "B": [4.0]}, mean, 2000, seed=0)
    assert lone.point == 3.0 and math.isnan(lone.low) and math.isnan(lone.high)


def test_bootstrap_is_reproducible_and_works_with_iqm():
    values = {"A": [0.1, 0.5, 0.9, 0.3], "B": [1.0, 2.0, 3.0, 4.0]}
    first = stratified_bootstrap_ci(values, iqm, 500, seed=7)
    again = stratified_bootstrap_ci(values, iqm, 500, seed=7)
    assert first == again
    # IQM of the 8 pooled values 0.1 0.3 0.5 0.9 1 2 3 4: middle four 0.5 0.9 1 2.
    assert first.point == pytest.approx((0.5 + 0.9 + 1.0 + 2.0) / 4)
    assert first.low <= first.point <= first.high
    one = bootstrap_ci([0.0, 1.0], mean, 2000, seed=0)
    assert (one.point, one.low, one.high) == (0.5, 0.0, 1.0)


def test_bootstrap_rejects_empty_or_nonfinite():
    with pytest.raises(ValueError):
        stratified_bootstrap_ci({"A": []}, mean)
    with pytest.raises(ValueError):
        stratified_bootstrap_ci({"A": [1.0, math.nan]}, mean)


def test_bootstrap_ci_columns_per_column_runs():
    matrix = np.array([[0.0, 5.0, np.nan], [1.0, 5.0, 4.0]])
    means, low, high = bootstrap_ci_columns(matrix, 2000, seed=0)
    np.testing.assert_array_equal(means, [0.5, 5.0, 4.0])
    # Column 0: resample means 0, 0.5, 1 with 25% tails -> [0, 1]. Column 1 constant.
    np.testing.assert_array_equal(low[:2], [0.0, 5.0])
    np.testing.assert_array_equal(high[:2], [1.0, 5.0])
    assert math.isnan(low[2]) and math.isnan(high[2])  # one run only


def test_t_interval_by_hand():
    # [1, 2, 3]: mean 2, sd 1, se 1/sqrt(3); t(0.975, 2) = 4.302653 (tables): half-width 2.484138.
    point, low, high = t_interval(np.array([1.0, 2.0, 3.0]))
    assert (point, low, high) == (2.0, pytest.approx(2 - 2.484138, abs=1e-6), pytest.approx(2 + 2.484138, abs=1e-6))
    # Wider than the 3 values' range, which is what a percentile bootstrap of 3 values gives.
    assert low < 1.0 and high > 3.0
    one = t_interval(np.array([5.0]))
    assert one.point == 5.0 and np.isnan(one.low) and np.isnan(one.high)


def test_welch_difference_by_hand():
    # Equal spreads and sizes: se = sqrt(1/3 + 1/3), Welch-Satterthwaite dof = (2/3)^2 / (2 (1/3)^2 / 2) = 4,
    # t(0.975, 4) = 2.776445 (tables), se = 0.8164966: half-width 2.266958.
    diff = welch_difference(2.0, 1.0, 3, 0.0, 1.0, 3)
    assert (diff.point, diff.dof) == (2.0, pytest.approx(4.0))
    assert (diff.low, diff.high) == (pytest.approx(2 - 2.266958, abs=1e-6), pytest.approx(2 + 2.266958, abs=1e-6))
    # Unequal: sd 2 over 4 runs against sd 1 over 2; va = 1, vb = 0.5, dof = 2.25 / (1/3 + 0.25) = 3.857143.
    assert welch_difference(1.0, 2.0, 4, 0.0, 1.0, 2).dof == pytest.approx(2.25 / (1 / 3 + 0.25))
    assert np.isnan(welch_difference(1.0, 1.0, 1, 0.0, 1.0, 3).low)


def test_stratified_t_interval_by_hand():
    # Tasks [1, 2, 3] and [10, 10, 10]: point (2 + 10) / 2 = 6; variance (1/3 + 0) / 2^2 = 1/12; dof
    # (1/3)^2 / ((1/3)^2 / 2) = 2; t(0.975, 2) = 4.302653: half-width 4.302653 * sqrt(1/12) = 1.242069.
    point, low, high, dof = stratified_t_interval([[1.0, 2.0, 3.0], [10.0, 10.0, 10.0]])
    assert (point, dof) == (6.0, pytest.approx(2.0))
    assert (low, high) == (pytest.approx(6 - 1.242069, abs=1e-6), pytest.approx(6 + 1.242069, abs=1e-6))
    # One task: the plain t interval (2 ± 2.484138, test_t_interval_by_hand).
    one = stratified_t_interval([[1.0, 2.0, 3.0]])
    assert (one.low, one.high) == (pytest.approx(2 - 2.484138, abs=1e-6), pytest.approx(2 + 2.484138, abs=1e-6))
    # A task with one run: no variance estimate, no interval; every task constant: exact, zero width.
    assert math.isnan(stratified_t_interval([[1.0, 2.0], [3.0]]).low)
    flat = stratified_t_interval([[500.0, 500.0], [7.0, 7.0]])
    assert (flat.low, flat.high, flat.dof) == (253.5, 253.5, math.inf)
    with pytest.raises(ValueError):
        stratified_t_interval([[1.0], []])


def test_stratified_welch_by_hand():
    # One stratum is Welch on the runs: [2, 1, 3] against [0, 1, -1] is Welch(2, 1, 3; 0, 1, 3): dof 4, ± 2.266958.
    one = welch_samples([2.0, 1.0, 3.0], [0.0, 1.0, -1.0])
    assert (one.point, one.dof) == (2.0, pytest.approx(4.0))
    assert (one.low, one.high) == (pytest.approx(2 - 2.266958, abs=1e-6), pytest.approx(2 + 2.266958, abs=1e-6))
    # Two tasks: x [1, 2, 3], [4, 6]; y [0, 0, 0], [1, 3]. Differences 2 and 3: point 2.5. v = s^2/n:
    # 1/3, 0, 2/2 = 1, 2/2 = 1; sum 7/3, se = sqrt(7/3) / 2; dof = (7/3)^2 / ((1/3)^2/2 + 0 + 1/1 + 1/1) = 98/37
    # = 2.648649; t(0.975, 98/37) = 3.435129 (scipy.stats.t.ppf): half-width 3.435129 * sqrt(7/12) = 2.623623.
    two = stratified_welch([[1.0, 2.0, 3.0], [4.0, 6.0]], [[0.0, 0.0, 0.0], [1.0, 3.0]])
    assert (two.point, two.dof) == (2.5, pytest.approx(98 / 37))
    assert (two.low, two.high) == (pytest.approx(2.5 - 2.623623, abs=1e-6), pytest.approx(2.5 + 2.623623, abs=1e-6))
    with pytest.raises(ValueError):
        stratified_welch([[1.0, 2.0]], [[1.0, 2.0], [3.0, 4.0]])


def test_identical_runs_are_identical_not_an_interval():
    # v4 and v5 HalfCheetah gave the same three scores: the difference is "identical", not +0.0 (-355 to +355).
    assert same_runs([68.8, 18.1, 58.7], [58.7, 68.8, 18.1])
    assert not same_runs([1.0, 2.0], [1.0, 2.0, 2.0]) and not same_runs([], [])
    assert difference_text([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == IDENTICAL
    assert difference_text([2.0, 1.0, 3.0], [0.0, 1.0, -1.0]) == "+2.0 (-0.3 to +4.3)"  # 2 ± 2.266958
    assert difference_text([1.0], [2.0, 3.0]) == "-1.5 (no interval: one run)"
    assert difference_text([5.0, 5.0], [4.0, 4.0]) == "+1.0 (no spread on either side)"


def test_interval_side():
    assert [interval_side(0.1, 2.0), interval_side(-2.0, -0.1), interval_side(-2.0, 0.1)] == \
        ["above 0", "below 0", "crosses 0"]
    assert interval_side(math.nan, math.nan) == "no interval"


def test_range_columns_is_the_seeds_range():
    # Columns: three runs (1, 5, 3): mean 3, band 1 to 5; two runs (2, NaN, 4): 3, 2 to 4; one run: no band.
    matrix = np.array([[1.0, 2.0, math.nan], [5.0, math.nan, 7.0], [3.0, 4.0, math.nan]])
    mean_, low, high = range_columns(matrix)
    np.testing.assert_allclose(mean_, [3.0, 3.0, 7.0])
    np.testing.assert_allclose(low[:2], [1.0, 2.0])
    np.testing.assert_allclose(high[:2], [5.0, 4.0])
    assert math.isnan(low[2]) and math.isnan(high[2])
    # A percentile bootstrap of 3 values (its 2.5% quantile is the lowest: P(all three draws lowest) = 1/27 > 2.5%)
    # gives the same band, called 95%.
    boot_mean, boot_low, boot_high = bootstrap_ci_columns(matrix[:, :1], 4000)
    assert (boot_low[0], boot_high[0]) == (1.0, 5.0)
    assert np.isnan(range_columns(np.full((2, 1), math.nan))[0][0])
