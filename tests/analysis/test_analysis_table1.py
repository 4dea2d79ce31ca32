"""analysis.table1 on a 2 tasks x 2 settings x 2 seeds example normalised on paper.

Scores (random: T1 = 0, T2 = -10):
    T1: a = 10, 20 (mean 15, best)   b = 4, 6  (mean 5)
    T2: a = 0, 10  (mean 5)          b = 30, 50 (mean 40, best)
Normalised (score - random) / (best - random):
    T1 (scale 15): a = 2/3, 4/3      b = 4/15, 6/15
    T2 (scale 50): a = 0.2, 0.4      b = 0.8, 1.2
Table 1: a = (2/3 + 4/3 + 0.2 + 0.4) / 4 = 0.65;  b = (10/15 + 2) / 4 = 2/3.
t interval stratified over tasks (95%): v = s^2 / n per task, s^2 over the 2 seeds (ddof 1):
    a: T1 s^2 = 2/9, v = 1/9; T2 s^2 = 0.02, v = 0.01; se = sqrt(1/9 + 0.01) / 2;
       dof = (1/9 + 0.01)^2 / ((1/9)^2 + 0.01^2) = 1.178554; t(0.975, 1.178554) = 8.949547 (scipy):
       half-width 1.557267 -> -0.907267 to 2.207267
    b: T1 v = 1/225; T2 v = 0.04; dof = 1.219512, t = 8.394019: half-width 0.884807 -> -0.218141 to 1.551474
a − b (b is best): T1 1 − 1/3, T2 0.3 − 1: (2/3 − 0.7) / 2 = −1/60; v: 1/9, 0.01, 1/225, 0.04;
    dof = 1.948653, t = 4.413147: half-width 0.897822 -> −0.914489 to 0.881155: not distinguishable.
(The old percentile bootstrap gave 13/30 to 13/15 for a: the 2 seeds' extremes, about a third as wide.)
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis.table1 import (
    final_entropy,
    load_published_table1,
    normalize_scores,
    paper_rows,
    per_task_table,
    paper_checks,
    spearman,
    rank_agreement,
    table1,
)

RANDOM = pd.Series({"T1": 0.0, "T2": -10.0})


@pytest.fixture
def scores() -> pd.DataFrame:
    rows = [
        ("T1", "a", 0, 10.0), ("T1", "a", 1, 20.0), ("T1", "b", 0, 4.0), ("T1", "b", 1, 6.0),
        ("T2", "a", 0, 0.0), ("T2", "a", 1, 10.0), ("T2", "b", 0, 30.0), ("T2", "b", 1, 50.0),
    ]
    df = pd.DataFrame(rows, columns=["task", "variant", "seed", "score"])
    df["run_id"] = df["task"] + df["variant"] + df["seed"].astype(str)
    df["variant_label"] = "label " + df["variant"]
    df["status"] = "completed"
    df.loc[(df["task"] == "T2") & (df["variant"] == "b") & (df["seed"] == 1), "status"] = "diverged"
    return df


@pytest.fixture
def published(tmp_path) -> pd.DataFrame:
    path = tmp_path / "table1.csv"
    path.write_text("setting,param,value\nno_clip,,-0.5\nclipping,epsilon=0.2,0.9\n")
    return load_published_table1(path)


def test_normalize_scores_by_hand(scores):
    norm = normalize_scores(scores, RANDOM).set_index("run_id")
    assert norm.loc["T1a0", "normalized"] == pytest.approx(2 / 3)
    assert norm.loc["T1b1", "normalized"] == pytest.approx(6 / 15)
    assert norm.loc["T2a0", "normalized"] == pytest.approx(0.2)
    assert norm.loc["T2b1", "normalized"] == pytest.approx(1.2)
    assert norm.loc["T1a0", "best_variant"] == "a"
    assert norm.loc["T2a0", "best_variant"] == "b"
    assert norm.loc["T2a0", "best_score"] == 40.0
    assert norm.loc["T2a0", "random_score"] == -10.0


def test_table1_values_cis_ranks_and_published(scores, published):
    manifests = pd.DataFrame(
        {"variant": ["a", "b"], "paper_setting": ["clipping", "no_clip"], "paper_param": ["epsilon=0.2", ""]}
    )
    t = table1(scores, RANDOM, paper_rows(manifests), published, n_resamples=4000, seed=0)
    assert t["variant"].tolist() == ["b", "a"]  # sorted best first
    rows = t.set_index("variant")
    assert rows.loc["a", "ours"] == pytest.approx(0.65)
    assert rows.loc["b", "ours"] == pytest.approx(2 / 3)
    assert (rows.loc["a", "ci_low"], rows.loc["a", "ci_high"]) == (pytest.approx(-0.907267, abs=1e-6),
                                                                   pytest.approx(2.207267, abs=1e-6))
    assert (rows.loc["b", "ci_low"], rows.loc["b", "ci_high"]) == (pytest.approx(-0.218141, abs=1e-6),
                                                                   pytest.approx(1.551474, abs=1e-6))
    assert rows.loc["b", "vs_best"] == "highest mean" and math.isnan(rows.loc["b", "diff_vs_best"])
    assert (rows.loc["a", "diff_vs_best"], rows.loc["a", "diff_ci_low"], rows.loc["a", "diff_ci_high"]) == (
        pytest.approx(-1 / 60), pytest.approx(-0.914489, abs=1e-6), pytest.approx(0.881155, abs=1e-6))
    assert rows.loc["a", "vs_best"] == "not distinguishable"
    assert rows.loc["a", "n_not_above_random"] == 0
    assert rows.loc["a", "n_runs"] == 4 and rows.loc["a", "n_diverged"] == 0
    assert rows.loc["b", "n_diverged"] == 1
    assert rows.loc["a", "published"] == 0.9  # clipping row of the test CSV
    assert rows.loc["b", "published"] == -0.5  # empty-param row of the test CSV
    assert (rows.loc["b", "rank_ours"], rows.loc["a", "rank_ours"]) == (1.0, 2.0)
    assert (rows.loc["a", "rank_published"], rows.loc["b", "rank_published"]) == (1.0, 2.0)
    assert rows.loc["a", "variant_label"] == "label a"
    agreement = rank_agreement(t)
    assert agreement["n"] == 2 and math.isnan(agreement["rho"])  # too few variants


def test_table1_below_the_best_by_welch_not_overlap():
    # Random 0, one task. best: 10, 11, 12 (mean 11, = 1); c: 7, 8, 9 -> 7/11, 8/11, 9/11; z: 0, 0, 1.
    # c − best: (8 − 11) / 11 = −3/11; v = (1/121)/3 twice: se = sqrt(2/363), dof 4, t(0.975, 4) = 2.776445:
    # half-width 0.206087 -> −0.478814 to −0.066640: wholly below 0 and at least 0.02 lower, "below" (its own
    # t interval, 0.727 ± 0.226, overlaps the best one's, 1 ± 0.226: overlap would have said "within noise").
    # z: two runs at the random policy's score (normalised 0), counted in n_not_above_random.
    scores = _cells({("best", "T"): [10, 11, 12], ("c", "T"): [7, 8, 9], ("z", "T"): [0, 0, 1]})
    scores["variant_label"], scores["status"], scores["run_id"] = scores["variant"], "completed", range(9)
    rows = table1(scores, pd.Series({"T": 0.0})).set_index("variant")
    assert (rows.loc["c", "diff_ci_low"], rows.loc["c", "diff_ci_high"]) == (pytest.approx(-0.478814, abs=1e-6),
                                                                             pytest.approx(-0.066640, abs=1e-6))
    assert rows.loc["c", "vs_best"] == "below" and rows.loc["c", "ci_high"] > rows.loc["best", "ci_low"]
    assert rows.loc["z", "n_not_above_random"] == 2 and rows.loc["best", "n_not_above_random"] == 0
    from analysis.table1 import clearly_below
    assert clearly_below(rows.reset_index()) == ("best", [], ["c", "z"])


def test_table1_of_one_setting_is_not_normalised_against_itself(scores):
    # A check with one setting (table1_v4: ε = 0.2 alone) would score 1.00 by construction beside the paper's 0.82.
    t = table1(scores[scores["variant"] == "a"], RANDOM)
    assert len(t) == 1 and t[["ours", "ci_low", "ci_high", "rank_ours"]].isna().all(axis=None)
    assert t.loc[0, "vs_best"] == "" and t.loc[0, "n_runs"] == 4


def test_table1_without_paper_rows_has_nan_published(scores):
    t = table1(scores, RANDOM, n_resamples=200)
    assert t["published"].isna().all() and t["rank_published"].isna().all()


def test_per_task_table(scores):
    wide = per_task_table(normalize_scores(scores, RANDOM)).set_index("task")
    assert wide.loc["T1", "a"] == pytest.approx(1.0)  # (2/3 + 4/3) / 2
    assert wide.loc["T1", "b"] == pytest.approx(1 / 3)  # (4/15 + 6/15) / 2
    assert wide.loc["T2", "a"] == pytest.approx(0.3)
    assert wide.loc["T2", "b"] == pytest.approx(1.0)
    assert wide.loc["T2", "best_variant"] == "b" and wide.loc["T2", "random_score"] == -10.0


def test_rank_agreement_spearman_by_hand():
    t = pd.DataFrame(
        {
            "variant": list("wxyzv"),
            "ours": [3.0, 2.0, 1.0, 0.5, 9.0],
            "published": [0.9, 0.1, 0.5, 0.2, math.nan],
        }
    )
    # Ascending ranks: ours 4,3,2,1; published 4,1,3,2; d = 0,2,-1,-1; sum d^2 = 6.
    # rho = 1 - 6*6 / (4*(16-1)) = 0.4. p: of the 24 orders of 4 ranks, those with rho >= 0.4 (sum d^2 <= 6):
    # 1 with sum 0, 3 adjacent swaps with 2, 1 double swap (2,1,4,3) with 4, 4 rotations of three neighbours with 6
    # (2,3,1,4; 3,1,2,4; 1,3,4,2; 1,4,2,3) -> 9 of 24, exact (scipy enumerates all 24).
    result = rank_agreement(t)
    assert result["n"] == 4 and result["variants"] == ["w", "x", "y", "z"]
    assert result["rho"] == pytest.approx(0.4)
    assert result["p"] == pytest.approx(9 / 24)
    orders = [np.array(order) for order in itertools.permutations(range(4))]
    assert sum(1 - 6 * ((order - np.arange(4)) ** 2).sum() / 60 >= 0.4 - 1e-12 for order in orders) == 9


def test_normalisation_errors(scores):
    with pytest.raises(KeyError, match="T2"):
        normalize_scores(scores, pd.Series({"T1": 0.0}))
    with pytest.raises(ValueError, match="cannot normalise"):
        normalize_scores(scores, pd.Series({"T1": 15.0, "T2": 0.0}))  # T1 best mean is 15


def test_paper_rows_conflict_is_an_error():
    manifests = pd.DataFrame(
        {"variant": ["a", "a"], "paper_setting": ["clipping", "clipping"], "paper_param": ["epsilon=0.1", "epsilon=0.2"]}
    )
    with pytest.raises(ValueError, match="different paper_row"):
        paper_rows(manifests)


def test_real_published_table_reads_empty_param():
    from pathlib import Path

    table = load_published_table1(Path(__file__).resolve().parents[2] / "reference" / "ppo2017_table1.csv")
    no_clip = table[table["setting"] == "no_clipping_or_penalty"]
    assert no_clip["param"].tolist() == [""]
    assert table["value"].dtype == float


def _cells(values: dict) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "task": t, "seed": k, "score": s}
                         for (v, t), seeds in values.items() for k, s in enumerate(seeds)])


def test_spearman_by_hand_and_as_scipy():
    # Reference 1 < 2 = 2 < 4 ranks 1, 2.5, 2.5, 4; the row 3, 1, 2, 4 ranks 3, 1, 2, 4. Centred: (-1.5, 0, 0, 1.5)
    # and (0.5, -1.5, -0.5, 1.5): products -0.75 + 0 + 0 + 2.25 = 1.5; sums of squares 4.5 and 5 -> 1.5 / sqrt(22.5).
    reference = np.array([1.0, 2.0, 2.0, 4.0])
    rows = np.array([[3.0, 1.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    rho = spearman(rows, reference[None])
    assert rho[0] == pytest.approx(1.5 / np.sqrt(22.5), abs=1e-15)
    assert rho[2] == pytest.approx(-rho[1], abs=1e-15)
    random_rows = np.random.default_rng(0).random((200, 11))
    expected = [scipy.stats.spearmanr(row, random_rows[0]).statistic for row in random_rows]
    np.testing.assert_allclose(spearman(random_rows, random_rows[:1]), expected, rtol=0, atol=1e-14)


def test_paper_checks_by_hand_without_seed_noise():
    # Random scores 0. T1: best clip_0.2 (10) -> 0.1, 1, 0.5; T2: best kl (6) -> 1/3, 2/3, 1.
    # Table: no_clip 0.2167, clip_0.2 0.8333, kl 0.75 -> ranks clip 1, kl 2, no_clip 3.
    # Paper: kl 0.9 > clip 0.82 > no_clip -0.39 -> ranks kl 1, clip 2, no_clip 3; d = (-1, 1, 0), rho = 1 - 12/24.
    scores = _cells({("no_clip", "T1"): [1] * 3, ("clip_0.2", "T1"): [10] * 3, ("kl", "T1"): [5] * 3,
                     ("no_clip", "T2"): [2] * 3, ("clip_0.2", "T2"): [4] * 3, ("kl", "T2"): [6] * 3})
    published = pd.Series({"no_clip": -0.39, "clip_0.2": 0.82, "kl": 0.9})
    checks = paper_checks(scores, pd.Series({"T1": 0.0, "T2": 0.0}), published, n_resamples=200)
    assert checks["rho"] == pytest.approx(0.5) and checks["rho_range"] == pytest.approx([0.5, 0.5])
    assert checks["no_clip_last"] and checks["no_clip_rank"] == 3 and checks["no_clip_last_fraction"] == 1.0
    assert checks["best_variant"] == "clip_0.2" and checks["best_ci"] == pytest.approx([5 / 6, 5 / 6])
    assert checks["anchor_within_best_ci"] and checks["anchor_best_fraction"] == 1.0
    assert checks["anchor_best_count"] == 200 and checks["anchor_vs_best"] == "best"
    assert [m["variant"] for m in checks["largest_rank_moves"]][:2] == ["kl", "clip_0.2"]
    assert checks["largest_rank_moves"][0] == {"variant": "kl", "rank_ours": 2, "rank_paper": 1.0}


def test_the_papers_best_with_the_highest_mean_is_best_only_above_every_other_setting():
    """One task, random 0. ε = 0.2 (20, 21, 22) has the highest mean; against kl (13.5, 14, 14.5) Welch's p is 0.0018,
    against no_clip (9, 10, 11) 0.0002, against clip_0.1 (19, 20, 21) 0.29: Holm over 3 finds it above kl and no_clip
    (0.0002 < 0.05/3, 0.0018 < 0.05/2) but not clip_0.1 (0.29 > 0.05), so it is not distinguishable from the best,
    though best by mean. With clip_0.1 at (12, 13, 14) (p 0.0006), above all three: best."""
    published = pd.Series({"no_clip": -0.39, "clip_0.2": 0.82, "kl": 0.71, "clip_0.1": 0.76})
    for clip_01, above, side in [([19.0, 20.0, 21.0], ["kl", "no_clip"], "not distinguishable"),
                                 ([12.0, 13.0, 14.0], ["clip_0.1", "kl", "no_clip"], "best")]:
        scores = _cells({("clip_0.2", "T1"): [20.0, 21.0, 22.0], ("kl", "T1"): [13.5, 14.0, 14.5],
                         ("clip_0.1", "T1"): clip_01, ("no_clip", "T1"): [9.0, 10.0, 11.0]})
        checks = paper_checks(scores, pd.Series({"T1": 0.0}), published, n_resamples=50)
        assert checks["best_variant"] == "clip_0.2" and checks["anchor_below"] == []
        assert sorted(checks["anchor_above"]) == above and checks["anchor_vs_best"] == side


@pytest.mark.parametrize("best_runs, expected", [([13.5, 14.0, 14.5], []), ([20.0, 21.0, 22.0], ["kl"])])
def test_the_papers_best_is_tested_against_each_other_setting(best_runs, expected):
    """One task, random 0, so each setting's normalised score is its score over the best mean, and Welch's p is the
    raw scores' (a common scale changes no t). ε = 0.2 (10, 11, 12) against kl (the best), clip_0.1 (12, 13, 14:
    p 0.070) and no_clip (9, 10, 11: below ε = 0.2, p 1). kl at 13.5, 14, 14.5: p 0.0196, so the single test against
    the best calls ε = 0.2 below (its interval lies below 0), Holm over the 3 comparisons does not (0.0196 > 0.05/3).
    kl at 20, 21, 22: p 0.0003 < 0.05/3, below kl alone (0.070 > 0.05/2)."""
    scores = _cells({("clip_0.2", "T1"): [10.0, 11.0, 12.0], ("kl", "T1"): best_runs,
                     ("clip_0.1", "T1"): [12.0, 13.0, 14.0], ("no_clip", "T1"): [9.0, 10.0, 11.0]})
    published = pd.Series({"no_clip": -0.39, "clip_0.2": 0.82, "kl": 0.71, "clip_0.1": 0.76})
    checks = paper_checks(scores, pd.Series({"T1": 0.0}), published, n_resamples=50)
    assert checks["best_variant"] == "kl" and checks["anchor_below"] == expected
    assert checks["anchor_vs_best"] == ("below" if expected else "not distinguishable")
    assert checks["anchor_minus_best"][2] < 0  # the single test against the best would say "below" in both
    own = [10.0, 11.0, 12.0]
    assert checks["anchor_p"] == pytest.approx({
        "kl": scipy.stats.ttest_ind(own, best_runs, equal_var=False).pvalue,
        "clip_0.1": scipy.stats.ttest_ind(own, [12.0, 13.0, 14.0], equal_var=False).pvalue, "no_clip": 1.0}, rel=1e-9)
    assert round(checks["anchor_p"]["kl"], 4) == (0.0196 if not expected else 0.0003)
    assert round(checks["anchor_p"]["clip_0.1"], 3) == 0.070


def test_paper_checks_interval_reflects_seed_noise():
    # One seed of no_clip on T1 is an outlier: resamples that draw it twice or more make no_clip best on T1.
    scores = _cells({("no_clip", "T1"): [1, 1, 100], ("clip_0.2", "T1"): [40] * 3, ("kl", "T1"): [30] * 3,
                     ("no_clip", "T2"): [2] * 3, ("clip_0.2", "T2"): [4] * 3, ("kl", "T2"): [6] * 3})
    published = pd.Series({"no_clip": -0.39, "clip_0.2": 0.82, "kl": 0.74})
    checks = paper_checks(scores, pd.Series({"T1": 0.0, "T2": 0.0}), published, n_resamples=2000, seed=1)
    assert checks["rho_range"][0] < checks["rho"] <= checks["rho_range"][1]
    # no_clip stays last unless the outlier is drawn at least twice (P = 7/27 = 0.259 per resample)
    assert abs((1 - checks["no_clip_last_fraction"]) - 7 / 27) < 0.03
    assert checks["n_resamples"] == 2000


def test_final_entropy_by_hand():
    """Budget 100 steps, last 10%: updates after step 90 count. Run a0 (T1, a): updates at 80, 95, 100 with
    entropy 9, 1, 3 -> (1 + 3) / 2 = 2; run a1: 50, 100 with 7, NaN, 4 -> its finite last-10% value 4; the
    setting on T1: (2 + 4) / 2 = 3. Run b0 (T1, b): at 100, entropy -1 -> -1. Run a2 (T2, a), budget 1000
    (its own): updates at 950, 990, 1000 with 5, 6, 8 -> last 10% is after 900: (5 + 6 + 8) / 3."""
    manifests = pd.DataFrame({
        "run_id": ["a0", "a1", "b0", "a2"], "task": ["T1", "T1", "T1", "T2"], "variant": ["a", "a", "b", "a"],
        "variant_label": ["A", "A", "B", "A"], "total_steps": [100, 100, 100, 1000]})
    updates = pd.DataFrame({
        "run_id": ["a0"] * 3 + ["a1"] * 3 + ["b0"] + ["a2"] * 3,
        "global_step": [80, 95, 100, 50, 100, 100, 100, 950, 990, 1000],
        "entropy": [9.0, 1.0, 3.0, 7.0, math.nan, 4.0, -1.0, 5.0, 6.0, 8.0]})
    table = final_entropy(updates, manifests).set_index("variant")
    assert list(table.columns) == ["variant_label", "T1", "T2"]
    assert table.loc["a", "T1"] == pytest.approx(3.0) and table.loc["a", "T2"] == pytest.approx(19 / 3)
    assert table.loc["b", "T1"] == -1.0 and math.isnan(table.loc["b", "T2"])
    assert table.loc["a", "variant_label"] == "A"


def test_runs_not_above_random_are_counted():
    # Random: T1 0, T2 -10. A run at the random score (an Acrobot seed that never learned) counts, one above not;
    # a task without a random score is left out.
    from analysis.protocol import not_above_random
    scores = pd.DataFrame({"task": ["T1", "T1", "T2", "T3"], "variant": "v", "score": [0.0, 0.5, -12.0, -99.0]})
    failed = not_above_random(scores, pd.Series({"T1": 0.0, "T2": -10.0}))
    assert failed["score"].tolist() == [0.0, -12.0]
