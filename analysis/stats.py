"""Interval statistics after Agarwal et al. 2021 ("Deep RL at the edge of the statistical
precipice", the rliable definitions), rebuilt on scipy because rliable does not import
beside pandas 3.

The stratified bootstrap resamples runs with replacement *within* each task, so every
resample keeps the study's task mix; ``scipy.stats.bootstrap`` gives exactly that when
each task is passed as its own sample. :func:`stratified_bootstrap` is the general form
(several values per resample, runs carrying whole curves, independent strata for
two-variant statistics) that :mod:`analysis.aggregate` and the sample-efficiency curve use.
"""

from __future__ import annotations

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
