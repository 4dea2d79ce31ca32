"""Interval statistics after Agarwal et al. 2021 ("Deep RL at the edge of the statistical
precipice", the rliable definitions), rebuilt on scipy because rliable does not import
beside pandas 3.

The stratified bootstrap resamples runs with replacement *within* each task, so every
resample keeps the study's task mix; ``scipy.stats.bootstrap`` gives exactly that when
each task is passed as its own sample.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
