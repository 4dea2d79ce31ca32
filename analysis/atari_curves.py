"""Atari learning curves: raw score against emulator frames (agent steps × frame skip), one panel per game."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from analysis.atari import task_game
from analysis.curves import learning_curves, new_figure, variant_colors
from analysis.io import RunDataError


def default_games(manifests: pd.DataFrame, limit: int = 6) -> list[str]:
    """The study's games in name order, at most ``limit``."""
    return sorted(manifests["game"].unique())[:limit]


def learning_curves_frames(
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    games: Sequence[str],
    n_points: int = 100,
    smooth: int = 10,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`analysis.curves.learning_curves` over emulator frames for ``games``: each run's steps
    (episodes, ``total_steps``, ``diverged_at_step``) are scaled by its frame skip; the x column is
    ``frames``. Columns ``game, task, variant, variant_label, frames, mean, ci_low, ci_high, n_runs``."""
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
    curves = learning_curves(eps, runs, "global_step", n_points, smooth, n_resamples, seed=seed)
    curves = curves.rename(columns={"global_step": "frames"})
    curves.insert(0, "game", curves["task"].map(task_game))
    return curves


def plot_atari_curves(curves: pd.DataFrame, path: str | Path, title: str) -> Path:
    """One panel per game, one line per variant with its band, x = emulator frames; saved with Agg."""
    games = list(dict.fromkeys(sorted(curves["game"])))
    variants = sorted(curves["variant"].unique())
    labels = curves.groupby("variant")["variant_label"].first()
    colors = variant_colors(variants)
    ncols = min(3, max(1, len(games)))
    nrows = max(1, math.ceil(len(games) / ncols))
    width = max(4.4 * ncols, 7.5)  # room for the budget line in the title
    fig, axes = new_figure((width, 3.3 * nrows + 1.2), nrows, ncols)
    for ax, game in zip(axes, games):
        for variant in variants:
            line = curves[(curves["game"] == game) & (curves["variant"] == variant)]
            if line.empty:
                continue
            ax.plot(line["frames"], line["mean"], color=colors[variant], lw=1.4, label=labels[variant])
            ax.fill_between(line["frames"], line["ci_low"], line["ci_high"], color=colors[variant], alpha=0.2, lw=0)
        if not np.isfinite(curves.loc[curves["game"] == game, "mean"].to_numpy(dtype=float)).any():
            ax.text(0.5, 0.5, "no finished episode yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlim(0, max(1.0, float(curves.loc[curves["game"] == game, "frames"].max())))
        ax.set_title(game)
        ax.set_xlabel("emulator frames (agent steps × frame skip)")
        ax.set_ylabel("raw game score per episode")
    for ax in axes[len(games):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colors[v], lw=2, label=labels[v]) for v in variants]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(variants)), fontsize="small")
    # A long budget line would run off a narrow figure: wrap every title line to its width.
    chars = int(width * 10)  # about 10 title characters per inch
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in title.splitlines()))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
