"""Diagonal Gaussian policy with a state-independent log-std, in closed form.

These are the formulas torch.distributions.Normal evaluates (tests/test_objective.py checks them against
it), written for this one case: the log-std is shared by all states of a run ([G, 1, A]), so entropy is
a per-run constant and the KL needs one per-run term plus a squared mean difference. In the minibatch
loop that halves the number of tensor operations, which at these sizes cost more than the arithmetic.
"""
from __future__ import annotations

import math

import torch

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def log_prob(actions: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log π(a|s), summed over action dims: [G, B, A] x [G, B, A] x [G, 1, A] -> [G, B]."""
    z = (actions - mean) * torch.exp(-log_std)
    return -0.5 * z.square().sum(-1) - (log_std.sum(-1) + HALF_LOG_2PI * log_std.shape[-1])


def entropy(log_std: torch.Tensor) -> torch.Tensor:
    """H[π(.|s)] per run, the same for every state: [G, 1, A] -> [G, 1]."""
    return log_std.sum(-1) + (0.5 + HALF_LOG_2PI) * log_std.shape[-1]


def kl(mean_old: torch.Tensor, log_std_old: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """KL[π_old(.|s), π(.|s)] summed over action dims: -> [G, B].

    Per dim: log σ/σ_old + (σ_old² + (μ_old − μ)²) / (2σ²) − ½.
    """
    per_run = (log_std - log_std_old + 0.5 * torch.exp(2 * (log_std_old - log_std)) - 0.5).sum(-1)
    return 0.5 * ((mean_old - mean).square() * torch.exp(-2 * log_std)).sum(-1) + per_run
