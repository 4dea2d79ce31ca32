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
(:func:`analysis.stats.stratified_t_interval`), ``mean_interval="bootstrap-t"`` Table 1's interval from 5 seeds per
task (:func:`analysis.stats.stratified_bootstrap_t`), so one quantity has one interval on every page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from analysis.curves import variant_order
from analysis.stats import BOOTSTRAP_T_METHOD, T_METHOD, Interval, iqm, stratified_bootstrap, stratified_interval
from analysis.style import (FONTS, draw_legend, legend_columns, legend_size, legible, new_figure,
                            panel_figure, save, variant_styles, wrap_title)

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


MEAN_INTERVALS = ("bootstrap", T_METHOD, BOOTSTRAP_T_METHOD)


def aggregate_metrics(
    normalized: pd.DataFrame, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
    mean_interval: str = "bootstrap",
) -> pd.DataFrame:
    """IQM, median, mean and optimality gap per variant, each with its interval.

    One row per variant (sorted by the mean, Table 1's statistic and order, best first) with ``variant``,
    ``variant_label``, ``n_tasks``, ``n_runs`` and, per metric ``m``, the columns ``m``, ``m_ci_low``,
    ``m_ci_high``. The metrics share the same resamples. ``mean_interval="t"`` (or ``"bootstrap-t"``) replaces the
    mean's percentile bootstrap interval by Table 1's t interval stratified over tasks (NaN when a task has a single
    run), or by its studentized bootstrap (:data:`analysis.stats.INTERVAL_METHODS`).
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
        if mean_interval != "bootstrap":
            t = stratified_interval(list(by_task.values()), mean_interval, n_resamples, confidence, seed)
            row.update(mean=t.point, mean_ci_low=t.low, mean_ci_high=t.high)
        rows.append(row)
    out = pd.DataFrame(rows).sort_values(["mean", "variant"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def tau_scale(normalized: pd.DataFrame) -> float:
    """The distance below the best (1) within which the performance profile's τ axis is about linear (beyond it,
    logarithmic in the distance): the median of ``1 − score`` over the runs that score below 1, kept within
    [0.01, 0.5] (0.1 when no run is below 1). Scores that crowd just under 1 (easy tasks) get a wide axis there;
    scores spread over 0 to 1 keep an axis close to linear."""
    values = normalized["normalized"].to_numpy(dtype=float)
    below = GAMMA - values[values < GAMMA]
    return float(np.clip(np.median(below), 0.01, 0.5)) if below.size else 0.1


def tau_transform(scale: float):
    """(forward, inverse) of the profile's τ axis: τ -> −sign(1 − τ) · log(1 + |1 − τ| / scale), increasing in τ,
    about linear within ``scale`` of 1 and logarithmic in the distance from 1 beyond it."""
    def forward(tau):
        d = GAMMA - np.asarray(tau, dtype=float)
        return -np.sign(d) * np.log1p(np.abs(d) / scale)

    def inverse(y):
        y = np.asarray(y, dtype=float)
        return GAMMA + np.sign(y) * scale * np.expm1(np.abs(y))
    return forward, inverse


def default_taus(normalized: pd.DataFrame, n: int = 101, scale: float | None = None) -> np.ndarray:
    """``n`` thresholds from min(0, lowest score) to max(1, highest score), evenly spaced on the profile's τ axis
    (:func:`tau_transform` with ``scale``, by default :func:`tau_scale`), so it is as fine near 1 as the axis."""
    values = normalized["normalized"].to_numpy(dtype=float)
    low, high = min(0.0, float(values.min())), max(GAMMA, float(values.max()))
    forward, inverse = tau_transform(tau_scale(normalized) if scale is None else scale)
    taus = inverse(np.linspace(forward(low), forward(high), n))
    taus[0], taus[-1] = low, high
    return taus


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


TAU_TICKS = (1.0, 0.0, 0.5, 0.9, 0.99, -1.0, 1.1, 0.75, 0.95, 0.25, 1.05, 1.5, -0.5, 0.98, 1.2, 2.0, -2.0, 0.999,
             0.995, 1.01, 1.02, 3.0, -5.0)  # the τ axis' ticks, the first that fit first


def tau_ticks(low: float, high: float, scale: float, n: int = 9) -> list[float]:
    """Up to ``n`` ticks of :data:`TAU_TICKS` within [low, high], none closer than a tenth of the axis to another."""
    forward, _ = tau_transform(scale)
    span = float(forward(high) - forward(low))
    chosen: list[float] = []
    for tick in TAU_TICKS:
        if low <= tick <= high and all(abs(float(forward(tick) - forward(c))) >= span / 10 for c in chosen):
            chosen.append(tick)
        if len(chosen) == n:
            break
    return sorted(chosen)


@legible
def draw_performance_profile(profile: pd.DataFrame, scale: float, anchor: str | None = None) -> Figure:
    """Fraction of runs scoring above τ, a step line per variant with its band, coloured by family, on the τ axis
    of :func:`tau_transform` with ``scale``. With settings of several families, a panel per family (small
    multiples: every band readable), the ``anchor`` drawn in each; the legend below the panels."""
    styles = variant_styles(profile["variant"].unique(), anchor)
    variants = variant_order(profile["variant"].unique(), styles)
    labels = profile.groupby("variant")["variant_label"].first().to_dict()
    groups = list(dict.fromkeys(styles[v].family for v in variants))
    columns = legend_columns(variants, labels, styles)
    panels = panel_figure(len(groups), legend_size(columns), panel_height=4.0 if len(groups) == 1 else 2.9,
                          ncols=2 if len(groups) > 1 else None, title_lines=2)
    forward, inverse = tau_transform(scale)
    low, high = float(profile["tau"].min()), float(profile["tau"].max())
    for k, (ax, group) in enumerate(zip(panels.axes, groups)):
        ax.set_xscale("function", functions=(forward, inverse))
        shown = [v for v in variants if styles[v].family == group or v == anchor]
        for variant in shown:
            line = profile[profile["variant"] == variant]
            # Under strict ">" the profile keeps its value from one threshold up to the next.
            ax.plot(line["tau"], line["fraction"], drawstyle="steps-post", **styles[variant].line())
            ax.fill_between(line["tau"], line["ci_low"], line["ci_high"], color=styles[variant].color, lw=0,
                            step="post", alpha=0.2 if variant == anchor else 0.15)
        ax.set_xlim(low, high)
        ax.xaxis.set_major_locator(FixedLocator(tau_ticks(low, high, scale)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.axvline(GAMMA, color="0.4", lw=0.8, ls="--")
        ax.set_ylim(-0.02, 1.02)
        if len(groups) > 1:
            ax.set_title(group if anchor is None or styles[anchor].family == group
                         else f"{group}, with {labels.get(anchor, anchor)}")
        ax.set_xlabel("normalised score τ")
        ax.set_ylabel("fraction of runs > τ" if k % (2 if len(groups) > 1 else 1) == 0 else "")
    draw_legend(panels.legend_ax, columns, loc="center")
    panels.fig.suptitle(wrap_title(
        "Performance profile over all runs and tasks, 95% stratified bootstrap band\n"
        f"τ: random = 0, best setting = 1; the axis is linear within {scale:.2g} of 1 and logarithmic in the distance "
        "from 1 beyond", panels.fig.get_figwidth()))
    return panels.fig


def plot_performance_profile(profile: pd.DataFrame, path: str | Path, scale: float = 0.1,
                             anchor: str | None = None) -> Path:
    """:func:`draw_performance_profile` saved as PNG."""
    return save(draw_performance_profile(profile, scale, anchor), path)


INTERVAL_PANELS = (("iqm", "IQM"), ("median", "Median"), ("mean", "Mean"), ("optimality_gap", "Optimality gap"))


def interval_method(n_resamples: int, mean_interval: str = "t", improvement: bool = True,
                    seeds: str = "3 seeds") -> str:
    """The sentence a figure of :func:`draw_interval_estimates` states its intervals with; ``seeds`` says how many
    seeds per task the runs have (:meth:`analysis.seeds.SeedCounts.short`)."""
    mean = {T_METHOD: "mean: Student t interval stratified over tasks (Table 1's)",
            BOOTSTRAP_T_METHOD: "mean: studentized bootstrap stratified over tasks (Table 1's)"}.get(
        mean_interval, "mean: as the others")
    others = "IQM, median, optimality gap" + (" and P(X > anchor)" if improvement else "")
    return (f"95% intervals. {others}: percentile bootstrap over runs stratified by task ({n_resamples:,} "
            f"resamples; narrower than 95% at {seeds}); {mean}.")


INTERVALS_TITLE = "Aggregate normalised score per setting (random = 0, best setting = 1)"


@legible
def draw_interval_estimates(aggregates: pd.DataFrame, improvement: pd.DataFrame | None = None,
                            anchor: str | None = None, method: str = "", title: str = INTERVALS_TITLE) -> Figure:
    """rliable's interval estimates: a row per variant (in ``aggregates``' order, best mean first), a panel per
    metric of :data:`INTERVAL_PANELS` (``aggregate_metrics`` columns ``m``, ``m_ci_low``, ``m_ci_high``): the
    interval as a bar in the variant's family colour, the point estimate as a black tick; with ``improvement``
    (:func:`improvement_vs_anchor`) a last panel of P(variant > anchor). ``method`` (:func:`interval_method`) is
    the figure's title line after ``title``. The anchor's label is bold."""
    rows = aggregates.reset_index(drop=True)
    styles = variant_styles(rows["variant"], anchor)
    panels = list(INTERVAL_PANELS) + ([("p_improvement", "P(X > anchor)")] if improvement is not None else [])
    height = 0.3 * len(rows) + 1.6
    fig, axes = new_figure((11.0, height), 1, len(panels))
    y = np.arange(len(rows))[::-1]
    for ax, (metric, name) in zip(axes, panels):
        if metric == "p_improvement":
            p = improvement.set_index("variant")
            values = [p.loc[v, ["p_improvement", "ci_low", "ci_high"]].to_numpy(dtype=float) if v in p.index
                      else np.full(3, np.nan) for v in rows["variant"]]
            ax.axvline(0.5, color="0.4", lw=0.8, ls="--")
            ax.set_xlim(0, 1)
        else:
            values = rows[[metric, f"{metric}_ci_low", f"{metric}_ci_high"]].to_numpy(dtype=float)
        for k, (variant, (point, low, high)) in enumerate(zip(rows["variant"], values)):
            color = styles[variant].color
            if np.isfinite(low) and np.isfinite(high):
                ax.barh(y[k], high - low, left=low, height=0.6, color=color, alpha=0.85 if variant == anchor else 0.6,
                        lw=0)
            if np.isfinite(point):
                ax.plot([point, point], [y[k] - 0.3, y[k] + 0.3], color="black", lw=1.6)
            elif metric == "p_improvement" and variant == anchor:
                ax.text(0.5, y[k], "anchor", ha="center", va="center", color="0.3", fontsize=FONTS["xtick.labelsize"])
        ax.set_title(name)
        ax.set_yticks(y)
        ax.set_yticklabels(rows["variant_label"] if ax is axes[0] else [])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.grid(axis="y", visible=False)
        ax.xaxis.set_major_locator(MaxNLocator(4))
    for label, variant in zip(axes[0].get_yticklabels(), rows["variant"]):
        if variant == anchor:
            label.set_fontweight("bold")
    axes[0].set_xlabel("normalised score")
    fig.suptitle(wrap_title(title + (f"\n{method}" if method else ""), fig.get_figwidth()))
    return fig


def plot_interval_estimates(aggregates: pd.DataFrame, path: str | Path, improvement: pd.DataFrame | None = None,
                            anchor: str | None = None, method: str = "", title: str = INTERVALS_TITLE) -> Path:
    """:func:`draw_interval_estimates` saved as PNG."""
    return save(draw_interval_estimates(aggregates, improvement, anchor, method, title), path)
