"""Per-run observation normalization and reward scaling, built on gymnasium's running statistics.

Observation statistics are updated once per batch (as openai/baselines ppo1 does) and are frozen while a
rollout is collected, so every observation of one batch is normalized with the same statistics. Reward
scaling (PPO's ``reward_norm``) follows baselines ppo2 and updates its statistics at every step.
"""
from __future__ import annotations

import numpy as np
import torch
from gymnasium.wrappers.utils import RunningMeanStd, update_mean_var_count_from_moments


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
        x = raw - self.mean
        x /= self.std  # in place on the fresh array: the same operations as (raw - mean) / std, clipped below
        return torch.from_numpy(np.minimum(np.maximum(x, -self.clip, out=x), self.clip, out=x).astype(np.float32))

    def state(self, run: int) -> dict:
        s = self.stats[run]
        return {"mean": s.mean.tolist(), "var": s.var.tolist(), "count": float(s.count)}

    def load_states(self, states: list[dict]) -> None:
        for stat, st in zip(self.stats, states):
            stat.mean, stat.var, stat.count = np.array(st["mean"]), np.array(st["var"]), st["count"]
        self._refresh()


class RewardScaler:
    """Rewards divided by a running std of the discounted return, per run: baselines ppo2's VecNormalize
    (openai/baselines@ea25b9e ``common/vec_env/vec_normalize.py``), which CleanRL's ppo_continuous_action
    reproduces with gymnasium's NormalizeReward and a clip. At every step, for every actor:

        ret ← γ·ret + r;  the run's statistics are updated with its actors' ret;
        r_learner = clip(r / sqrt(var(ret) + eps), −clip, clip);  ret ← 0 where the episode ended

    The mean is not subtracted (baselines #538), and an episode ends by termination or time limit alike,
    as VecNormalize's ``news`` (gymnasium's NormalizeReward resets on termination only, so there a time-limited
    episode's return carries into the next one). Statistics start as gymnasium's RunningMeanStd does (mean 0,
    var 1, count 1e-4); here the runs' are arrays over the group, updated elementwise, so a run's numbers do
    not depend on the others.
    """

    def __init__(self, n_runs: int, envs_per_run: int, gamma: float, clip: float, eps: float = 1e-8):
        self.gamma, self.clip, self.eps, self.envs_per_run = gamma, clip, eps, envs_per_run
        self.mean, self.var, self.count = np.zeros(n_runs), np.ones(n_runs), np.full(n_runs, 1e-4)
        self.returns = np.zeros(n_runs * envs_per_run)  # discounted return of each actor's current episode

    def __call__(self, rewards: np.ndarray, episode_end: np.ndarray) -> np.ndarray:
        """The learner's rewards for one lock-step: ``rewards`` and ``episode_end`` are [G·E], actor-major."""
        self.returns = self.returns * self.gamma + rewards
        per_run = self.returns.reshape(len(self.mean), self.envs_per_run)
        self.mean, self.var, self.count = update_mean_var_count_from_moments(
            self.mean, self.var, self.count, per_run.mean(1), per_run.var(1), self.envs_per_run)
        std = np.repeat(np.sqrt(self.var + self.eps), self.envs_per_run)
        self.returns[episode_end] = 0.0
        return np.clip(rewards / std, -self.clip, self.clip)

    def state(self) -> dict:
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": self.count.tolist(),
                "returns": self.returns.tolist()}

    def load_state(self, state: dict) -> None:
        for name in ("mean", "var", "count", "returns"):
            value = np.array(state[name], dtype=np.float64)
            if value.shape != getattr(self, name).shape:
                raise ValueError(f"reward scaler state {name} of shape {value.shape}, expected {getattr(self, name).shape}")
            setattr(self, name, value)
