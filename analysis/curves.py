"""Learning curves on a common grid, averaged over seeds, with the range of the seeds as their band.

Resampling rule (chosen so a point is always defined once a run has finished an
episode, whatever the episode lengths): the value of a run at grid point ``g`` is the
mean return of its last ``smooth`` (default 10) episodes that ended at or before ``g``
(fewer if it has fewer). It is a step function: no interpolation. It is NaN before the
run's first finished episode and after the run's end, where the end is the divergence
step for a diverged run, ``total_steps`` otherwise (x = steps), or the last episode's
``wall_time`` (x = wall time). Each task gets its own grid of ``n_points`` values from
0 to the largest end among its runs. Per (task, variant, grid point) the curve is the
mean over the runs that have a value there; its band is the lowest to the highest of those runs (the range of
the seeds: at 3 seeds a percentile bootstrap band is exactly this range, so it is drawn and named as one).

The sample-efficiency curve (:func:`sample_efficiency`) puts every task on one grid
(0 to the largest budget), normalises each run's curve with Table 1's per-task random
and best scores, and aggregates with the IQM over all runs and tasks at each grid point,
after Agarwal et al. 2021. It differs from the learning curves in one rule: a diverged
run keeps the value it had when it diverged up to its budget (``total_steps``), as
Table 1 scores it on the episodes it finished, so the aggregate does not lose its worst
runs late in training.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis.stats import iqm, range_columns, stratified_bootstrap

AXES = {"global_step": "environment steps", "wall_time": "wall-clock time (s)"}


def variant_colors(variants) -> dict[str, tuple[float, float, float]]:
    """The colour of each variant, the same in every figure (sorted names, tab10 or husl)."""
    names = sorted(set(variants))
    return dict(zip(names, sns.color_palette("husl" if len(names) > 10 else "tab10", len(names))))


def new_figure(figsize: tuple[float, float], nrows: int = 1, ncols: int = 1):
    """A white-grid figure on the Agg canvas (no pyplot global state) and its axes as a flat array."""
    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    return fig, axes


def run_curve(
    x: np.ndarray, returns: np.ndarray, grid: np.ndarray, smooth: int = 10, end: float = math.inf
) -> np.ndarray:
    """One run's curve: mean of the last ``smooth`` returns with ``x <= g`` for each ``g``."""
    if smooth < 1:
        raise ValueError(f"smooth must be >= 1, got {smooth}")
    order = np.argsort(x, kind="stable")
    x = np.asarray(x, dtype=float)[order]
    returns = np.asarray(returns, dtype=float)[order]
    csum = np.concatenate([[0.0], np.cumsum(returns)])
    last = np.searchsorted(x, grid, side="right")  # episodes counted at each grid point
    first = np.maximum(last - smooth, 0)
    count = last - first
    with np.errstate(invalid="ignore", divide="ignore"):
        values = (csum[last] - csum[first]) / count
    values[count == 0] = np.nan
    values[np.asarray(grid) > end] = np.nan
    return values


def _run_end(axis: str, manifest: pd.Series, run_x: np.ndarray) -> float:
    """Where a run's curve stops: divergence step, total_steps, or last episode time."""
    if axis == "wall_time":
        return float(run_x.max()) if run_x.size else 0.0
    diverged_at = manifest.get("diverged_at_step")
    if manifest.get("status") == "diverged" and diverged_at is not None and not pd.isna(diverged_at):
        return float(diverged_at)
    total = manifest.get("total_steps")
    if total is not None and not pd.isna(total):
        return float(total)
    return float(run_x.max()) if run_x.size else 0.0


def resample_runs(
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    x: str = "global_step",
    n_points: int = 100,
    smooth: int = 10,
) -> pd.DataFrame:
    """Every run's curve on its task's grid, long format (one row per run and grid point)."""
    if x not in AXES:
        raise ValueError(f"x must be one of {sorted(AXES)}, got {x!r}")
    finite = episodes[np.isfinite(episodes["episode_return"].to_numpy(dtype=float))]
    by_run = {run_id: g for run_id, g in finite.groupby("run_id", sort=False)}
    empty = finite.iloc[0:0]
    frames = []
    for task, runs in manifests.groupby("task", sort=True):
        ends = {
            row["run_id"]: _run_end(x, row, by_run.get(row["run_id"], empty)[x].to_numpy(dtype=float))
            for _, row in runs.iterrows()
        }
        grid = np.linspace(0.0, max(ends.values()), n_points)
        for _, row in runs.iterrows():
            eps = by_run.get(row["run_id"], empty)
            values = run_curve(
                eps[x].to_numpy(dtype=float), eps["episode_return"].to_numpy(dtype=float),
                grid, smooth, ends[row["run_id"]],
            )
            frames.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "variant": row["variant"],
                        "variant_label": row["variant_label"],
                        "run_id": row["run_id"],
                        "seed": row["seed"],
                        x: grid,
                        "value": values,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def aggregate_curves(
    per_run: pd.DataFrame, n_resamples: int = 2_000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Mean over runs per (task, variant, grid point); ``ci_low``/``ci_high`` are the lowest and highest run there
    (the range of the seeds; NaN with fewer than two). ``n_resamples``, ``confidence`` and ``seed`` are unused,
    kept for callers."""
    x = next(c for c in AXES if c in per_run.columns)
    frames = []
    for (task, variant), group in per_run.groupby(["task", "variant"], sort=True):
        matrix = group.pivot(index="run_id", columns=x, values="value")
        means, low, high = range_columns(matrix.to_numpy())
        frames.append(
            pd.DataFrame(
                {
                    "task": task,
                    "variant": variant,
                    "variant_label": group["variant_label"].iloc[0],
                    x: matrix.columns.to_numpy(dtype=float),
                    "mean": means,
                    "ci_low": low,
                    "ci_high": high,
                    "n_runs": matrix.notna().sum(axis=0).to_numpy(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def learning_curves(
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    x: str = "global_step",
    n_points: int = 100,
    smooth: int = 10,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Seed-averaged learning curves with the seeds' range as band (see module docstring)."""
    per_run = resample_runs(episodes, manifests, x, n_points, smooth)
    return aggregate_curves(per_run, n_resamples, confidence, seed)


def _plot(curves: pd.DataFrame, path: str | Path, x: str, title: str) -> Path:
    """One panel per task, one line per variant with its band; saved with Agg."""
    if x not in curves.columns:
        raise ValueError(f"curves have no {x!r} column; compute them with x={x!r}")
    tasks = sorted(curves["task"].unique())
    variants = sorted(curves["variant"].unique())
    labels = curves.groupby("variant")["variant_label"].first()
    colors = variant_colors(variants)
    ncols = min(4, len(tasks))
    nrows = math.ceil(len(tasks) / ncols)
    fig, axes = new_figure((4.2 * ncols, 3.2 * nrows + 0.9), nrows, ncols)
    for ax, task in zip(axes, tasks):
        for variant in variants:
            line = curves[(curves["task"] == task) & (curves["variant"] == variant)]
            if line.empty:
                continue
            ax.plot(line[x], line["mean"], color=colors[variant], lw=1.4, label=labels[variant])
            ax.fill_between(line[x], line["ci_low"], line["ci_high"], color=colors[variant], alpha=0.2, lw=0)
        ax.set_title(task)
        ax.set_xlabel(AXES[x])
        ax.set_ylabel("episode return")
    for ax in axes[len(tasks):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colors[v], lw=2, label=labels[v]) for v in variants]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(variants)), fontsize="small")
    fig.suptitle(title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


CURVES_TITLE = "Mean over seeds of the last-10-episode return, band: range of the seeds"


def plot_curves(curves: pd.DataFrame, path: str | Path, title: str = CURVES_TITLE) -> Path:
    """Learning curves over environment steps (curves computed with x='global_step')."""
    return _plot(curves, path, "global_step", title)


def plot_curves_walltime(curves: pd.DataFrame, path: str | Path) -> Path:
    """Learning curves over wall-clock time (curves computed with x='wall_time')."""
    return _plot(curves, path, "wall_time", "Return vs wall-clock time, mean over seeds, band: range of the seeds")


def _budget(manifest: pd.Series, run_x: np.ndarray) -> float:
    """Steps a run was meant to train: ``total_steps``, else its last episode's step."""
    total = manifest.get("total_steps")
    if total is not None and not pd.isna(total):
        return float(total)
    return float(run_x.max()) if run_x.size else 0.0


def _iqm_over_runs(parts: list[np.ndarray]) -> np.ndarray:
    """IQM over all runs of all tasks: parts[t] is (B, runs, grid points) -> (B, grid points)."""
    return iqm(np.concatenate(parts, axis=1), axis=1)


def sample_efficiency(
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    normalized: pd.DataFrame,
    n_points: int = 100,
    smooth: int = 10,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """IQM normalised score vs environment steps per variant, with a stratified bootstrap band.

    ``normalized`` is :func:`analysis.table1.normalize_scores` output; its per-task
    ``random_score`` and ``best_score`` scale every run's curve (a run's value at step
    ``g`` is the mean return of its last ``smooth`` episodes ended by ``g``; see the
    module docstring for the end of a run). At each grid point the IQM pools the runs
    that have a value there; it is NaN unless every task the variant ran has at least
    one, so the task mix is the same all along the curve. The band resamples those runs
    within each task, whole curves at a time (rliable's sample-efficiency curves).

    Returns ``variant, variant_label, global_step, iqm, ci_low, ci_high, n_runs`` where
    ``n_runs`` counts the runs with a value at that step.
    """
    missing = [c for c in ("task", "random_score", "best_score") if c not in normalized.columns]
    if missing:
        raise KeyError(f"normalized scores lack columns {missing}")
    scale = normalized.groupby("task")[["random_score", "best_score"]].first()
    unknown = sorted(set(manifests["task"]) - set(scale.index))
    if unknown:
        raise KeyError(f"no random/best score for tasks {unknown}; have {sorted(scale.index)}")
    finite = episodes[np.isfinite(episodes["episode_return"].to_numpy(dtype=float))]
    by_run = {run_id: g for run_id, g in finite.groupby("run_id", sort=False)}
    empty = finite.iloc[0:0]
    budgets = {
        row["run_id"]: _budget(row, by_run.get(row["run_id"], empty)["global_step"].to_numpy(dtype=float))
        for _, row in manifests.iterrows()
    }
    grid = np.linspace(0.0, max(budgets.values()), n_points)
    labels = manifests.groupby("variant")["variant_label"].first()
    frames = []
    for variant, runs in manifests.groupby("variant", sort=True):
        curves_by_task = []
        for task, task_runs in runs.groupby("task", sort=True):
            random_score, best_score = scale.loc[task, "random_score"], scale.loc[task, "best_score"]
            rows = []
            for _, run in task_runs.sort_values("seed", kind="stable").iterrows():
                eps = by_run.get(run["run_id"], empty)
                values = run_curve(
                    eps["global_step"].to_numpy(dtype=float), eps["episode_return"].to_numpy(dtype=float),
                    grid, smooth, budgets[run["run_id"]],
                )
                rows.append((values - random_score) / (best_score - random_score))
            curves_by_task.append(np.vstack(rows))
        present = [~np.isnan(c) for c in curves_by_task]
        n_runs = sum(p.sum(axis=0) for p in present)
        covered = np.logical_and.reduce([p.any(axis=0) for p in present])
        point = np.full(n_points, np.nan)
        low = np.full(n_points, np.nan)
        high = np.full(n_points, np.nan)
        pattern_of = np.vstack(present).T  # grid point -> which runs have a value
        patterns, inverse = np.unique(pattern_of[covered], axis=0, return_inverse=True)
        covered_cols = np.flatnonzero(covered)
        for k in range(len(patterns)):
            cols = covered_cols[inverse.ravel() == k]
            strata = [c[p[:, cols[0]]][:, cols] for c, p in zip(curves_by_task, present)]
            point[cols], low[cols], high[cols] = stratified_bootstrap(
                strata, _iqm_over_runs, n_resamples, confidence, seed
            )
        frames.append(
            pd.DataFrame(
                {
                    "variant": variant,
                    "variant_label": labels[variant],
                    "global_step": grid,
                    "iqm": point,
                    "ci_low": low,
                    "ci_high": high,
                    "n_runs": n_runs,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def plot_sample_efficiency(curve: pd.DataFrame, path: str | Path) -> Path:
    """IQM normalised score vs environment steps, one line and band per variant; saved with Agg."""
    variants = sorted(curve["variant"].unique())
    labels = curve.groupby("variant")["variant_label"].first()
    colors = variant_colors(variants)
    fig, (ax,) = new_figure((7.0, 4.8))
    for variant in variants:
        line = curve[curve["variant"] == variant]
        ax.plot(line["global_step"], line["iqm"], color=colors[variant], lw=1.4, label=labels[variant])
        ax.fill_between(line["global_step"], line["ci_low"], line["ci_high"], color=colors[variant], alpha=0.2, lw=0)
    for level in (0.0, 1.0):
        ax.axhline(level, color="0.4", lw=0.8, ls="--")
    ax.set_xlabel(AXES["global_step"])
    ax.set_ylabel("IQM normalised score (random = 0, best = 1)")
    ax.legend(loc="upper left", fontsize="small", ncols=max(1, math.ceil(len(variants) / 6)))
    fig.suptitle("Sample efficiency: IQM over runs and tasks, 95% stratified bootstrap band")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
