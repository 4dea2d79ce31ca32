"""Atari learning curves: raw score against emulator frames (agent steps × frame skip), one panel per game."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, MaxNLocator

from analysis.atari import task_game
from analysis.curves import resample_runs
from analysis.io import RunDataError
from analysis.style import PAGE_WIDTH_IN, legible, new_figure, save, variant_colors, wrap_title


def default_games(manifests: pd.DataFrame, limit: int = 6) -> list[str]:
    """The study's games in name order, at most ``limit``."""
    return sorted(manifests["game"].unique())[:limit]


def seed_curves_frames(
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    games: Sequence[str],
    n_points: int = 100,
    smooth: int = 10,
) -> pd.DataFrame:
    """Every run's curve (:func:`analysis.curves.resample_runs`) over emulator frames for ``games``: each
    run's steps (episodes, ``total_steps``, ``diverged_at_step``) are scaled by its frame skip. Long format,
    columns ``game, task, variant, variant_label, run_id, seed, frames, value`` (NaN past a run's end)."""
    unknown = sorted(set(games) - set(manifests["game"]))
    if unknown:
        raise RunDataError(f"game(s) {unknown} chosen for the curves are not in the study "
                           f"(have {sorted(manifests['game'].unique())})")
    runs = manifests[manifests["game"].isin(list(games))].copy()
    skip = runs.set_index("run_id")["frame_skip"].astype(float)
    for column in ("total_steps", "diverged_at_step"):
        if column in runs.columns:
            runs[column] = pd.to_numeric(runs[column], errors="coerce") * runs["frame_skip"].astype(float)
    eps = episodes[episodes["run_id"].isin(runs["run_id"])].copy()
    eps["global_step"] = eps["global_step"].to_numpy(dtype=float) * eps["run_id"].map(skip).to_numpy(dtype=float)
    per_seed = resample_runs(eps, runs, "global_step", n_points, smooth).rename(columns={"global_step": "frames"})
    per_seed.insert(0, "game", per_seed["task"].map(task_game))
    return per_seed


def mean_curves(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The mean over the runs that reach each grid point, and how many do (``n_runs``). No band: over 3 seeds
    a bootstrap band is their range, so the figure draws the seeds themselves."""
    keys = ["game", "task", "variant", "variant_label", "frames"]
    present = per_seed.dropna(subset=["value"])
    grouped = present.groupby(keys, sort=True)["value"]
    means = grouped.agg(mean="mean", n_runs="size").reset_index()
    grid = per_seed[keys].drop_duplicates()
    out = grid.merge(means, on=keys, how="left")
    out["n_runs"] = out["n_runs"].fillna(0).astype(int)
    return out.sort_values(keys, kind="stable").reset_index(drop=True)


@legible
def plot_atari_curves(per_seed: pd.DataFrame, path: str | Path, title: str,
                      paper: pd.DataFrame | None = None) -> Path:
    """One panel per game; per variant a thin line per seed and a thick line for their mean, and dashed the
    paper's Table 6 score when ``paper`` (columns game, variant, paper_mean: table6's rows) is given;
    x = emulator frames; saved with Agg."""
    curves = mean_curves(per_seed)
    games = list(dict.fromkeys(sorted(curves["game"])))
    variants = sorted(curves["variant"].unique())
    labels = curves.groupby("variant")["variant_label"].first()
    colors = variant_colors(variants)
    ncols = min(3, max(1, len(games)))
    nrows = max(1, math.ceil(len(games) / ncols))
    width = min(PAGE_WIDTH_IN, max(3.9 * ncols, 7.5))  # room for the budget line in the title
    fig, axes = new_figure((width, 3.3 * nrows + 1.2), nrows, ncols)
    for ax, game in zip(axes, games):
        for variant in variants:
            line = curves[(curves["game"] == game) & (curves["variant"] == variant)]
            if line.empty:
                continue
            seeds = per_seed[(per_seed["game"] == game) & (per_seed["variant"] == variant)]
            for _, run in seeds.groupby("run_id", sort=True):
                ax.plot(run["frames"], run["value"], color=colors[variant], lw=0.7, alpha=0.45)
            ax.plot(line["frames"], line["mean"], color=colors[variant], lw=1.8, label=labels[variant])
            if paper is not None:
                value = paper.loc[(paper["game"] == game) & (paper["variant"] == variant), "paper_mean"]
                if len(value):
                    ax.axhline(float(value.iloc[0]), color=colors[variant], lw=1.0, ls="--")
        if not np.isfinite(curves.loc[curves["game"] == game, "mean"].to_numpy(dtype=float)).any():
            ax.text(0.5, 0.5, "no finished episode yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlim(0, max(1.0, float(curves.loc[curves["game"] == game, "frames"].max())))
        ax.set_title(game)
        ax.set_xlabel("emulator frames")  # agent steps × frame skip: the caption and the title say so
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_ylabel("raw game score per episode")
    for ax in axes[len(games):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colors[v], lw=2, label=f"{labels[v]} (mean; thin: each seed)") for v in variants]
    if paper is not None and len(handles):
        handles.append(Line2D([], [], color="grey", lw=1.0, ls="--", label="the paper's Table 6 score (40M frames)"))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(2, len(handles)), frameon=False)
    # A long budget line would run off a narrow figure: every title line wrapped to its width.
    fig.suptitle(wrap_title(title, width))
    return save(fig, path)
