"""Seed counts of a score table and the interval method they allow (analysis.seeds, analysis.stats): the t interval
below 5 seeds per (setting, task) cell, the studentized stratified bootstrap from 5, named wherever it is used, and
unequal seed counts said, never dropped."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.seeds import first_seeds, seed_counts
from analysis.stats import (BOOTSTRAP_FROM, BOOTSTRAP_T_METHOD, INTERVAL_METHODS, T_METHOD, interval_method_for,
                            stratified_bootstrap_t, stratified_difference, stratified_interval, stratified_t_interval,
                            stratified_welch)
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
    assert t1.loc["b", "vs_best"] == "best"
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
