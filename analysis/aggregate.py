"""Aggregate metrics over tasks after Agarwal et al. 2021, with rliable's definitions.

Input is the per-run table of :func:`analysis.table1.normalize_scores` (columns
``task, variant, seed, normalized``): per task, random = 0 and the best setting = 1.
For one variant, with its runs on several tasks:

- **IQM**: the 25% trimmed mean of all its run scores pooled over tasks
  (``scipy.stats.trim_mean``: ``floor(n / 4)`` scores dropped from each end).
- **median**: the median over tasks of the per-task mean score (rliable's
  ``aggregate_median``; not the median of the pooled runs).
- **mean**: the mean of all run scores, i.e. Table 1's value. rliable averages the
  per-task means, which is the same number when every task has the same number of runs
  (its runs x tasks matrix assumes so).
- **optimality gap**: the mean over all runs of ``max(0, gamma - score)`` with
  ``gamma = 1`` (the best setting): how far below the best a variant falls; a score
  above 1 does not make up for another run's shortfall.
- **performance profile**: at each threshold ``tau``, the fraction of all runs with a
  score strictly greater than ``tau`` (rliable's run-score distribution).
- **probability of improvement** ``P(X > Y)``: per task, the chance that a random run of
  X scores above a random run of Y, ties counting 1/2 (the Mann-Whitney U statistic
  divided by ``n_x * n_y``), averaged over the tasks both variants ran.

Intervals are percentile stratified bootstraps (:func:`analysis.stats.stratified_bootstrap`):
runs are resampled with replacement within each task (rliable's ``StratifiedBootstrap``),
and for ``P(X > Y)`` the runs of X and of Y are resampled independently
(``StratifiedIndependentBootstrap``). Strata are the tasks in sorted order, runs in seed
order. With 3 seeds per task a percentile bootstrap shrinks each task's spread by (n − 1)/n = 2/3, so these
intervals run narrower than their stated 95%; they are kept for the statistics rliable defines by the bootstrap
(IQM, median, optimality gap, profiles, probability of improvement) and say so. The mean is Table 1's number:
``aggregate_metrics(..., mean_interval="t")`` gives it Table 1's t interval stratified over tasks
(:func:`analysis.stats.stratified_t_interval`), so one quantity has one interval on every page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from analysis.curves import new_figure, variant_colors
from analysis.stats import Interval, iqm, stratified_bootstrap, stratified_t_interval

GAMMA = 1.0
METRICS = ("iqm", "median", "mean", "optimality_gap")
REQUIRED = ("task", "variant", "seed", "normalized")


def _check(normalized: pd.DataFrame) -> None:
    """The columns every function here needs, with finite scores."""
    missing = [c for c in REQUIRED if c not in normalized.columns]
    if missing:
        raise KeyError(f"normalized scores lack columns {missing}")
    bad = normalized[~np.isfinite(normalized["normalized"].to_numpy(dtype=float))]
    if not bad.empty:
        row = bad.iloc[0]
        raise ValueError(f"non-finite normalized score for {row['task']} / {row['variant']} / seed {row['seed']}")


def _strata(normalized: pd.DataFrame, variant: str, tasks: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """One array of normalised scores per task (sorted), runs in seed order."""
    runs = normalized[normalized["variant"] == variant]
    if runs.empty:
        raise ValueError(f"no runs for variant {variant!r}; have {sorted(normalized['variant'].unique())}")
    runs = runs.sort_values(["task", "seed"], kind="stable")
    by_task = {t: g["normalized"].to_numpy(dtype=float) for t, g in runs.groupby("task", sort=True)}
    return by_task if tasks is None else {t: by_task[t] for t in tasks}


def _labels(normalized: pd.DataFrame) -> pd.Series:
    """variant -> display label (the variant name when there is no label column)."""
    if "variant_label" in normalized.columns:
        return normalized.groupby("variant")["variant_label"].first()
    names = sorted(normalized["variant"].unique())
    return pd.Series(names, index=names)


def _metric_values(parts: list[np.ndarray]) -> np.ndarray:
    """The four metrics of each resample: parts[t] is (B, runs of task t) -> (B, 4)."""
    pooled = np.concatenate(parts, axis=1)
    task_means = np.stack([p.mean(axis=1) for p in parts], axis=1)
    return np.stack(
        [
            iqm(pooled, axis=1),
            np.median(task_means, axis=1),
            pooled.mean(axis=1),
            np.maximum(GAMMA - pooled, 0.0).mean(axis=1),
        ],
        axis=1,
    )


MEAN_INTERVALS = ("bootstrap", "t")


def aggregate_metrics(
    normalized: pd.DataFrame, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
    mean_interval: str = "bootstrap",
) -> pd.DataFrame:
    """IQM, median, mean and optimality gap per variant, each with its interval.

    One row per variant (sorted by the mean, Table 1's statistic and order, best first) with ``variant``,
    ``variant_label``, ``n_tasks``, ``n_runs`` and, per metric ``m``, the columns ``m``, ``m_ci_low``,
    ``m_ci_high``. The metrics share the same resamples. ``mean_interval="t"`` replaces the mean's bootstrap
    interval by Table 1's t interval stratified over tasks (NaN when a task has a single run).
    """
    if mean_interval not in MEAN_INTERVALS:
        raise ValueError(f"mean_interval must be one of {MEAN_INTERVALS}, got {mean_interval!r}")
    _check(normalized)
    labels = _labels(normalized)
    rows = []
    for variant in sorted(normalized["variant"].unique()):
        by_task = _strata(normalized, variant)
        point, low, high = stratified_bootstrap(list(by_task.values()), _metric_values, n_resamples, confidence, seed)
        row = {
            "variant": variant,
            "variant_label": labels[variant],
            "n_tasks": len(by_task),
            "n_runs": sum(len(v) for v in by_task.values()),
        }
        for k, metric in enumerate(METRICS):
            row.update({metric: point[k], f"{metric}_ci_low": low[k], f"{metric}_ci_high": high[k]})
        if mean_interval == "t":
            t = stratified_t_interval(list(by_task.values()), confidence)
            row.update(mean=t.point, mean_ci_low=t.low, mean_ci_high=t.high)
        rows.append(row)
    out = pd.DataFrame(rows).sort_values(["mean", "variant"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def default_taus(normalized: pd.DataFrame, n: int = 101) -> np.ndarray:
    """``n`` thresholds from min(0, lowest score) to max(1, highest score)."""
    values = normalized["normalized"].to_numpy(dtype=float)
    return np.linspace(min(0.0, float(values.min())), max(GAMMA, float(values.max())), n)


def performance_profile(
    normalized: pd.DataFrame,
    taus: Sequence[float] | np.ndarray,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Fraction of runs scoring strictly above each ``tau``, per variant, with its band.

    Long format: ``variant, variant_label, tau, fraction, ci_low, ci_high``. The fraction
    is over all runs of the variant pooled across tasks; the band is the stratified
    bootstrap over those runs (rliable's default of 2,000 resamples).
    """
    _check(normalized)
    taus = np.asarray(taus, dtype=float).ravel()
    if taus.size == 0:
        raise ValueError("taus is empty")
    labels = _labels(normalized)

    def fraction_above(parts: list[np.ndarray]) -> np.ndarray:
        pooled = np.concatenate(parts, axis=1)
        return (pooled[:, np.newaxis, :] > taus[np.newaxis, :, np.newaxis]).mean(axis=2)

    frames = []
    for variant in sorted(normalized["variant"].unique()):
        strata = list(_strata(normalized, variant).values())
        point, low, high = stratified_bootstrap(
            strata, fraction_above, n_resamples, confidence, seed, cost_per_value=taus.size
        )
        frames.append(
            pd.DataFrame(
                {
                    "variant": variant,
                    "variant_label": labels[variant],
                    "tau": taus,
                    "fraction": point,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) with ties as 1/2 for batches: x is (B, n_x), y is (B, n_y) -> (B,)."""
    xs, ys = x[:, :, np.newaxis], y[:, np.newaxis, :]
    return (xs > ys).mean(axis=(1, 2)) + 0.5 * (xs == ys).mean(axis=(1, 2))


def probability_of_improvement(
    normalized: pd.DataFrame,
    x_variant: str,
    y_variant: str,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``P(X > Y)`` averaged over the tasks both variants ran, with its bootstrap interval."""
    _check(normalized)
    x_tasks = set(_strata(normalized, x_variant))
    y_tasks = set(_strata(normalized, y_variant))
    tasks = sorted(x_tasks & y_tasks)
    if not tasks:
        raise ValueError(f"variants {x_variant!r} and {y_variant!r} share no task")
    xs = list(_strata(normalized, x_variant, tasks).values())
    ys = list(_strata(normalized, y_variant, tasks).values())
    n = len(tasks)

    def average_improvement(parts: list[np.ndarray]) -> np.ndarray:
        return np.mean([_improvement(parts[t], parts[n + t]) for t in range(n)], axis=0)

    point, low, high = stratified_bootstrap(xs + ys, average_improvement, n_resamples, confidence, seed)
    return Interval(float(point), float(low), float(high))


def improvement_vs_anchor(
    normalized: pd.DataFrame,
    anchor: str = "clip_0.2",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """``P(variant > anchor)`` for every other variant: ``variant, anchor, p_improvement,
    ci_low, ci_high``, most likely improvement first."""
    _check(normalized)
    if anchor not in set(normalized["variant"]):
        raise ValueError(f"anchor variant {anchor!r} has no runs; have {sorted(normalized['variant'].unique())}")
    rows = []
    for variant in sorted(set(normalized["variant"]) - {anchor}):
        ci = probability_of_improvement(normalized, variant, anchor, n_resamples, confidence, seed)
        rows.append(
            {"variant": variant, "anchor": anchor, "p_improvement": ci.point, "ci_low": ci.low, "ci_high": ci.high}
        )
    out = pd.DataFrame(rows, columns=["variant", "anchor", "p_improvement", "ci_low", "ci_high"])
    out = out.sort_values(["p_improvement", "variant"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def plot_performance_profile(profile: pd.DataFrame, path: str | Path) -> Path:
    """One line per variant (fraction of runs > tau) with its band; saved with Agg."""
    variants = sorted(profile["variant"].unique())
    labels = profile.groupby("variant")["variant_label"].first()
    colors = variant_colors(variants)
    fig, (ax,) = new_figure((7.0, 4.8))
    for variant in variants:
        line = profile[profile["variant"] == variant]
        # Under strict ">" the profile keeps its value from one threshold up to the next.
        ax.plot(
            line["tau"], line["fraction"], color=colors[variant], lw=1.4, label=labels[variant], drawstyle="steps-post"
        )
        ax.fill_between(
            line["tau"], line["ci_low"], line["ci_high"], color=colors[variant], alpha=0.2, lw=0, step="post"
        )
    ax.axvline(GAMMA, color="0.4", lw=0.8, ls="--")
    ax.set_xlabel("normalised score τ (random = 0, best setting = 1)")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="lower left", fontsize="small", ncols=max(1, math.ceil(len(variants) / 6)))
    fig.suptitle("Performance profile over all runs and tasks, 95% stratified bootstrap band")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
