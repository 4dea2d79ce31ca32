"""Diagonal Gaussian policy with a state-independent log-std, in closed form.

These are the formulas torch.distributions.Normal evaluates (tests/algorithms/test_objective.py checks them against
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


class DiagGaussian:
    """π(.|s) of a minibatch of every run: per-sample means [G, B, A], per-run log-std [G, 1, A].

    The algorithms use a policy through this interface (and ppo.nn.categorical.Categorical's), so one update
    serves Gaussian (MuJoCo) and categorical (Atari) policies. ``params`` is the per-sample part, the one
    a minibatch gathers; ``like(p)`` is the distribution with those per-sample parameters and this one's
    per-run part.
    """

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor):
        self.mean, self.log_std = mean, log_std

    @property
    def params(self) -> torch.Tensor:
        return self.mean

    def like(self, params: torch.Tensor) -> "DiagGaussian":
        return DiagGaussian(params, self.log_std)

    def frozen(self) -> "DiagGaussian":
        """A copy that no later parameter update changes (π_old)."""
        return DiagGaussian(self.mean.detach(), self.log_std.detach().clone())

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return log_prob(actions, self.mean, self.log_std)

    def entropy(self) -> torch.Tensor:
        """[G, 1]: the same for every state."""
        return entropy(self.log_std)

    def kl(self, other: "DiagGaussian") -> torch.Tensor:
        """KL[self, other] per sample, [G, B]."""
        return kl(self.mean, self.log_std, other.mean, other.log_std)
