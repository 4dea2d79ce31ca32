"""Seed counts of a score table and the interval method they allow (analysis.seeds, analysis.stats): the t interval
below 5 seeds per (setting, task) cell, the studentized stratified bootstrap from 5, named wherever it is used, and
unequal seed counts said, never dropped."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis.seeds import first_seeds, seed_counts
from analysis.stats import (BOOTSTRAP_FROM, BOOTSTRAP_T_METHOD, INTERVAL_METHODS, T_METHOD, below_by_holm, holm,
                            interval_method_for, stratified_bootstrap_t, stratified_difference,
                            stratified_difference_test, stratified_interval, stratified_t_interval, stratified_welch)
from analysis.table1 import best_rule, normalize_scores, table1

RANDOM = pd.Series({"T1": 0.0, "T2": 0.0})
BASE = {("T1", "a"): 10.0, ("T1", "b"): 6.0, ("T2", "a"): 4.0, ("T2", "b"): 8.0}


def scores_table(seeds: dict[tuple[str, str], int]) -> pd.DataFrame:
    """Two tasks x two settings, ``seeds[(task, variant)]`` seeds each: the base score + (seed mod 3) − 1."""
    rows = [(t, v, k, BASE[(t, v)] + (k % 3) - 1.0) for (t, v), n in seeds.items() for k in range(n)]
    df = pd.DataFrame(rows, columns=["task", "variant", "seed", "score"])
    return df.assign(run_id=df["task"] + df["variant"] + df["seed"].astype(str), variant_label="label " + df["variant"],
                     status="completed")


def test_the_method_switches_at_five_seeds_and_is_named():
    assert BOOTSTRAP_FROM == 5
    assert [interval_method_for(n) for n in (2, 3, 4, 5, 10)] == [T_METHOD] * 3 + [BOOTSTRAP_T_METHOD] * 2
    four, five = seed_counts(scores_table(dict.fromkeys(BASE, 4))), seed_counts(scores_table(dict.fromkeys(BASE, 5)))
    assert (four.method, five.method) == (T_METHOD, BOOTSTRAP_T_METHOD)
    assert four.text() == ("4 seeds in each of the 4 (setting, task) cells (seeds 0–3); intervals: "
                           f"{INTERVAL_METHODS[T_METHOD]}, chosen by the smallest cell (4 seeds; "
                           "analysis.stats.BOOTSTRAP_FROM).")
    assert "studentized bootstrap stratified over tasks" in five.text() and "(5 seeds;" in five.text()
    assert "Welch's 95% interval" in best_rule(T_METHOD) and "studentized bootstrap" in best_rule(BOOTSTRAP_T_METHOD)


@pytest.mark.parametrize("n", [4, 5])
def test_table1_takes_the_method_its_smallest_cell_allows(n):
    """At 4 seeds Table 1's numbers are the t interval's and Welch's, at 5 the studentized bootstrap's, same seed."""
    scores = scores_table(dict.fromkeys(BASE, n))
    t1 = table1(scores, RANDOM, n_resamples=2000, seed=3).set_index("variant")
    norm = normalize_scores(scores, RANDOM)
    cells = {v: [g["normalized"].to_numpy(float) for _, g in norm[norm["variant"] == v].groupby("task")]
             for v in ("a", "b")}
    if n < 5:
        mean, diff = stratified_t_interval(cells["a"]), stratified_welch(cells["a"], cells["b"])
    else:
        mean = stratified_bootstrap_t(cells["a"], [1.0, 1.0], 2, 2000, seed=3)
        diff = stratified_bootstrap_t(cells["a"] + cells["b"], [1.0, 1.0, -1.0, -1.0], 2, 2000, seed=3)
    assert tuple(t1.loc["a", ["ours", "ci_low", "ci_high"]]) == (mean.point, mean.low, mean.high)
    assert t1.loc["b", "vs_best"] == "highest mean"
    assert tuple(t1.loc["a", ["diff_vs_best", "diff_ci_low", "diff_ci_high"]]) == (diff.point, diff.low, diff.high)


def test_unequal_seed_counts_are_said_and_the_smallest_cell_picks_the_method():
    """Half a grid: T1's cells have 8 seeds, T2's 3. Every seed is used (each cell's mean over the seeds it has), the
    text says how many cells have which count, and the t interval stays: the smallest cell has 3 seeds."""
    scores = scores_table({("T1", "a"): 8, ("T1", "b"): 8, ("T2", "a"): 3, ("T2", "b"): 3})
    counts = seed_counts(scores)
    assert (counts.low, counts.high, counts.common, counts.equal, counts.method) == (3, 8, 3, False, T_METHOD)
    assert counts.short() == "3 to 8 seeds"
    assert counts.text().startswith("unequal seeds: 3 to 8 per (setting, task) cell (of the 4 cells, 2 have 3, 2 have "
                                    "8; every cell has seeds 0–2), each cell's mean over the seeds it has; intervals: "
                                    "Student t interval")
    t1 = table1(scores, RANDOM).set_index("variant")
    assert t1.loc["a", "n_runs"] == 11  # nothing dropped
    # T1: a's 8 seeds 9, 10, 11, 9, 10, 11, 9, 10 over the best's mean; T2: b is best
    t1_a = np.array([9, 10, 11, 9, 10, 11, 9, 10]) / 9.875
    assert t1.loc["a", "ours"] == pytest.approx((t1_a.mean() + 4.0 / 8.0) / 2)
    assert len(first_seeds(scores, 3)) == 12


def test_a_cell_without_seed_zero_has_no_common_seeds():
    scores = scores_table(dict.fromkeys(BASE, 3))
    assert seed_counts(scores).common == 3
    assert seed_counts(scores[scores["seed"] != 0]).common == 0


def test_studentized_bootstrap_point_and_interval():
    """Two strata of 5 values each, symmetric about their means: the point is the mean of the means, the interval
    lies about it, the same seed gives the same interval, and the interval's width is of the t interval's order."""
    strata = [np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([10.0, 12.0, 14.0, 16.0, 18.0])]
    got = stratified_bootstrap_t(strata, [1.0, 1.0], 2, 4000, seed=1)
    t = stratified_t_interval(strata)
    assert got.point == (3.0 + 14.0) / 2 and got.low < 8.5 < got.high and got.dof == t.dof
    assert got == stratified_bootstrap_t(strata, [1.0, 1.0], 2, 4000, seed=1)
    assert 0.7 < (got.high - got.low) / (t.high - t.low) < 1.5
    assert stratified_interval(strata, BOOTSTRAP_T_METHOD, 4000, seed=1) == got
    assert stratified_interval(strata, T_METHOD) == t


def test_studentized_bootstrap_edge_cases():
    one = stratified_bootstrap_t([np.array([1.0]), np.array([2.0, 3.0])], [1.0, 1.0], 2)
    assert math.isnan(one.low) and math.isnan(one.high)  # a single run has no spread to resample
    flat = stratified_difference([[5.0] * 5], [[3.0] * 5], BOOTSTRAP_T_METHOD)
    assert (flat.point, flat.low, flat.high, flat.dof) == (2.0, 2.0, 2.0, math.inf)  # no spread: no doubt
    with pytest.raises(ValueError, match="interval method must be one of"):
        stratified_interval([[1.0, 2.0]], "percentile")


def test_welch_p_is_scipys_and_inverts_the_interval():
    """One stratum: the p of stratified_difference_test's t method is scipy's Welch test of the same two samples, and
    the interval at confidence 1 − p has 0 at its edge."""
    a, b = [5.1, 6.3, 4.8, 7.0], [3.9, 4.4, 5.2]
    d, p = stratified_difference_test([a], [b], T_METHOD)
    assert d == stratified_welch([a], [b])
    assert p == pytest.approx(scipy.stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-12)
    edge = stratified_welch([a], [b], confidence=1 - p)
    assert edge.low == pytest.approx(0.0, abs=1e-12)
    # two strata: the t statistic over the pooled standard error, Welch–Satterthwaite degrees of freedom
    xs, ys = [a, [1.0, 2.0, 2.5]], [b, [0.5, 1.5, 1.0]]
    d, p = stratified_difference_test(xs, ys, T_METHOD)
    se = math.sqrt(sum(np.var(x, ddof=1) / len(x) for x in xs + ys)) / 2
    assert p == pytest.approx(2 * scipy.stats.t.sf(d.point / se, d.dof), rel=1e-12)
    assert math.isnan(stratified_difference_test([[1.0]], [[2.0, 3.0]], T_METHOD)[1])  # one run has no spread
    assert stratified_difference_test([[5.0] * 3], [[3.0] * 3], T_METHOD)[1] == 0.0  # no spread: no doubt
    assert stratified_difference_test([[5.0] * 3], [[5.0] * 3], T_METHOD)[1] == 1.0


def test_bootstrap_p_comes_from_the_intervals_resamples():
    """The studentized bootstrap's p and interval share their resamples: the interval is the one
    stratified_difference gives, 0 lies outside it exactly where the p is below 5% (far from the edge here), the p
    is never below 2 / (1 + resamples), and the same seed gives the same p."""
    rng = np.random.default_rng(4)
    far = ([rng.normal(3.0, 1.0, 6), rng.normal(2.0, 1.0, 6)], [rng.normal(0.0, 1.0, 6), rng.normal(0.0, 1.0, 6)])
    near = ([rng.normal(0.1, 1.0, 6), rng.normal(0.0, 1.0, 6)], [rng.normal(0.0, 1.0, 6), rng.normal(0.0, 1.0, 6)])
    for xs, ys, apart in (far + (True,), near + (False,)):
        d, p = stratified_difference_test(xs, ys, BOOTSTRAP_T_METHOD, 2000, seed=7)
        assert d == stratified_difference(xs, ys, BOOTSTRAP_T_METHOD, 2000, seed=7)
        assert (d.low > 0 or d.high < 0) == apart and (p < 0.05) == apart
        assert p >= 2 / 2001 and (d, p) == stratified_difference_test(xs, ys, BOOTSTRAP_T_METHOD, 2000, seed=7)
    _, p = stratified_difference_test(*far, BOOTSTRAP_T_METHOD, 2000, seed=7)
    assert (p * 2001 / 2) == pytest.approx(round(p * 2001 / 2)) and p < 0.01  # (1 + a count) · 2 / 2001


def test_holm_by_hand():
    """Holm's step-down test at 5%: sorted p against 0.05/m, 0.05/(m − 1), …, stopping at the first that fails."""
    # m = 4: 0.005 <= 0.0125, 0.01 <= 0.0167, 0.03 > 0.025: stop, so 0.04 stays too
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == [True, False, False, True]
    # m = 3: 0.01 <= 0.0167, 0.02 <= 0.025, 0.03 <= 0.05: all three, where Bonferroni (0.0167) keeps only 0.01
    assert holm([0.03, 0.01, 0.02]).tolist() == [True, True, True]
    # a NaN is never rejected and counts in m: 0.001 <= 0.0167, 0.02 <= 0.025
    assert holm([math.nan, 0.001, 0.02]).tolist() == [False, True, True]
    assert holm([0.02, 0.02], family_level=0.04).tolist() == [True, True]  # ties: 0.02 <= 0.04/2, then <= 0.04
    assert holm([0.06]).tolist() == [False] and holm([]).tolist() == []


def test_below_by_holm_by_hand():
    """One setting ([0, 1, 2]) against four others of one task each: Welch's p (scipy's) 0.0080 against A, 0.0213
    against B, 0.0316 against D, all three above it; C lies below it, so its p is 1 whatever the test says (0.29).
    Holm over m = 4: 0.0080 <= 0.05/4, then 0.0213 > 0.05/3: stop. Below A only, where single tests at 5% would
    name A, B and D."""
    own = [0.0, 1.0, 2.0]
    others = {"A": [4.0, 5.0, 6.0], "B": [3.0, 4.0, 5.0], "C": [-1.0, 0.0, 1.0], "D": [3.0, 3.5, 4.0]}
    below, p = below_by_holm({name: ([own], [runs]) for name, runs in others.items()})
    assert below == ["A"]
    assert p["C"] == 1.0
    for name in "ABD":
        assert p[name] == pytest.approx(scipy.stats.ttest_ind(own, others[name], equal_var=False).pvalue, rel=1e-12)
    assert [round(p[name], 4) for name in "ABD"] == [0.0080, 0.0213, 0.0316]
    # a difference smaller than the margin is not called one: A lies 4 above
    assert below_by_holm({"A": ([own], [others["A"]])}, margin=4.5)[0] == []
    assert below_by_holm({"A": ([own], [others["A"]])}, margin=4.0)[0] == ["A"]
    # the bootstrap draws at least 4 * 4 / 0.05 = 320 resamples, not the 10 asked (whose p could not go under 2 / 11):
    # A, B and D lie above in every resample, so p = 2 / 321 = 0.0062 each, under Holm's 0.0125, 0.0167 and 0.025
    below, p = below_by_holm({name: ([own] * 2, [runs] * 2) for name, runs in others.items()}, BOOTSTRAP_T_METHOD,
                             n_resamples=10)
    assert below == ["A", "B", "D"]
    assert [p[name] for name in "ABCD"] == [2 / 321, 2 / 321, 1.0, 2 / 321]
