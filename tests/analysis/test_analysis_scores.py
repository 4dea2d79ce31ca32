"""analysis.scores.final_scores: the last-N-episodes score per run."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.scores import final_scores


def _episodes(run_id, returns, steps, status="completed"):
    return pd.DataFrame(
        {
            "run_id": run_id,
            "task": "Hopper-v5",
            "variant": "clip_0.2",
            "variant_label": "Clipping",
            "seed": int(run_id[-1]),
            "status": status,
            "global_step": steps,
            "episode_return": returns,
        }
    )


def test_last_window_by_step_order_and_short_runs():
    # Rows out of step order: the last 3 by global_step are returns 3, 4, 5 -> 4.
    a = _episodes("r0", [5.0, 1.0, 4.0, 2.0, 3.0], [50, 10, 40, 20, 30])
    b = _episodes("r1", [10.0, 20.0], [5, 9])  # fewer than the window: (10+20)/2
    scores = final_scores(pd.concat([a, b]), window=3).set_index("run_id")
    assert scores.loc["r0", "score"] == 4.0
    assert scores.loc["r0", "n_episodes"] == 3
    assert scores.loc["r0", "n_total_episodes"] == 5
    assert scores.loc["r0", "last_step"] == 50
    assert scores.loc["r1", "score"] == 15.0
    assert scores.loc["r1", "n_episodes"] == 2


def test_diverged_run_scored_on_its_finite_episodes():
    c = _episodes("r2", [1.0, 3.0, math.nan, math.inf], [1, 2, 3, 4], status="diverged")
    row = final_scores(c, window=100).iloc[0]
    assert row["score"] == 2.0
    assert row["n_episodes"] == 2
    assert row["status"] == "diverged"


def test_window_must_be_positive():
    with pytest.raises(ValueError, match="window"):
        final_scores(_episodes("r0", [1.0], [1]), window=0)
