"""Final score of each run: the paper's "mean total reward of the last 100 episodes" (Sec 6.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

RUN_KEYS = ["run_id", "task", "variant", "variant_label", "seed", "status"]


def final_scores(episodes: pd.DataFrame, window: int = 100) -> pd.DataFrame:
    """Mean ``episode_return`` over each run's last ``window`` finished episodes.

    Episodes are ordered by ``global_step`` (ties keep file order). Non-finite returns
    (a diverged run may log NaN/inf on its way out) are dropped first, so a diverged run
    is scored on the last good episodes it recorded; its ``status`` column says so.
    Runs with fewer than ``window`` episodes use all of them; ``n_episodes`` is the
    number averaged. Runs with no finite episode at all do not appear.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    missing = [c for c in RUN_KEYS + ["global_step", "episode_return"] if c not in episodes]
    if missing:
        raise KeyError(f"episodes table lacks columns {missing}")
    finite = episodes[np.isfinite(episodes["episode_return"].to_numpy(dtype=float))]
    ordered = finite.sort_values(["run_id", "global_step"], kind="stable")
    last = ordered.groupby("run_id", sort=False).tail(window)
    scores = (
        last.groupby(RUN_KEYS, sort=True, dropna=False)
        .agg(
            score=("episode_return", "mean"),
            n_episodes=("episode_return", "size"),
            last_step=("global_step", "max"),
        )
        .reset_index()
    )
    totals = ordered.groupby("run_id").size().rename("n_total_episodes")
    scores = scores.merge(totals, left_on="run_id", right_index=True, how="left")
    return scores.sort_values(["task", "variant", "seed"], kind="stable").reset_index(drop=True)
