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
        self.mean = np.stack([s.mean for s in self.stats])[:, None, :]  # [G, 1, d]
        self.std = np.sqrt(np.stack([s.var for s in self.stats]) + self.eps)[:, None, :]

    def update(self, raw: np.ndarray) -> None:
        """raw: [G, B, obs_dim], one batch of observations per run."""
        if not self.enabled:
            return
        for stat, x in zip(self.stats, raw):
            stat.update(x)
        self._refresh()

    def __call__(self, raw: np.ndarray) -> torch.Tensor:
        """Raw float64 observations [G, B, obs_dim] -> normalized, clipped float32 tensor. Numpy, because
        its per-call overhead is a fraction of torch's on the rollout's one-step arrays."""
        if not self.enabled:
            return torch.from_numpy(raw.astype(np.float32))
        x = (raw - self.mean) / self.std
        return torch.from_numpy(np.minimum(np.maximum(x, -self.clip), self.clip).astype(np.float32))

    def state(self, run: int) -> dict:
        s = self.stats[run]
        return {"mean": s.mean.tolist(), "var": s.var.tolist(), "count": float(s.count)}

    def load_states(self, states: list[dict]) -> None:
        for stat, st in zip(self.stats, states):
            stat.mean, stat.var, stat.count = np.array(st["mean"]), np.array(st["var"]), st["count"]
        self._refresh()
