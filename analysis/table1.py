"""The paper's Table 1: average normalised score of each surrogate-objective setting.

Sec 6.1: per task, the random policy scores 0 and the best setting scores 1; a setting's
value is the mean over its runs (7 tasks x 3 seeds = 21 in the paper). The paper does
not publish its random or best scores, so both come from our own runs: "best" is the
setting with the highest mean (over seeds) final score on that task, chosen among the
variants present in ``scores``. The interval treats those constants as fixed: below 5 seeds per (setting, task) cell
it is a 95% t interval stratified over tasks (:func:`analysis.stats.stratified_t_interval`: each task's variance over
its seeds), not a percentile bootstrap, whose interval over 3 seeds per task shrinks each task's spread by a third;
from 5 seeds (:data:`analysis.stats.BOOTSTRAP_FROM`, its coverage reason beside it) the studentized bootstrap
stratified over tasks (:func:`analysis.stats.stratified_bootstrap_t`). The smallest cell picks the method
(:func:`analysis.seeds.seed_counts`), so a table of unequal seed counts uses the method its smallest cell allows.
Each setting is set against the best one by the interval of the difference (:func:`best_rule`), and a study of one
setting has no normalised score (its best would be itself: 1.00 by construction).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from analysis.seeds import seed_counts
from analysis.stats import (BOOTSTRAP_T_METHOD, INTERVAL_METHODS, T_METHOD, below_by_holm, holm, interval_side,
                            stratified_difference, stratified_difference_test, stratified_interval)

TABLE1_COLUMNS = [
    "variant",
    "variant_label",
    "n_runs",
    "n_diverged",
    "n_not_above_random",
    "ours",
    "ci_low",
    "ci_high",
    "diff_vs_best",
    "diff_ci_low",
    "diff_ci_high",
    "vs_best",
    "published",
    "rank_ours",
    "rank_published",
]


def load_published_table1(path: str | Path) -> pd.DataFrame:
    """Read ppo2017_table1.csv keeping the no-clip row's empty ``param`` as ``""``."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    expected = {"setting", "param", "value"}
    if not expected <= set(table.columns):
        raise ValueError(f"{path} must have columns {sorted(expected)}, has {list(table.columns)}")
    table["value"] = table["value"].astype(float)
    if table.duplicated(["setting", "param"]).any():
        raise ValueError(f"{path} has duplicate (setting, param) rows")
    return table[["setting", "param", "value"]]


def paper_rows(manifests: pd.DataFrame) -> pd.DataFrame:
    """One ``(variant, paper_setting, paper_param)`` row per variant; conflicts are errors."""
    rows = manifests[["variant", "paper_setting", "paper_param"]].drop_duplicates()
    clash = rows["variant"][rows["variant"].duplicated()]
    if not clash.empty:
        raise ValueError(f"variant {clash.iloc[0]!r} has runs with different paper_row values")
    return rows.reset_index(drop=True)


def normalize_scores(scores: pd.DataFrame, random_scores: pd.Series) -> pd.DataFrame:
    """Add ``random_score``, ``best_variant``, ``best_score`` and ``normalized`` per run.

    normalized = (score - random) / (best - random), best = the variant with the highest
    mean final score over seeds on the task. Raises if a task has no random score or if
    best equals random (the scale would be undefined).
    """
    missing = sorted(set(scores["task"]) - set(random_scores.index))
    if missing:
        raise KeyError(f"no random score for tasks {missing}; have {sorted(random_scores.index)}")
    by_setting = scores.groupby(["task", "variant"])["score"].mean().reset_index()
    best = by_setting.loc[by_setting.groupby("task")["score"].idxmax()]
    best = best.rename(columns={"variant": "best_variant", "score": "best_score"})
    out = scores.merge(best, on="task", how="left")
    out["random_score"] = out["task"].map(random_scores).astype(float)
    span = out["best_score"] - out["random_score"]
    flat = sorted(out.loc[span == 0, "task"].unique())
    if flat:
        raise ValueError(f"best setting equals the random score on {flat}: cannot normalise")
    below = sorted(out.loc[span < 0, "task"].unique())
    if below:
        warnings.warn(f"every setting scores below random on {below}; normalised scale is inverted")
    out["normalized"] = (out["score"] - out["random_score"]) / span
    return out


def per_task_table(normalized: pd.DataFrame) -> pd.DataFrame:
    """Task x variant mean normalised score, with each task's random and best raw scores."""
    wide = normalized.pivot_table(
        index="task", columns="variant", values="normalized", aggfunc="mean"
    )
    wide.columns.name = None
    consts = normalized.groupby("task")[["random_score", "best_variant", "best_score"]].first()
    return consts.join(wide).reset_index()


def final_entropy(updates: pd.DataFrame, manifests: pd.DataFrame, last_fraction: float = 0.1) -> pd.DataFrame:
    """The policy's entropy at the end of training, setting x task: each run's mean over its updates in the
    last ``last_fraction`` of its budget (finite values), then the mean over the setting's seeds on the task.
    A setting whose entropy falls far below the others' has stopped exploring: where a larger policy step
    scores lower, this says whether it collapsed the policy's spread (Table 1's Swimmer: issue 15)."""
    meta = manifests.set_index("run_id")
    rows = updates[["run_id", "global_step", "entropy"]].copy()
    rows["start"] = rows["run_id"].map(meta["total_steps"]).astype(float) * (1 - last_fraction)
    rows = rows[(rows["global_step"] > rows["start"]) & np.isfinite(rows["entropy"].to_numpy(dtype=float))]
    per_run = rows.groupby("run_id")["entropy"].mean()
    runs = meta.loc[per_run.index, ["task", "variant", "variant_label"]].assign(entropy=per_run.to_numpy())
    wide = runs.pivot_table(index=["variant", "variant_label"], columns="task", values="entropy", aggfunc="mean")
    wide.columns.name = None
    return wide.reset_index()


def _by_task(norm: pd.DataFrame, variant: str) -> dict[str, np.ndarray]:
    """One array of ``variant``'s normalised scores per task (sorted), runs in seed order."""
    runs = norm[norm["variant"] == variant].sort_values(["task", "seed"], kind="stable")
    return {t: g["normalized"].to_numpy(dtype=float) for t, g in runs.groupby("task", sort=True)}


# Normalised-score differences smaller than this are not called differences, whatever the interval says: at a
# ceiling (CartPole's 500, reached by most settings) both sides of a task can have no spread, and a setting 0.005
# lower would otherwise count as "below" the best.
TIE_MARGIN = 0.02
BELOW, NOT_DISTINGUISHABLE, BEST, NO_INTERVAL = "below", "not distinguishable", "best", "no interval"
# The vs_best column's word for the setting the others are measured against: the highest mean, picked from the same
# runs, is not shown to be the best by that (only ANCHOR_RULE's test of a setting against each other can show it).
HIGHEST_MEAN = "highest mean"
DIFFERENCE_INTERVALS = {  # the interval of a difference of two settings, by analysis.stats.INTERVAL_METHODS
    T_METHOD: "Welch's 95% interval (the two settings' seeds independent, each task's own variance over seeds, "
              "Welch–Satterthwaite degrees of freedom)",
    BOOTSTRAP_T_METHOD: "a 95% studentized bootstrap interval (each setting's seeds resampled independently within "
                        "each task, each resample standardised by its Welch standard error)",
}


def best_rule(method: str = T_METHOD) -> str:
    """The rule of the ``vs_best`` column with ``method``'s interval of the difference (:data:`DIFFERENCE_INTERVALS`).
    """
    return (
        "Against the highest mean (vs_best; that setting's own cell reads 'highest mean', not 'best': picked from the "
        "same runs, it is not shown to be the best by this rule): diff_vs_best = the setting's score − the highest "
        "mean's, the mean over the tasks both ran of the per-task difference of mean normalised scores, with "
        f"{DIFFERENCE_INTERVALS[method]}. 'below': the interval lies wholly below 0 and the difference is at least "
        f"{TIE_MARGIN} (smaller differences are not called differences: at a ceiling both sides can have no spread); "
        "'not distinguishable': otherwise; 'no interval': a task with a single run. Not interval overlap: two 95% "
        "intervals can overlap while the interval of their difference excludes 0. Each setting is tested on its own, "
        "against the highest mean of the same runs: in simulated Table 1s at the published spreads where all 11 "
        "settings are equal, this rule calls some setting below it in 45.5-61% of tables (3 to 10 seeds, two "
        "runs of the simulation) and ε = 0.2 in 8.5-12.5%, not 2.5%; Holm's test over all pairs (the seeds-needed "
        "table's family-wise rows) in 1.5-3% and 0-1% (scripts/interval_coverage.py --best). ε = 0.2's own check, "
        "chosen before the data, tests it against each other setting instead (paper_checks' anchor_vs_best)."
    )


BEST_RULE = best_rule(T_METHOD)  # the rule below 5 seeds per cell, as at the paper's 3
NOT_ABOVE_RANDOM_NOTE = ("n_not_above_random: runs whose final score is not above our random policy's on the task "
                         "(normalised score ≤ 0): a run that never learned, diverged or not.")
ONE_SETTING_NOTE = ("One setting only: no normalised score. Each task's best setting would be this one, so every "
                    "score would be 1.00 by construction, not comparable with the paper's column; see the raw "
                    "scores per task.")


def versus_best(diff) -> str:
    """:data:`BEST_RULE`'s word for one difference from the best (a :class:`analysis.stats.Difference`)."""
    side = interval_side(diff.low, diff.high)
    if side == "no interval":
        return NO_INTERVAL
    return BELOW if side == "below 0" and diff.point <= -TIE_MARGIN else NOT_DISTINGUISHABLE


def table1(
    scores: pd.DataFrame,
    random_scores: pd.Series,
    paper_map: pd.DataFrame | None = None,
    published: pd.DataFrame | None = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str | None = None,
) -> pd.DataFrame:
    """Our Table 1 with 95% intervals stratified over tasks and the published value beside it.

    ``ours`` is the mean over tasks of each task's mean normalised score over seeds (the mean over all runs when
    every task has the same number of seeds, as the paper's 7 × 3); ``ci_low``/``ci_high`` its interval by
    ``method`` (:data:`analysis.stats.INTERVAL_METHODS`; by default the one the smallest (setting, task) cell
    allows, :func:`analysis.seeds.seed_counts`: the t interval at 3 seeds). ``diff_vs_best`` and ``vs_best`` set
    each setting against the best one by :func:`best_rule`; ``n_not_above_random`` counts runs that end no better
    than the random
    policy. With a single setting every value would be 1 by construction: ``ours`` and the ranks are NaN
    (:data:`ONE_SETTING_NOTE`). ``paper_map`` comes from :func:`paper_rows`, ``published`` from
    :func:`load_published_table1`; without them ``published`` is NaN. ``rank_ours`` ranks all variants (1 =
    best); ``rank_published`` ranks the variants that have a published value. Ties share the average rank.
    ``n_resamples`` and ``seed`` serve the bootstrap (the t interval does not use them).
    """
    method = method or seed_counts(scores).method
    norm = normalize_scores(scores, random_scores)
    labels = norm.groupby("variant")["variant_label"].first()
    variants = sorted(norm["variant"].unique())
    by_task = {v: _by_task(norm, v) for v in variants}
    intervals = {v: stratified_interval(list(by_task[v].values()), method, n_resamples, confidence, seed)
                 for v in variants}
    one_setting = len(variants) == 1
    best = max(variants, key=lambda v: intervals[v].point)
    rows = []
    for variant in variants:
        group = norm[norm["variant"] == variant]
        ci = intervals[variant]
        row = {
            "variant": variant,
            "variant_label": labels[variant],
            "n_runs": len(group),
            "n_diverged": int((group["status"] == "diverged").sum()),
            "n_not_above_random": int((group["normalized"] <= 0).sum()),
            "ours": math.nan if one_setting else ci.point,
            "ci_low": math.nan if one_setting else ci.low,
            "ci_high": math.nan if one_setting else ci.high,
            "diff_vs_best": math.nan, "diff_ci_low": math.nan, "diff_ci_high": math.nan, "vs_best": "",
        }
        shared = sorted(set(by_task[variant]) & set(by_task[best]))
        if one_setting:
            pass
        elif variant == best:
            row["vs_best"] = HIGHEST_MEAN
        elif shared:
            diff = stratified_difference([by_task[variant][t] for t in shared], [by_task[best][t] for t in shared],
                                         method, n_resamples, confidence, seed)
            row.update(diff_vs_best=diff.point, diff_ci_low=diff.low, diff_ci_high=diff.high,
                       vs_best=versus_best(diff))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["published"] = np.nan
    if paper_map is not None and published is not None:
        keyed = paper_map.merge(
            published,
            left_on=["paper_setting", "paper_param"],
            right_on=["setting", "param"],
            how="inner",
        ).set_index("variant")["value"]
        out["published"] = out["variant"].map(keyed).astype(float)
    out["rank_ours"] = out["ours"].rank(ascending=False, method="average")
    out["rank_published"] = out["published"].rank(ascending=False, method="average")
    out = out.sort_values(["ours", "variant"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)[TABLE1_COLUMNS]


def clearly_below(table: pd.DataFrame, margin: float = TIE_MARGIN) -> tuple[str, list[str], list[str]]:
    """(best variant, variants not distinguishable from it, variants below it) of a Table 1, one row per variant.

    With :func:`table1`'s ``vs_best`` column, by :func:`best_rule` (the interval of the difference from the
    best). A table of ``ours``, ``ci_low`` and ``ci_high`` alone (no per-seed data) only allows the old rule: below
    when its 95% interval lies wholly under the best one's and it is at least ``margin`` lower, which is not a
    test; pass the ``vs_best`` column instead. Order: the table's."""
    best = table.loc[table["ours"].idxmax()]
    others = table["variant"] != best["variant"]
    if "vs_best" in table.columns:
        below = table["vs_best"] == BELOW
    else:
        below = (table["ci_high"] < best["ci_low"]) & (best["ours"] - table["ours"] >= margin)
    return best["variant"], list(table.loc[others & ~below, "variant"]), list(table.loc[others & below, "variant"])


def p_text(p: float) -> str:
    """A p-value as a reader wants it: three decimals, or "< 0.001"."""
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def rank_agreement(table: pd.DataFrame, seed: int = 0) -> dict:
    """Spearman rank correlation between ``ours`` and ``published`` where both exist, and its one-sided permutation
    p-value (:func:`agreement_p`)."""
    both = table.dropna(subset=["ours", "published"])
    result: dict = {"n": int(len(both)), "variants": both["variant"].tolist()}
    if len(both) < 3:
        result.update(rho=float("nan"), p=float("nan"))
        return result
    ours, published = both["ours"].to_numpy(float), both["published"].to_numpy(float)
    result.update(rho=float(spearman(ours, published)), p=agreement_p(ours, published, seed=seed))
    return result


def resampled_table1(scores: pd.DataFrame, random_scores: pd.Series, n_resamples: int,
                     seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Table 1's column again and again: the sorted variants and a ``[1 + n_resamples, variant]`` array whose row 0
    is :func:`table1`'s ``ours`` from the data and each further row the same from a resample that draws every
    (variant, task) cell's seeds with replacement, the best setting per task chosen again (so the normalisation's
    own uncertainty is in the spread). Needs every variant on every task."""
    variants = sorted(scores["variant"].unique())
    tasks = sorted(scores["task"].unique())
    cells = {(v, t): g["score"].to_numpy(float) for (v, t), g in scores.groupby(["variant", "task"])}
    n_seeds = max(len(c) for c in cells.values())
    # [variant, task, seed] with NaN where a cell has fewer seeds; resampling draws only real seeds
    grid = np.full((len(variants), len(tasks), n_seeds), np.nan)
    counts = np.zeros((len(variants), len(tasks)), dtype=int)
    for (v, t), values in cells.items():
        grid[variants.index(v), tasks.index(t), : len(values)] = values
        counts[variants.index(v), tasks.index(t)] = len(values)
    if (counts == 0).any():
        raise ValueError("paper_checks needs every variant on every task")
    rng = np.random.default_rng(seed)
    draws = (rng.random((n_resamples, *counts.shape, n_seeds)) * counts[None, :, :, None]).astype(int)
    resampled = np.take_along_axis(grid[None], draws, axis=3)
    means = np.concatenate([np.nanmean(grid, axis=2)[None], resampled.mean(axis=3)])  # [0] = the data
    random = random_scores.reindex(tasks).to_numpy(float)
    best = means.max(axis=1)
    return variants, ((means - random[None, None, :]) / (best - random[None, :])[:, None, :]).mean(axis=2)


def spearman(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's ρ of ``x`` and ``y`` along ``axis``, broadcast over the other axes: Pearson's correlation of their
    average ranks (ties share the mean rank), as scipy.stats.spearmanr computes it, for many rows at once."""
    rx, ry = scipy.stats.rankdata(x, axis=axis), scipy.stats.rankdata(y, axis=axis)
    rx, ry = rx - rx.mean(axis=axis, keepdims=True), ry - ry.mean(axis=axis, keepdims=True)
    return (rx * ry).sum(axis=axis) / np.sqrt((rx ** 2).sum(axis=axis) * (ry ** 2).sum(axis=axis))


RHO_PERMUTATIONS = 100_000
AGREEMENT_LEVEL = 0.05  # the ranking agrees with the paper's when agreement_p is below it

# What ρ's range over resampled seeds (paper_checks' rho_range) is and is not, from the simulation
# `scripts/interval_coverage.py --rho --draws 200 --seeds 3 5 10` (truth: the cell means of every published seed of
# Table 1; normal, skewed and bimodal seeds; Intel Xeon, 2026-11-30), run twice as seed 5 landed: at 01:20 the
# truth's ρ with the paper was 0.90, at 02:24 0.74 (after HalfCheetah's and Reacher's seed 5):
# - against the paper's values, ρ from 3 seeds falls below the true ρ by 0.15-0.20 on average at truth 0.90 (0.10 at
#   10 seeds), by 0.02-0.06 at truth 0.74 (about 0 at 10): settings within noise of one another trade ranks, which
#   costs most where the ranks agree most. The percentile range holds the true ρ in 38-54% of tables at 3 seeds
#   and 69-73% at 10 at truth 0.90, 86-90% and 95-97% at truth 0.74; the basic and BC intervals are no better
#   (49-77% at 0.90, 62-76% at 0.74);
# - its lower end lies above 0 in every table, but also in 1.5-6.5% of tables against ten shuffles of the paper's
#   values whose true ρ is near 0 (the basic and BC intervals: 6.5-18.5%);
# - the permutation test (agreement_p, p < 0.05) finds agreement in 84-92% of tables at 3 seeds and 97-98.5% at 10,
#   and in 0-1% of the shuffled worlds: it decides, the range only describes.
RHO_SPREAD = ("the 2.5th to 97.5th percentiles of ρ over the resamples, not a 95% interval of ρ: in simulation at "
              "Table 1's published spreads (scripts/interval_coverage.py --rho) this range holds the true ρ in 86-90% "
              "of tables at 3 seeds when the true ρ is 0.74 but in 38-54% when it is 0.90, where ρ from few seeds "
              "falls 0.15-0.20 below it (settings within noise of one another trade ranks); whether ρ is above 0 is "
              "decided by the permutation test, which in the same simulation finds agreement in 84-98.5% of tables "
              "and, where the true ρ is near 0, in 0-1%")


def agreement_p(ours: np.ndarray, paper: np.ndarray, n_permutations: int = RHO_PERMUTATIONS, seed: int = 0) -> float:
    """One-sided p-value of Spearman's ρ between ``ours`` and ``paper`` above 0: the share of random reassignments
    of the paper's values to the settings whose ρ with ours is at least the observed one (scipy.stats.
    permutation_test, Monte Carlo, so never below 1 / (n_permutations + 1)). Exact under its null, whatever the
    noise in ours; "the lower end of ρ's range over resampled seeds lies above 0" is not: the simulation beside
    RHO_SPREAD finds it there in up to 6.5% of tables whose true ρ is near 0, the test in at most 1%."""
    test = scipy.stats.permutation_test((np.asarray(ours, float), np.asarray(paper, float)), spearman,
                                        permutation_type="pairings", alternative="greater",
                                        n_resamples=n_permutations, vectorized=True, rng=seed)
    return float(test.pvalue)


# The family-wise error rate of the pairwise tests: the chance of calling at least one pair of equal settings
# distinguishable, over all the pairs at once.
FAMILY_LEVEL = 0.05
# scripts/interval_coverage.py --best --draws 200 --seeds 3 5 10 (2026-12-06, Intel Xeon; ±0.035)
ANCHOR_RULE = (
    "anchor_vs_best: 'below' when the anchor (ε = 0.2, the paper's best, chosen before the data) lies below at least "
    "one other setting by Holm's test of the anchor against each of them (family-wise 5%, differences under "
    f"{TIE_MARGIN} not called; anchor_below names them), 'best' when it lies above every other setting by the same "
    "test with the two sides swapped (anchor_above names the settings it lies above), 'not distinguishable' otherwise: "
    "the highest mean alone is not enough, two settings within noise of each other trade first place from one seed to "
    "the next. In simulated Table 1s at the published spreads where all settings are equal, this rule calls ε = 0.2 "
    "below in 0.5-2% of tables (3 to 10 seeds); the single test against the best, picked from the same runs, in "
    "8.5-11.5% (scripts/interval_coverage.py --best). "
    "anchor_minus_best: the difference from the best with its interval, for reading"
)


def anchor_below(scores: pd.DataFrame, random_scores: pd.Series, anchor: str = "clip_0.2", method: str | None = None,
                 n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                 family_level: float = FAMILY_LEVEL, above: bool = False) -> tuple[list[str], dict[str, float]]:
    """The settings ``anchor`` lies below by :data:`ANCHOR_RULE` (:func:`analysis.stats.below_by_holm` over the
    anchor against each other setting, normalised as :func:`table1`, over the tasks both ran), and each one's p.
    With ``above``, the settings it lies above: the same test with the two sides swapped."""
    method = method or seed_counts(scores).method
    norm = normalize_scores(scores, random_scores)
    own = _by_task(norm, anchor)
    comparisons = {}
    for variant in sorted(set(norm["variant"]) - {anchor}):
        other = _by_task(norm, variant)
        shared = sorted(set(own) & set(other))
        sides = ([own[t] for t in shared], [other[t] for t in shared])
        comparisons[variant] = sides[::-1] if above else sides
    return below_by_holm(comparisons, method, n_resamples, confidence, seed, family_level, TIE_MARGIN)


def paper_checks(
    scores: pd.DataFrame,
    random_scores: pd.Series,
    published: pd.Series,
    anchor: str = "clip_0.2",
    no_clip: str = "no_clip",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str | None = None,
    interval_resamples: int = 10_000,
) -> dict:
    """The questions a paper-scale Table 1 answers, with their uncertainty over seeds.

    ``published`` maps variant -> the paper's value. Each bootstrap resample draws, for every
    (variant, task), that cell's seeds with replacement, then recomputes the whole table as
    :func:`table1` does (best setting per task chosen again, normalisation, mean over tasks), so the
    interval of Spearman's ρ includes the uncertainty of the normalisation. Returns ρ and its
    percentile interval, whether ``no_clip`` is last (and how often in the resamples), the best setting with
    Table 1's interval of its score (``best_ci``: the same numbers as Table 1, normalisation fixed, by ``method``,
    by default the one the smallest cell allows; a bootstrap draws ``interval_resamples``, as :func:`table1`'s
    ``n_resamples``, so both give the same numbers), ``anchor`` against it (``anchor_minus_best`` with the same
    method's interval of the difference, and ``anchor_vs_best`` by :data:`ANCHOR_RULE`, ``anchor_below`` the settings
    it lies below by that rule, ``anchor_above`` those it lies above, and ``anchor_p`` the first's p; how
    often the anchor is best in the resamples, as a fraction and a count), and the settings whose rank moves
    most from the paper's.
    """
    variants, table = resampled_table1(scores, random_scores, n_resamples, seed)
    paper = published.reindex(variants).to_numpy(float)
    has = ~np.isnan(paper)
    rho = spearman(table[:, has], paper[has][None])
    alpha = (1 - confidence) / 2
    ranks = (-table).argsort(axis=1).argsort(axis=1) + 1  # 1 = best, per resample
    point_rank = dict(zip(variants, ranks[0]))
    paper_rank = pd.Series(paper, index=variants).rank(ascending=False)
    best_variant = variants[int(table[0].argmax())]
    norm = normalize_scores(scores, random_scores)
    best_runs, anchor_runs = _by_task(norm, best_variant), _by_task(norm, anchor)
    method = method or seed_counts(scores).method
    best_ci = stratified_interval(list(best_runs.values()), method, interval_resamples, confidence, seed)
    shared = sorted(set(best_runs) & set(anchor_runs))
    versus = stratified_difference([anchor_runs[t] for t in shared], [best_runs[t] for t in shared], method,
                                   interval_resamples, confidence, seed)
    below, anchor_p = anchor_below(scores, random_scores, anchor, method, interval_resamples, confidence, seed)
    above, _ = anchor_below(scores, random_scores, anchor, method, interval_resamples, confidence, seed, above=True)
    anchor_side = (BELOW if below else BEST if len(above) == len(variants) - 1
                   else NO_INTERVAL if anchor != best_variant and versus_best(versus) == NO_INTERVAL
                   else NOT_DISTINGUISHABLE)
    anchor_best = int((ranks[1:, variants.index(anchor)] == 1).sum())
    moved = sorted(((abs(point_rank[v] - paper_rank[v]), v) for v in np.array(variants)[has]), reverse=True)
    return {
        "n_variants_with_paper_value": int(has.sum()),
        "rho": float(rho[0]),
        "rho_p": agreement_p(table[0, has], paper[has], seed=seed),
        "rho_range": [float(np.quantile(rho[1:], alpha)), float(np.quantile(rho[1:], 1 - alpha))],
        "no_clip_rank": int(point_rank[no_clip]) if no_clip in point_rank else None,
        "no_clip_last": bool(point_rank.get(no_clip) == len(variants)),
        "no_clip_last_fraction": float((ranks[1:, variants.index(no_clip)] == len(variants)).mean())
        if no_clip in variants else None,
        "best_variant": best_variant,
        "best_ci": [float(best_ci.low), float(best_ci.high)],
        "anchor": anchor,
        "anchor_score": float(table[0, variants.index(anchor)]),
        "anchor_within_best_ci": bool(table[0, variants.index(anchor)] >= best_ci.low),
        "anchor_minus_best": [versus.point, versus.low, versus.high],
        "anchor_vs_best": anchor_side,
        "anchor_below": below,
        "anchor_above": above,
        "anchor_p": anchor_p,
        "anchor_best_fraction": anchor_best / n_resamples,
        "anchor_best_count": anchor_best,
        "largest_rank_moves": [{"variant": v, "rank_ours": int(point_rank[v]), "rank_paper": float(paper_rank[v])}
                               for _, v in moved[:3]],
        "n_resamples": n_resamples,
        "interval_method": method,
        "method": "rho_p: one-sided permutation test of rho > 0 (analysis.table1.agreement_p); rho_range and the "
                  "fractions: seeds resampled with replacement within each (variant, task), the best setting per "
                  "task, the normalisation and the mean over tasks recomputed per resample, percentiles (rho_range: "
                  f"{RHO_SPREAD}); best_ci: Table 1's 95% interval, {INTERVAL_METHODS[method]} "
                  f"(normalisation fixed); anchor_minus_best: {DIFFERENCE_INTERVALS[method]}; {ANCHOR_RULE}; anchor_p: "
                  "each other setting's p against the anchor (1 where its mean is not above the anchor's)",
    }


PAIR_COLUMNS = ["higher", "lower", "difference", "ci_low", "ci_high", "p", "distinguishable", "distinguishable_family"]


def pairwise_differences(scores: pd.DataFrame, random_scores: pd.Series, method: str | None = None,
                         n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                         family_level: float = FAMILY_LEVEL) -> pd.DataFrame:
    """Every pair of settings of a Table 1, normalised as :func:`table1` does: ``higher`` (the higher mean) −
    ``lower`` over the tasks both ran, with ``method``'s interval of the difference (:func:`best_rule`'s, by default
    the one the smallest cell allows) and the two-sided ``p`` of no difference that the interval inverts.
    ``distinguishable`` when the interval lies wholly above 0 and the difference is at least :data:`TIE_MARGIN`: each
    pair tested at 95% on its own, so with 11 settings, 55 tests, a few pairs are expected "distinguishable" by chance
    where no setting differs. ``distinguishable_family`` holds the chance of calling any equal pair distinguishable at
    ``family_level`` over all the pairs (Holm's test of their p, :func:`analysis.stats.holm`), with the same margin;
    the bootstrap takes at least 4 · pairs / family_level resamples, so that its p can reach Holm's thresholds.
    One row per pair, the largest difference first."""
    method = method or seed_counts(scores).method
    norm = normalize_scores(scores, random_scores)
    variants = sorted(norm["variant"].unique())
    by_task = {v: _by_task(norm, v) for v in variants}
    means = {v: float(np.mean([x.mean() for x in by_task[v].values()])) for v in variants}
    pairs = [(a, b) for i, a in enumerate(variants) for b in variants[i + 1:] if set(by_task[a]) & set(by_task[b])]
    # a bootstrap p is at least 2 / (1 + resamples); Holm's smallest threshold is family_level / pairs, so fewer
    # resamples than this could never reject anything (55 pairs: 4,400)
    n_resamples = max(n_resamples, math.ceil(4 * len(pairs) / family_level))
    rows = []
    for a, b in pairs:
        high, low = (a, b) if means[a] >= means[b] else (b, a)
        shared = sorted(set(by_task[high]) & set(by_task[low]))
        d, p = stratified_difference_test([by_task[high][t] for t in shared], [by_task[low][t] for t in shared],
                                          method, n_resamples, confidence, seed)
        rows.append({"higher": high, "lower": low, "difference": d.point, "ci_low": d.low, "ci_high": d.high,
                     "p": p, "distinguishable": interval_side(d.low, d.high) == "above 0" and d.point >= TIE_MARGIN})
    out = pd.DataFrame(rows, columns=PAIR_COLUMNS[:-1])
    out["distinguishable_family"] = holm(out["p"], family_level) & (out["difference"] >= TIE_MARGIN)
    return out.sort_values(["difference", "higher", "lower"], ascending=[False, True, True]).reset_index(drop=True)
