"""Per-run observation normalization, built on gymnasium's RunningMeanStd.

Statistics are updated once per batch (as openai/baselines ppo1 does) and are frozen while a rollout is
collected, so every observation of one batch is normalized with the same statistics.
"""
from __future__ import annotations

import numpy as np
import torch
from gymnasium.wrappers.utils import RunningMeanStd


class ObsNormalizer:
    def __init__(self, n_runs: int, obs_dim: int, clip: float, enabled: bool = True, eps: float = 1e-8):
        self.stats = [RunningMeanStd(shape=(obs_dim,)) for _ in range(n_runs)]
        self.clip, self.enabled, self.eps = clip, enabled, eps
        self._refresh()

    def _refresh(self) -> None:
        self.mean = torch.from_numpy(np.stack([s.mean for s in self.stats])).unsqueeze(1)  # [G, 1, d]
        self.std = torch.from_numpy(np.sqrt(np.stack([s.var for s in self.stats]) + self.eps)).unsqueeze(1)

    def update(self, raw: np.ndarray) -> None:
        """raw: [G, B, obs_dim], one batch of observations per run."""
        if not self.enabled:
            return
        for stat, x in zip(self.stats, raw):
            stat.update(x)
        self._refresh()

    def __call__(self, raw: torch.Tensor) -> torch.Tensor:
        """raw float64 [G, B, obs_dim] -> normalized, clipped float32."""
        if not self.enabled:
            return raw.float()
        return ((raw - self.mean) / self.std).clamp_(-self.clip, self.clip).float()

    def state(self, run: int) -> dict:
        s = self.stats[run]
        return {"mean": s.mean.tolist(), "var": s.var.tolist(), "count": float(s.count)}
