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
import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, MaxNLocator

from analysis.stats import iqm, range_columns, stratified_bootstrap
from analysis.style import (FAMILIES, FONTS, PAGE_WIDTH_IN, Style, add_axes, blank_figure, draw_legend, family_of,
                            legend_columns, legend_size, legible, panel_figure, save, variant_styles, wrap_title)

AXES = {"global_step": "environment steps", "wall_time": "wall-clock time (s)"}
RANDOM_STYLE = {"color": "0.35", "lw": 1.3, "ls": (0, (1, 1.5)), "zorder": 1.5}


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


def variant_order(variants, styles: dict[str, Style] | None = None) -> list[str]:
    """Variants in the legend's order: family by family (:data:`analysis.style.FAMILIES`), each by its parameter,
    then the others by name."""
    rank = {f.name: k for k, f in enumerate(FAMILIES)}

    def key(v):
        family = styles[v].family if styles else family_of(v)
        number = re.search(r"([0-9]+(?:\.[0-9]+)?)$", v)
        return (rank.get(family, len(rank)), family, float(number.group(1)) if number else 0.0, v)
    return sorted(set(variants), key=key)


def step_axis(ax, x: str = "global_step") -> None:
    """Environment steps as 0, 250k, 500k, 1M (no 1e6 offset), at most 5 ticks; wall time as it is."""
    if x == "global_step":
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.xaxis.set_major_locator(MaxNLocator(5))


def seed_and_mean_lines(ax, runs: pd.DataFrame, x: str, style: Style, label: str | None = None) -> None:
    """One thin line per run (``run_id``) and, thick over them, their mean where at least one has a value."""
    matrix = runs.pivot(index="run_id", columns=x, values="value")
    steps = matrix.columns.to_numpy(dtype=float)
    values = matrix.to_numpy(dtype=float)
    for row in values:
        ax.plot(steps, row, **style.seed_line())
    with np.errstate(invalid="ignore"):
        present = np.isfinite(values).any(axis=0)
        mean = np.full(len(steps), np.nan)
        mean[present] = np.nanmean(values[:, present], axis=0)
    ax.plot(steps, mean, label=label, **style.line())


REFERENCES = "References"  # the legend's heading of the runs drawn beside a study's own
SB3_STYLE = Style("black", 1.8, "--", 2.6, REFERENCES)


def beside_style(variant: str) -> Style:
    """How a run of another study drawn beside this one's looks: ``variant``'s family colour as an anchor's,
    dashed, under the study's anchor."""
    own = variant_styles([variant], variant)[variant]
    return Style(own.color, 2.0, "--", 2.8, REFERENCES)


def _env(task: str) -> str:
    return re.sub(r"-v[0-9]+$", "", task)


def beside_runs(episodes: pd.DataFrame, manifests: pd.DataFrame, tasks, total_steps: int | None = None
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs of another study (e.g. Table 1's ε = 0.2, which a check is about) made ready to draw beside a study
    of ``tasks``: each run's task mapped onto the study's task of the same environment (HalfCheetah-v5 onto
    HalfCheetah-v4), runs of other environments or of another ``total_steps`` left out, each variant renamed
    ``<variant>@<study>`` and labelled "<label>: <study> (<task versions>)"."""
    by_env = {_env(t): t for t in tasks}
    keep = manifests[manifests["task"].map(_env).isin(by_env)]
    if total_steps is not None and "total_steps" in keep.columns:
        keep = keep[pd.to_numeric(keep["total_steps"], errors="coerce") == total_steps]
    keep = keep.copy()
    versions = ", ".join(sorted({t.rsplit("-", 1)[-1] for t in keep["task"]}))
    study = keep["study"].astype(str) if "study" in keep.columns else pd.Series("other study", index=keep.index)
    keep["variant_label"] = keep["variant_label"] + ": " + study + f" ({versions})"
    keep["variant"] = keep["variant"] + "@" + study
    keep["task"] = keep["task"].map(_env).map(by_env)
    renamed = keep.set_index("run_id")[["task", "variant", "variant_label"]]
    eps = episodes[episodes["run_id"].isin(renamed.index)].drop(columns=["task", "variant", "variant_label"],
                                                               errors="ignore")
    eps = eps.join(renamed, on="run_id")
    return eps, keep.reset_index(drop=True)


def identical_tasks(ours: pd.DataFrame, other: pd.DataFrame) -> list[str]:
    """The tasks on which two sets of per-run curves (:func:`resample_runs` output, one variant each) hold the same
    seeds with the same values at every grid point: drawn together, one hides the other."""
    same = []
    for task in sorted(set(ours["task"]) & set(other["task"])):
        a, b = (frame[frame["task"] == task].pivot(index="seed", columns=next(c for c in AXES if c in frame.columns),
                                                   values="value") for frame in (ours, other))
        if a.shape == b.shape and list(a.index) == list(b.index) and np.array_equal(a.to_numpy(), b.to_numpy(),
                                                                                     equal_nan=True):
            same.append(task)
    return same


CURVES_TITLE = "Return (mean of the last 10 episodes): mean over seeds, thick; each seed, thin"


@legible
def draw_curves(per_run: pd.DataFrame, x: str = "global_step", title: str = CURVES_TITLE, anchor: str | None = None,
                random_scores: pd.Series | None = None, styles: dict[str, Style] | None = None, note: str = "",
                ylabel: str = "episode return") -> Figure:
    """One panel per task; per variant a thin line per seed and a thick line for their mean (no band: at 3 seeds
    a band is the seeds' range, which the seeds' own lines show), coloured by family with ``anchor`` emphasised
    (:func:`analysis.style.variant_styles`; ``styles`` overrides a variant's, e.g. a reference drawn beside the
    study's runs); the random policy's score dotted where ``random_scores`` has the task; ``note`` under the
    panels. ``per_run`` is :func:`resample_runs` output."""
    if x not in per_run.columns:
        raise ValueError(f"curves have no {x!r} column; compute them with x={x!r}")
    tasks = sorted(per_run["task"].unique())
    styles = {**variant_styles(per_run["variant"].unique(), anchor), **(styles or {})}
    variants = variant_order(per_run["variant"].unique(), styles)
    labels = per_run.groupby("variant")["variant_label"].first().to_dict()
    random_shown = random_scores is not None and any(t in random_scores.index for t in tasks)
    extra = [("random policy", Line2D([], [], **RANDOM_STYLE))] if random_shown else []
    columns = legend_columns(variants, labels, styles, extra)
    panels = panel_figure(len(tasks), legend_size(columns), panel_height=3.4 if len(tasks) == 1 else 2.7,
                          title_lines=len(title.splitlines()) + 1)
    for k, (ax, task) in enumerate(zip(panels.axes, tasks)):
        for variant in variants:
            runs = per_run[(per_run["task"] == task) & (per_run["variant"] == variant)]
            if not runs.empty:
                seed_and_mean_lines(ax, runs, x, styles[variant])
        if random_shown and task in random_scores.index:
            ax.axhline(float(random_scores[task]), **RANDOM_STYLE)
        ax.set_title(task)
        step_axis(ax, x)
        ax.set_xlabel(AXES[x])
        ax.set_ylabel(ylabel if k % _ncols(panels) == 0 else "")
    draw_legend(panels.legend_ax, columns, loc="center")
    if note:
        size = FONTS["font.size"]
        panels.fig.supxlabel(wrap_title(note, panels.fig.get_figwidth(), size), fontsize=size, x=0.01, ha="left")
    panels.fig.suptitle(wrap_title(title, panels.fig.get_figwidth()))
    return panels.fig


def _ncols(panels) -> int:
    """The number of panel columns of ``panels`` (its grid spec's)."""
    return panels.axes[0].get_subplotspec().get_gridspec().ncols


def plot_curves(per_run: pd.DataFrame, path: str | Path, title: str = CURVES_TITLE, **kwargs) -> Path:
    """:func:`draw_curves` saved as PNG."""
    return save(draw_curves(per_run, title=title, **kwargs), path)


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


@legible
def draw_sample_efficiency(curve: pd.DataFrame, anchor: str | None = None) -> Figure:
    """IQM normalised score vs environment steps, one line per variant coloured by family (``anchor``
    emphasised) with its stratified bootstrap band; the legend below the panel."""
    styles = variant_styles(curve["variant"].unique(), anchor)
    variants = variant_order(curve["variant"].unique(), styles)
    labels = curve.groupby("variant")["variant_label"].first().to_dict()
    columns = legend_columns(variants, labels, styles)
    panels = panel_figure(1, legend_size(columns), panel_height=4.0, title_lines=2)
    ax = panels.axes[0]
    for variant in variants:
        line = curve[curve["variant"] == variant]
        ax.plot(line["global_step"], line["iqm"], **styles[variant].line())
        ax.fill_between(line["global_step"], line["ci_low"], line["ci_high"], color=styles[variant].color,
                        alpha=0.25 if variant == anchor else 0.1, lw=0)
    for level in (0.0, 1.0):
        ax.axhline(level, color="0.4", lw=0.8, ls="--")
    step_axis(ax)
    ax.set_xlabel(AXES["global_step"])
    ax.set_ylabel("IQM normalised score\n(random = 0, best setting = 1)")
    draw_legend(panels.legend_ax, columns, loc="center")
    panels.fig.suptitle(wrap_title("Sample efficiency: IQM over runs and tasks, 95% stratified bootstrap band",
                                   panels.fig.get_figwidth()))
    return panels.fig


def plot_sample_efficiency(curve: pd.DataFrame, path: str | Path, anchor: str | None = None) -> Path:
    """:func:`draw_sample_efficiency` saved as PNG."""
    return save(draw_sample_efficiency(curve, anchor), path)


# The per-update statistics the diagnostics figure shows: (updates.parquet column, panel heading, y scale).
DIAGNOSTICS = (("approx_kl", "approx KL", "log"), ("clipfrac", "clip fraction", "linear"),
               ("entropy", "policy entropy", "linear"), ("explained_variance", "explained variance", "linear"))
DIAGNOSTICS_TITLE = "Per update, mean over seeds (each run's updates averaged in 50 bins of environment steps)"
DIAGNOSTICS_NOTE = ("approx KL: mean over the update's minibatch steps of (r − 1) − log r; clip fraction: share of "
                    "samples with |r − 1| > ε (clipping settings only); policy entropy in nats; "
                    "explained variance of the returns by the value function (1 is perfect, 0 no better than their "
                    "mean; cut at −1).")


def update_curves(updates: pd.DataFrame, stats=tuple(s for s, _, _ in DIAGNOSTICS), n_points: int = 50) -> pd.DataFrame:
    """Every run's per-update ``stats`` averaged in ``n_points`` equal bins of environment steps (each task's own,
    from 0 to its last update), non-finite values left out. Long format: ``task, variant, variant_label, run_id,
    seed, stat, global_step`` (the bin's right edge) and ``value`` (NaN where a bin has no finite value)."""
    present = [s for s in stats if s in updates.columns]
    frames = []
    for task, rows in updates.groupby("task", sort=True):
        edges = np.linspace(0.0, float(rows["global_step"].max()), n_points + 1)
        bins = np.clip(np.searchsorted(edges, rows["global_step"].to_numpy(dtype=float), side="left"), 1, n_points)
        keys = ["task", "variant", "variant_label", "run_id", "seed"]
        values = rows[keys + present].copy()
        for stat in present:
            column = values[stat].to_numpy(dtype=float)
            values[stat] = np.where(np.isfinite(column), column, np.nan)
        values["global_step"] = edges[bins]
        means = values.groupby(keys + ["global_step"], sort=True)[present].mean().reset_index()
        frames.append(means.melt(id_vars=keys + ["global_step"], value_vars=present, var_name="stat"))
    columns = ["task", "variant", "variant_label", "run_id", "seed", "stat", "global_step", "value"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


@legible
def draw_diagnostics(curves: pd.DataFrame, anchor: str | None = None, title: str = "", panels=DIAGNOSTICS,
                     note: str = DIAGNOSTICS_NOTE) -> Figure:
    """A row per task, a column per statistic of ``panels`` ((stat, heading, "log" or "linear"), as
    :data:`DIAGNOSTICS`) drawn from ``curves`` (:func:`update_curves` output): per variant the mean over its seeds,
    coloured by family with ``anchor`` emphasised; ``note`` under the panels."""
    tasks = sorted(curves["task"].unique()) or ["(no runs)"]
    styles = variant_styles(curves["variant"].unique(), anchor)
    variants = variant_order(curves["variant"].unique(), styles)
    labels = curves.groupby("variant")["variant_label"].first().to_dict()
    columns = legend_columns(variants, labels, styles)
    legend_w, legend_h = legend_size(columns)
    heights = [2.2] * len(tasks) + [legend_h]
    title = title or DIAGNOSTICS_TITLE
    fig = blank_figure((PAGE_WIDTH_IN, sum(heights) + 0.6 + 0.5))
    rows = fig.subfigures(len(heights), 1, height_ratios=heights)
    for row, (task, sub) in enumerate(zip(tasks, rows)):
        sub.suptitle(task, x=0.01, ha="left", fontweight="bold", fontsize=FONTS["axes.titlesize"])
        for col, (stat, heading, scale) in enumerate(panels):
            ax = add_axes(sub, (1, len(panels), col + 1))
            chosen = curves[(curves["task"] == task) & (curves["stat"] == stat)]
            for variant in variants:
                runs = chosen[chosen["variant"] == variant]
                if runs.empty or not np.isfinite(runs["value"].to_numpy(dtype=float)).any():
                    continue
                mean = runs.groupby("global_step")["value"].mean()
                ax.plot(mean.index.to_numpy(dtype=float), mean.to_numpy(dtype=float), **styles[variant].line())
            if scale == "log" and ax.get_lines():
                ax.set_yscale("log")
            if stat == "explained_variance" and ax.get_lines():
                bottom = min(float(np.nanmin(line.get_ydata())) for line in ax.get_lines())
                ax.set_ylim(max(-1.0, bottom - 0.05), 1.02)
            if not ax.get_lines():
                ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes, color="0.4")
            step_axis(ax)
            ax.set_title(heading)
            ax.set_xlabel(AXES["global_step"] if row == len(tasks) - 1 else "")
            if row < len(tasks) - 1:
                ax.tick_params(labelbottom=False)
    legend_ax = rows[-1].add_subplot(1, 1, 1)
    legend_ax.axis("off")
    draw_legend(legend_ax, columns, loc="center")
    fig.suptitle(wrap_title(title, fig.get_figwidth()))
    if note:
        fig.supxlabel(wrap_title(note, fig.get_figwidth(), FONTS["font.size"]), fontsize=FONTS["font.size"], x=0.01,
                      ha="left")
    return fig


def plot_diagnostics(curves: pd.DataFrame, path: str | Path, anchor: str | None = None, title: str = "",
                     **kwargs) -> Path:
    """:func:`draw_diagnostics` saved as PNG."""
    return save(draw_diagnostics(curves, anchor, title, **kwargs), path)
