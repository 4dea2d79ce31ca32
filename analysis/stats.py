"""Interval statistics after Agarwal et al. 2021 ("Deep RL at the edge of the statistical
precipice", the rliable definitions), rebuilt on scipy because rliable does not import
beside pandas 3.

The stratified bootstrap resamples runs with replacement *within* each task, so every
resample keeps the study's task mix; ``scipy.stats.bootstrap`` gives exactly that when
each task is passed as its own sample. :func:`stratified_bootstrap` is the general form
(several values per resample, runs carrying whole curves, independent strata for
two-variant statistics) that :mod:`analysis.aggregate` and the sample-efficiency curve use.

A percentile bootstrap over the 3 seeds of one task gives their range (its 2.5% quantile is the lowest seed),
whose coverage of the mean is near 75%; stratified over tasks it still shrinks each task's spread by (n − 1)/n.
Intervals over seeds therefore use Student's t: :func:`t_interval` (one task), :func:`stratified_t_interval`
(the mean over tasks of per-task means, Table 1's number), and for differences between two sets of runs Welch's
interval (:func:`welch_difference` from published mean ± sd, :func:`welch_samples` and :func:`stratified_welch`
from runs). Identical runs on both sides are reported as such (:func:`same_runs`, :func:`difference_text`). The
bootstrap stays where rliable uses it: IQM, median, optimality gap, performance profiles and probability of
improvement, stratified over tasks.

From :data:`BOOTSTRAP_FROM` seeds per (setting, task) cell the mean over tasks and the difference of two settings
switch to a bootstrap whose coverage holds there (:func:`stratified_bootstrap_t`: seeds resampled within each task,
as rliable resamples them, each resample standardised by its own standard error); :func:`interval_method_for` picks
the method from the smallest cell, :func:`stratified_interval` and :func:`stratified_difference` compute either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import scipy.stats

Statistic = Callable[..., np.ndarray | float]


class Interval(NamedTuple):
    """A point estimate with its bootstrap confidence interval."""

    point: float
    low: float
    high: float


def iqm(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50% (rliable's robust aggregate)."""
    return scipy.stats.trim_mean(values, proportiontocut=0.25, axis=axis)


def mean(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Plain mean with the ``axis`` keyword the vectorized bootstrap needs."""
    return np.mean(values, axis=axis)


def stratified_bootstrap_ci(
    values_by_task: Mapping[str, np.ndarray],
    statistic: Statistic = mean,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap CI of ``statistic`` over all runs pooled, strata = tasks.

    ``statistic(x, axis=-1)`` receives the pooled runs of every task (task order as in
    the mapping) and must reduce along ``axis``. A task with a single run is a constant
    in every resample (resampling one value always returns it), so it is held fixed
    rather than passed to scipy, which needs two observations per sample. When no task
    has two runs there is no spread to resample and the interval is ``(nan, nan)``.
    The same ``seed`` always gives the same interval.
    """
    arrays = [np.asarray(v, dtype=float).ravel() for v in values_by_task.values()]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("every task needs at least one value")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("values must be finite")
    point = float(statistic(np.concatenate(arrays), axis=-1))
    varying = [i for i, a in enumerate(arrays) if a.size >= 2]
    if not varying:
        return Interval(point, float("nan"), float("nan"))

    def pooled(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        batch_shape = samples[0].shape[:-1]
        parts = list(arrays)
        for i, sample in zip(varying, samples):
            parts[i] = sample
        parts = [np.broadcast_to(p, batch_shape + p.shape[-1:]) for p in parts]
        return statistic(np.concatenate(parts, axis=-1), axis=-1)

    result = scipy.stats.bootstrap(
        tuple(arrays[i] for i in varying),
        pooled,
        n_resamples=n_resamples,
        vectorized=True,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(point, float(ci.low), float(ci.high))


# Resampled values held in memory at once; larger bootstraps are evaluated in batches.
_BATCH_ELEMENTS = 4_000_000


def stratified_bootstrap(
    strata: Sequence[np.ndarray],
    statistic: Callable[[list[np.ndarray]], np.ndarray],
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    cost_per_value: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and percentile bootstrap interval of a statistic of several strata.

    ``strata`` are arrays with one row per run (axis 0; further axes, e.g. grid points,
    stay attached to their run). Each resample redraws, independently in every stratum,
    as many rows as the stratum has, with replacement. ``statistic(parts)`` receives one
    array per stratum shaped ``(B, n_rows, ...)`` (``B`` resamples side by side) and
    returns an array shaped ``(B, ...)``; it may return several values per resample.

    Returns ``(point, low, high)``, each shaped like one resample's statistic. A stratum
    with a single row is held fixed (its resample is always itself); when no stratum has
    two rows there is nothing to resample and ``low``/``high`` are NaN. The row indices
    are drawn with ``np.random.default_rng(seed)`` stratum by stratum, as
    ``scipy.stats.bootstrap`` draws them, so a statistic that :func:`stratified_bootstrap_ci`
    also computes gets the same interval from the same seed. ``cost_per_value`` (e.g. the
    number of thresholds a statistic compares every value with) only sizes the batches.
    """
    arrays = [np.asarray(s, dtype=float) for s in strata]
    if not arrays or any(a.ndim == 0 or a.shape[0] == 0 for a in arrays):
        raise ValueError("every stratum needs at least one row")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("values must be finite")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    point = np.asarray(statistic([a[np.newaxis] for a in arrays]), dtype=float)[0]
    if all(a.shape[0] < 2 for a in arrays):
        return point, np.full(point.shape, np.nan), np.full(point.shape, np.nan)
    rng = np.random.default_rng(seed)
    indices = [
        rng.integers(0, a.shape[0], (n_resamples, a.shape[0])) if a.shape[0] >= 2 else None
        for a in arrays
    ]
    per_resample = sum(a.size for a in arrays) * max(1, cost_per_value)
    batch = max(1, _BATCH_ELEMENTS // per_resample)
    distribution = []
    for start in range(0, n_resamples, batch):
        stop = min(start + batch, n_resamples)
        parts = [
            a[idx[start:stop]] if idx is not None else np.broadcast_to(a, (stop - start, *a.shape))
            for a, idx in zip(arrays, indices)
        ]
        distribution.append(np.asarray(statistic(parts), dtype=float))
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(np.concatenate(distribution, axis=0), [tail, 100.0 - tail], axis=0)
    return point, low, high


def bootstrap_ci(
    values: np.ndarray,
    statistic: Statistic = mean,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap CI over one group of runs (a single stratum)."""
    return stratified_bootstrap_ci({"all": values}, statistic, n_resamples, confidence, seed)


def bootstrap_ci_columns(
    matrix: np.ndarray,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and percentile bootstrap CI of each column of ``matrix`` (rows = runs).

    NaN marks "no value for this run at this column" (e.g. a learning curve past a
    run's end); each column uses only its non-NaN rows. Columns sharing the same set
    of runs are bootstrapped together in one vectorized scipy call, so a 100-point
    curve costs a handful of calls. Columns with fewer than two runs get a NaN band.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError("matrix must be 2-D (runs x columns)")
    present = ~np.isnan(matrix)
    counts = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, np.nansum(matrix, axis=0) / counts, np.nan)
    low = np.full(matrix.shape[1], np.nan)
    high = np.full(matrix.shape[1], np.nan)
    patterns, inverse = np.unique(present.T, axis=0, return_inverse=True)
    for k, rows in enumerate(patterns):
        if rows.sum() < 2:
            continue
        cols = np.flatnonzero(inverse.ravel() == k)
        block = matrix[np.ix_(rows, cols)]
        result = scipy.stats.bootstrap(
            (block,),
            np.mean,
            n_resamples=n_resamples,
            vectorized=True,
            axis=0,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
        low[cols] = result.confidence_interval.low
        high[cols] = result.confidence_interval.high
    return means, low, high


def t_interval(values: np.ndarray, confidence: float = 0.95) -> Interval:
    """Mean and Student-t interval of the mean over independent runs (n − 1 degrees of freedom).

    Unlike a percentile bootstrap, whose 95% interval over 3 seeds is their range (coverage near 75%), the t
    interval keeps its coverage at any n when the scores are roughly normal, and says how little 3 seeds
    pin down: at n = 3 its half-width is 4.30 standard errors. NaN bounds below two values."""
    values = np.asarray(values, dtype=float)
    n = values.size
    point = float(values.mean()) if n else float("nan")
    if n < 2:
        return Interval(point, float("nan"), float("nan"))
    half = float(scipy.stats.t.ppf(0.5 + confidence / 2.0, n - 1) * values.std(ddof=1) / np.sqrt(n))
    return Interval(point, point - half, point + half)


class Difference(NamedTuple):
    """A difference of two means with its Welch interval and degrees of freedom."""

    point: float
    low: float
    high: float
    dof: float


def welch_difference(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int,
                     confidence: float = 0.95) -> Difference:
    """mean_a − mean_b with Welch's t interval (unequal variances, Welch–Satterthwaite degrees of freedom),
    from each side's mean, sample standard deviation (ddof = 1) and number of runs. This is what a
    published "mean ± std over n seeds" allows: no per-seed values are needed. NaN bounds when either side
    has fewer than two runs or both spreads are zero."""
    point = float(mean_a - mean_b)
    if n_a < 2 or n_b < 2:
        return Difference(point, float("nan"), float("nan"), float("nan"))
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    if va + vb == 0:
        return Difference(point, float("nan"), float("nan"), float("nan"))
    dof = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    half = float(scipy.stats.t.ppf(0.5 + confidence / 2.0, dof) * np.sqrt(va + vb))
    return Difference(point, point - half, point + half, float(dof))


def same_runs(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> bool:
    """True when two sets of per-seed scores hold the same values, in any order: the same runs (e.g. a task whose
    v4 and v5 give the same three scores), whose difference is "identical", not an interval around 0."""
    a, b = np.sort(np.asarray(a, dtype=float).ravel()), np.sort(np.asarray(b, dtype=float).ravel())
    return a.size > 0 and a.shape == b.shape and bool(np.array_equal(a, b))


def _combined_t(samples: Sequence[np.ndarray], signs: Sequence[float], n_strata: int,
                confidence: float) -> Difference:
    """Σ sign·mean(sample) / n_strata with its t interval: variance Σ s²/n / n_strata² (each sample's own
    variance, ddof 1), degrees of freedom by Welch–Satterthwaite, (Σ v)² / Σ v² / (n − 1) with v = s²/n. NaN
    bounds when a sample has fewer than two values; a zero bound width (no spread in any sample) when every
    sample is constant: then the data leave no doubt about the value, and ``dof`` is infinite."""
    point = float(sum(sign * float(np.mean(s)) for s, sign in zip(samples, signs)) / n_strata)
    if any(s.size < 2 for s in samples):
        return Difference(point, math.nan, math.nan, math.nan)
    v = np.array([float(np.var(s, ddof=1)) / s.size for s in samples])
    n = np.array([s.size for s in samples], dtype=float)
    if v.sum() == 0:
        return Difference(point, point, point, math.inf)
    dof = float(v.sum() ** 2 / np.sum(v**2 / (n - 1)))
    half = float(scipy.stats.t.ppf(0.5 + confidence / 2.0, dof) * np.sqrt(v.sum()) / n_strata)
    return Difference(point, point - half, point + half, dof)


# Interval methods for a mean over tasks of per-task means over seeds, and for the difference of two such means.
T_METHOD, BOOTSTRAP_T_METHOD = "t", "bootstrap-t"
INTERVAL_METHODS = {
    T_METHOD: "Student t interval stratified over tasks (each task's own variance over its seeds, Welch–Satterthwaite "
              "degrees of freedom; Welch's for a difference)",
    BOOTSTRAP_T_METHOD: "studentized bootstrap stratified over tasks (seeds resampled with replacement within each "
                        "task, as rliable resamples them, each resample standardised by its own standard error: "
                        "bootstrap-t)",
}
# Each method's interval as a report names it: of one setting's score, and of the difference of two settings.
SCORE_INTERVAL_WORDS = {T_METHOD: "95% t interval", BOOTSTRAP_T_METHOD: "95% studentized bootstrap interval"}
DIFFERENCE_INTERVAL_WORDS = {T_METHOD: "Welch's 95% interval", BOOTSTRAP_T_METHOD: "95% studentized bootstrap interval"}
# From how many seeds per (setting, task) cell the bootstrap replaces the t interval. Simulated coverage of a nominal
# 95% interval of Table 1's mean over its 7 tasks, at the per-task means and spreads of clipping 0.1, no clipping and
# fixed KL 0.3 over the published seeds 0-2 (scripts/interval_coverage.py --draws 500, 2026-11-27: ±0.01; seeds drawn
# normal / skewed (lognormal) / bimodal (30% of runs failing)), range over the three settings:
#   seeds per cell               3                        5                        10
#   percentile (rliable's)   0.78-0.81/0.72-0.76/0.72-0.83  0.86-0.90/0.77-0.83/0.81-0.87  0.90-0.93/0.81-0.88/0.90-0.92
#   t (stratified_t_interval) 0.95/0.86-0.88/0.85-0.91     0.95-0.96/0.85-0.89/0.86-0.93  0.95-0.96/0.83-0.91/0.92-0.94
#   studentized (bootstrap-t) 0.96/0.91-0.93/0.87-0.94     0.94-0.97/0.89-0.91/0.94-0.97  0.94-0.96/0.88-0.94/0.95-0.98
# rliable's percentile bootstrap falls short of 95% at every count up to 10 (it shrinks each task's spread by
# (n - 1)/n and has no t tails), so the bootstrap here is the studentized one. It covers as well as the t interval
# with normal seeds and better with skewed or bimodal ones (failed runs, which the t interval assumes away). At 3 and
# 4 seeds it covers too, but by an erratic width: a cell has few distinct resamples (10 at 3 seeds, 35 at 4, 126 at
# 5) and many have almost no spread, so the standardised values have long tails. Its width over the t interval's, in
# the median normal draw: 1.10-1.31x at 3 seeds, 1.04-1.09x at 4, 1.02-1.07x at 5, 1.01-1.02x at 10; at the 90th
# percentile of bimodal draws (no clipping, the widest): 15x at 3, 7.9x at 4, 3.6x at 5, 1.4x at 10. 5 is a judgement
# on these numbers, not a sharp line: from 5 the width is within 7% of the t interval's in the median normal draw and
# the coverage at least the t interval's but for 0.008 (inside the ±0.01 of 500 draws); below 5 the t interval stays,
# with its stated assumption, and the reports say which method each table uses.
BOOTSTRAP_FROM = 5


def interval_method_for(min_seeds: int) -> str:
    """The interval method for a table whose smallest (setting, task) cell has ``min_seeds`` seeds:
    :data:`T_METHOD` below :data:`BOOTSTRAP_FROM`, :data:`BOOTSTRAP_T_METHOD` from it (the coverage reason is
    beside :data:`BOOTSTRAP_FROM`)."""
    return T_METHOD if min_seeds < BOOTSTRAP_FROM else BOOTSTRAP_T_METHOD


def _strata_arrays(strata: Sequence[Sequence[float] | np.ndarray]) -> list[np.ndarray]:
    arrays = [np.asarray(s, dtype=float).ravel() for s in strata]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("every stratum needs at least one value")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("values must be finite")
    return arrays


def stratified_t_interval(strata: Sequence[Sequence[float] | np.ndarray], confidence: float = 0.95) -> Difference:
    """Mean over strata (tasks) of each stratum's mean over its runs (seeds), with a t interval: the variance is
    each task's own variance over its seeds (ddof 1) divided by its seeds, summed, over the number of tasks
    squared; degrees of freedom by Welch–Satterthwaite. With one stratum it is :func:`t_interval`. Unlike a
    percentile bootstrap over 3 seeds per task (each task's spread shrunk by (n − 1)/n = 2/3), its coverage is the
    stated one when the per-task means are roughly normal. NaN bounds when a task has a single run."""
    arrays = _strata_arrays(strata)
    return _combined_t(arrays, [1.0] * len(arrays), len(arrays), confidence)


def stratified_welch(xs: Sequence[Sequence[float] | np.ndarray], ys: Sequence[Sequence[float] | np.ndarray],
                     confidence: float = 0.95) -> Difference:
    """Mean over strata of (mean of ``xs[t]`` − mean of ``ys[t]``) with Welch's interval: the two sides' runs are
    independent, each of the 2 × strata samples adds its own s²/n, degrees of freedom by Welch–Satterthwaite.
    With one stratum it is :func:`welch_difference` of the two samples. NaN bounds when a sample has a single run;
    zero width and infinite ``dof`` when no sample has any spread."""
    xs, ys = _strata_arrays(xs), _strata_arrays(ys)
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} strata against {len(ys)}")
    return _combined_t([*xs, *ys], [1.0] * len(xs) + [-1.0] * len(ys), len(xs), confidence)


def stratified_bootstrap_t(samples: Sequence[Sequence[float] | np.ndarray], signs: Sequence[float], n_strata: int,
                           n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> Difference:
    """Σ sign·mean(sample) / n_strata, the statistic of :func:`stratified_t_interval` (all signs +1) and
    :func:`stratified_welch` (+1 for one side's tasks, −1 for the other's), with a studentized bootstrap interval:
    every sample (one setting's seeds on one task) is resampled with replacement independently, ``n_resamples``
    times, each resample's statistic standardised by its own standard error, t* = (θ* − θ) / se*, and the interval
    is θ − q(1 − α/2)·se to θ − q(α/2)·se with se the data's standard error (Σ s²/n over the samples, / n_strata)
    and q the quantiles of t*. Resamples without spread in any sample (se* = 0, up to rounding) have no t* and are
    left out.
    ``dof`` is the Welch–Satterthwaite value of the data, for reference. NaN bounds when a sample has fewer than two
    values; zero width and infinite ``dof`` when no sample has any spread. The same ``seed`` gives the same
    interval."""
    return _bootstrap_t(samples, signs, n_strata, n_resamples, confidence, seed)[0]


def _bootstrap_t(samples: Sequence[Sequence[float] | np.ndarray], signs: Sequence[float], n_strata: int,
                 n_resamples: int, confidence: float, seed: int) -> tuple[Difference, float]:
    """:func:`stratified_bootstrap_t`'s interval and, from the same resamples, the two-sided p-value of "the statistic
    is 0" that the interval inverts: 2·min(P(t* ≥ t), P(t* ≤ t)) with t = θ / se, each tail counted as
    (1 + resamples beyond) / (1 + resamples), so it is never 0 and at least 2 / (1 + resamples). The interval at
    ``confidence`` excludes 0 when this p is below 1 − confidence (but for the quantiles' interpolation)."""
    arrays = _strata_arrays(samples)
    if len(arrays) != len(signs):
        raise ValueError(f"{len(arrays)} samples against {len(signs)} signs")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    base = _combined_t(arrays, signs, n_strata, confidence)
    if math.isnan(base.low) or math.isinf(base.dof):
        return base, _t_p(base, arrays, signs, n_strata)
    se = float(np.sqrt(sum(float(np.var(a, ddof=1)) / a.size for a in arrays)) / n_strata)
    rng = np.random.default_rng(seed)
    stat = np.zeros(n_resamples)
    var = np.zeros(n_resamples)
    for a, sign in zip(arrays, signs):
        drawn = a[rng.integers(0, a.size, (n_resamples, a.size))]
        stat += sign * drawn.mean(axis=1)
        var += drawn.var(axis=1, ddof=1) / a.size
    stat /= n_strata
    se_star = np.sqrt(var) / n_strata
    spread = se_star > 1e-9 * se  # a resample of identical values has no spread (its variance only rounding)
    t_star = (stat[spread] - base.point) / se_star[spread]
    if t_star.size < 2:
        return Difference(base.point, math.nan, math.nan, base.dof), math.nan
    alpha = (1.0 - confidence) / 2.0
    q_low, q_high = np.quantile(t_star, [alpha, 1.0 - alpha])
    t_zero = base.point / se
    tail = min(np.count_nonzero(t_star >= t_zero), np.count_nonzero(t_star <= t_zero))
    p = min(1.0, 2.0 * (1 + tail) / (1 + t_star.size))
    return Difference(base.point, float(base.point - q_high * se), float(base.point - q_low * se), base.dof), p


def _t_p(d: Difference, samples: Sequence[np.ndarray], signs: Sequence[float], n_strata: int) -> float:
    """The two-sided p-value of "the statistic is 0" that :func:`_combined_t`'s interval ``d`` inverts (Student's t
    at its Welch–Satterthwaite degrees of freedom); NaN where ``d`` has no interval, and 0 or 1 where no sample has
    spread (the data leave no doubt: the statistic is 0 or it is not)."""
    if math.isnan(d.dof):
        return math.nan
    if math.isinf(d.dof):
        return 1.0 if d.point == 0 else 0.0
    se = float(np.sqrt(sum(float(np.var(s, ddof=1)) / s.size for s in samples)) / n_strata)
    return float(2.0 * scipy.stats.t.sf(abs(d.point) / se, d.dof))


def _check_method(method: str) -> None:
    if method not in INTERVAL_METHODS:
        raise ValueError(f"interval method must be one of {list(INTERVAL_METHODS)}, got {method!r}")


def stratified_interval(strata: Sequence[Sequence[float] | np.ndarray], method: str = T_METHOD,
                        n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> Difference:
    """The mean over strata of each stratum's mean with ``method``'s interval (:data:`INTERVAL_METHODS`):
    :func:`stratified_t_interval` or :func:`stratified_bootstrap_t`."""
    _check_method(method)
    if method == T_METHOD:
        return stratified_t_interval(strata, confidence)
    return stratified_bootstrap_t(strata, [1.0] * len(strata), len(strata), n_resamples, confidence, seed)


def stratified_difference(xs: Sequence[Sequence[float] | np.ndarray], ys: Sequence[Sequence[float] | np.ndarray],
                          method: str = T_METHOD, n_resamples: int = 10_000, confidence: float = 0.95,
                          seed: int = 0) -> Difference:
    """Mean over strata of (mean of ``xs[t]`` − mean of ``ys[t]``) with ``method``'s interval: Welch's
    (:func:`stratified_welch`) or the studentized bootstrap resampling both sides' seeds independently within
    each stratum (:func:`stratified_bootstrap_t`)."""
    return stratified_difference_test(xs, ys, method, n_resamples, confidence, seed)[0]


def stratified_difference_test(xs: Sequence[Sequence[float] | np.ndarray], ys: Sequence[Sequence[float] | np.ndarray],
                               method: str = T_METHOD, n_resamples: int = 10_000, confidence: float = 0.95,
                               seed: int = 0) -> tuple[Difference, float]:
    """:func:`stratified_difference` and the two-sided p-value of "no difference" its interval inverts (Welch's t, or
    the studentized bootstrap's from the same resamples: :func:`_bootstrap_t`), for tests of many pairs at once
    (:func:`holm`)."""
    _check_method(method)
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} strata against {len(ys)}")
    signs = [1.0] * len(xs) + [-1.0] * len(ys)
    if method == T_METHOD:
        d = stratified_welch(xs, ys, confidence)
        return d, _t_p(d, _strata_arrays([*xs, *ys]), signs, len(xs))
    return _bootstrap_t([*xs, *ys], signs, len(xs), n_resamples, confidence, seed)


def holm(p_values: Sequence[float], family_level: float = 0.05) -> np.ndarray:
    """Holm's step-down test of m hypotheses (Holm 1979): sorted ascending, the k-th smallest p (k = 1..m) is rejected
    while it and every smaller one are at most family_level / (m − k + 1). The chance of rejecting any true
    hypothesis stays at most family_level whatever their dependence, and it rejects every hypothesis Bonferroni's
    p ≤ family_level / m does, and more. NaN p-values are never rejected and count in m. True where rejected, in the
    order given. (Five lines, so not worth statsmodels' multipletests as a dependency.)"""
    p = np.asarray(p_values, dtype=float)
    rejected = np.zeros(p.size, dtype=bool)
    for k, i in enumerate(np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")):
        if not p[i] <= family_level / (p.size - k):
            break
        rejected[i] = True
    return rejected


def below_by_holm(comparisons: Mapping[str, tuple[Sequence, Sequence]], method: str = T_METHOD,
                  n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0, family_level: float = 0.05,
                  margin: float = 0.0) -> tuple[list[str], dict[str, float]]:
    """The others one setting lies below, each tested against it with the error held over them all: ``comparisons``
    maps each other name to (the setting's strata, the other's strata) (:func:`stratified_difference_test`; one
    stratum per task, or one for a single task). Only an other with the higher mean can be above the setting, so the
    others below or level with it keep p = 1 (the two-sided p of the rest, as the pairwise tests use); Holm's test over
    all of them at ``family_level`` (:func:`holm`), and a difference smaller than ``margin`` is not called one. The
    bootstrap takes at least 4 · others / family_level resamples, so that its p can reach Holm's smallest threshold.
    Returns the names below, in the order given, and every other's p. For a setting chosen before the data (the
    paper's best); against a best picked from the same runs a single test errs far more often than 5%
    (scripts/interval_coverage.py --best)."""
    n_resamples = max(n_resamples, math.ceil(4 * len(comparisons) / family_level))
    p, gaps = {}, {}
    for name, (own, other) in comparisons.items():
        d, p_two_sided = stratified_difference_test(own, other, method, n_resamples, confidence, seed)
        gaps[name] = d.point
        p[name] = p_two_sided if d.point < 0 else 1.0
    rejected = holm(list(p.values()), family_level)
    return [name for name, r in zip(p, rejected) if r and gaps[name] <= -margin], p


def welch_samples(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                  confidence: float = 0.95) -> Difference:
    """mean(a) − mean(b) of two sets of independent runs (seeds) with Welch's interval (:func:`stratified_welch`
    with one stratum)."""
    return stratified_welch([a], [b], confidence)


IDENTICAL = "identical"


def difference_text(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, digits: int = 1,
                    confidence: float = 0.95) -> str:
    """mean(a) − mean(b) as a table prints it: ``identical`` for the same runs (:func:`same_runs`), else the
    difference and its Welch interval, ``+571.3 (+250.4 to +895.0)``; ``(no interval: one run)`` when a side has
    one run, ``(no spread on either side)`` when both are constant."""
    if same_runs(a, b):
        return IDENTICAL
    d = welch_samples(a, b, confidence)
    text = f"{d.point:+,.{digits}f}"
    if math.isnan(d.low):
        return f"{text} (no interval: one run)"
    if math.isinf(d.dof):
        return f"{text} (no spread on either side)"
    return f"{text} ({d.low:+,.{digits}f} to {d.high:+,.{digits}f})"


def interval_side(low: float, high: float) -> str:
    """Where a 95% interval of a difference lies: ``above 0``, ``below 0``, ``crosses 0`` (not distinguishable
    from no difference), or ``no interval`` (NaN bounds)."""
    if math.isnan(low) or math.isnan(high):
        return "no interval"
    return "above 0" if low > 0 else "below 0" if high < 0 else "crosses 0"


def range_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, lowest and highest value of each column of ``matrix`` (rows = runs), NaN rows left out: a learning
    curve's band over seeds drawn as what it is, the range of the seeds (a percentile bootstrap of 3 seeds gives
    exactly this range and calls it 95%). Columns with fewer than two runs get a NaN band."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError("matrix must be 2-D (runs x columns)")
    present = ~np.isnan(matrix)
    counts = present.sum(axis=0)
    total = np.where(present, matrix, 0.0).sum(axis=0)
    means = np.divide(total, counts, out=np.full(counts.shape, np.nan), where=counts > 0)
    low = np.where(present, matrix, np.inf).min(axis=0, initial=np.inf)
    high = np.where(present, matrix, -np.inf).max(axis=0, initial=-np.inf)
    two = counts >= 2
    return means, np.where(two, low, np.nan), np.where(two, high, np.nan)
