"""Categorical policy over a discrete action set (Atari; CartPole, Acrobot...), from unnormalized logits [G, B, A].

Same interface as ppo.nn.gaussian.DiagGaussian. Sampling takes uniforms from each run's own generator
(torch.distributions.Categorical.sample cannot take a generator), so a run's actions do not depend on
the other runs of its group.
"""
from __future__ import annotations

import torch


class Categorical:
    def __init__(self, logits: torch.Tensor):
        self.logits = logits - logits.logsumexp(-1, keepdim=True)  # log-probabilities

    @classmethod
    def of_log_probs(cls, log_probs: torch.Tensor) -> "Categorical":
        """The distribution whose log-probabilities are ``log_probs`` (pieces of other ones' ``logits``), kept
        bit for bit: normalizing them again would move them by rounding."""
        policy = cls.__new__(cls)
        policy.logits = log_probs
        return policy

    @property
    def params(self) -> torch.Tensor:
        return self.logits

    def like(self, params: torch.Tensor) -> "Categorical":
        return Categorical(params)

    def frozen(self) -> "Categorical":
        return Categorical(self.logits.detach())

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """``actions``: indices as [G, B] or [G, B, 1] (any dtype holding whole numbers) -> [G, B]."""
        index = actions.reshape(self.logits.shape[:-1]).long().unsqueeze(-1)
        return self.logits.gather(-1, index).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """[G, B]: −Σ_a π(a) log π(a)."""
        return -(self.logits.exp() * self.logits).sum(-1)

    def kl(self, other: "Categorical") -> torch.Tensor:
        """KL[self, other] = Σ_a π(a) (log π(a) − log π'(a)), per sample, [G, B]."""
        return (self.logits.exp() * (self.logits - other.logits)).sum(-1)

    def sample(self, uniforms: torch.Tensor) -> torch.Tensor:
        """Inverse-CDF sampling: the first action whose cumulative probability exceeds u; [G, B] -> [G, B]."""
        cdf = self.logits.exp().cumsum(-1)
        index = torch.searchsorted(cdf, uniforms.unsqueeze(-1).contiguous(), right=True).squeeze(-1)
        return index.clamp(max=self.logits.shape[-1] - 1)  # u ≥ cdf[-1] < 1 by rounding
