"""Real learning: the paper preset solves InvertedPendulum-v5 within a fixed budget (about 2 min, 1 core)."""
import dataclasses

import numpy as np

from ppo.config import load_preset, build_config
from ppo.train import RunSpec, train_group

BUDGET = 40 * 2048  # 40 updates of the paper's horizon
THRESHOLD = 950.0  # gymnasium's reward_threshold for InvertedPendulum-v5 (1000 = never falls)
WINDOW = 20  # consecutive episodes whose mean must reach the threshold


def test_paper_preset_solves_inverted_pendulum():
    preset = load_preset("ppo_mujoco_paper")
    cfg = build_config({**preset.config, "total_steps": BUDGET}, "test")
    runs = train_group([RunSpec(f"seed{s}", "InvertedPendulum-v5", cfg, s) for s in range(3)], log=lambda _: None)
    for run in runs:
        rolling = run.episodes["episode_return"].rolling(WINDOW).mean()
        assert run.status == "completed"
        assert rolling.max() >= THRESHOLD, f"{run.spec.run_id}: best {WINDOW}-episode mean {rolling.max():.1f}"
        # It learned, rather than starting there: the first episodes of a random-ish policy are short.
        assert run.episodes["episode_return"].iloc[:WINDOW].mean() < 100
