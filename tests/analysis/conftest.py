"""Builders for small synthetic run directories in the layout the training code writes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import pytest

LABELS = {
    "clip_0.2": "Clipping, ε = 0.2",
    "no_clip": "No clipping or penalty",
    "kl_fixed_1": "Fixed KL, β = 1",
}
PAPER_ROWS = {
    "clip_0.2": {"setting": "clipping", "param": "epsilon=0.2"},
    "no_clip": {"setting": "no_clipping_or_penalty", "param": ""},
    "kl_fixed_1": None,
}


def write_run(
    runs_dir: Path,
    task: str,
    variant: str,
    seed: int,
    returns: Sequence[float],
    steps: Sequence[int] | None = None,
    wall: Sequence[float] | None = None,
    status: str = "completed",
    diverged_at_step: int | None = None,
    total_steps: int = 1000,
) -> Path:
    """Write episodes.parquet, updates.parquet and manifest.json for one run."""
    run_dir = runs_dir / task / variant / f"seed{seed}"
    run_dir.mkdir(parents=True)
    n = len(returns)
    steps = list(steps) if steps is not None else [int((i + 1) * total_steps / max(n, 1)) for i in range(n)]
    wall = list(wall) if wall is not None else [float(s) / 100.0 for s in steps]
    pd.DataFrame(
        {
            "global_step": pd.Series(steps, dtype="int64"),
            "episode_return": pd.Series(returns, dtype="float64"),
            "episode_length": pd.Series([10] * n, dtype="int64"),
            "wall_time": pd.Series(wall, dtype="float64"),
        }
    ).to_parquet(run_dir / "episodes.parquet", index=False)
    pd.DataFrame(
        {
            "update": [1, 2],
            "global_step": [total_steps // 2, total_steps],
            "policy_loss": [0.1, 0.05],
            "value_loss": [1.0, 0.5],
            "entropy": [1.4, 1.3],
            "kl": [0.01, 0.02],
            "approx_kl": [0.01, 0.02],
            "clipfrac": [0.1, 0.2],
            "beta": [1.0, 1.0],
            "explained_variance": [0.1, 0.5],
            "learning_rate": [3e-4, 3e-4],
            "sps": [1000.0, 1100.0],
        }
    ).to_parquet(run_dir / "updates.parquet", index=False)
    manifest = {
        "run_id": f"{task}__{variant}__s{seed}",
        "study": "unit",
        "task": task,
        "env_version": task.rsplit("-", 1)[-1],
        "variant": variant,
        "variant_label": LABELS.get(variant, variant),
        "seed": seed,
        "status": status,
        "diverged_at_step": diverged_at_step,
        "total_steps": total_steps,
        "paper_row": PAPER_ROWS.get(variant),
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def write_random(path: Path, returns: Sequence[float]) -> Path:
    """Write a random-policy reference file results/random/<task>.parquet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {"episode_return": pd.Series(returns, dtype="float64"), "episode_length": [10] * len(returns)}
    ).to_parquet(path, index=False)
    return path


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(task, variant, seed, returns, **kw)`` writes under tmp_path/runs."""

    def _make(task: str, variant: str, seed: int, returns: Sequence[float], **kw) -> Path:
        return write_run(tmp_path / "runs", task, variant, seed, returns, **kw)

    return _make


@pytest.fixture
def make_random(tmp_path: Path) -> Callable[[str, Sequence[float]], Path]:
    """``make_random(task, returns)`` writes tmp_path/random/<task>.parquet."""

    def _make(task: str, returns: Sequence[float]) -> Path:
        return write_random(tmp_path / "random" / f"{task}.parquet", returns)

    return _make
