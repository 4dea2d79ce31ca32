"""Generalized advantage estimation (Schulman et al. 2016) over a rollout of many actors."""
from __future__ import annotations

import numpy as np


def gae(rewards: np.ndarray, values: np.ndarray, next_values: np.ndarray, terminated: np.ndarray,
        episode_end: np.ndarray, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and λ-returns for arrays of shape [T, N] (time, actor).

    ``next_values[t]`` is V of the state that followed step t *in the same episode*: V(s_{t+1}) inside an
    episode and at the rollout's end, V(final observation) when the episode was truncated by a time
    limit. ``terminated[t]`` zeroes that bootstrap (a true terminal state has value 0);
    ``episode_end[t]`` (terminated or truncated) stops the λ-chain from leaking into the next episode.
    Treating time limits as terminal, as ppo1 did, is the caller passing ``terminated = episode_end``.

        δ_t = r_t + γ (1 − terminated_t) V_next,t − V_t
        A_t = δ_t + γ λ (1 − episode_end_t) A_{t+1}
    """
    T = rewards.shape[0]
    adv = np.zeros_like(rewards)
    deltas = rewards + gamma * (1.0 - terminated) * next_values - values
    carry = 1.0 - episode_end
    last = np.zeros_like(rewards[0])
    for t in reversed(range(T)):
        last = deltas[t] + gamma * lam * carry[t] * last
        adv[t] = last
    return adv, adv + values
