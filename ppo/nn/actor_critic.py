"""The MLP actor-critics of a group of runs (one parameter block, ppo.nn.parameters)."""
from __future__ import annotations

import torch
from torch import nn

from .categorical import Categorical
from .gaussian import DiagGaussian
from .parameters import FlatParameters, mlp_forward, mlp_weights


class GaussianActorCritic(nn.Module):
    """Separate policy and value MLPs (paper Sec. 6.1) and a state-independent log-std per run."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...], init: str,
                 log_std_init: float, gens: list[torch.Generator], policy_init_scale: float = 0.01):
        super().__init__()
        sizes = [obs_dim, *hidden]
        # ppo1: policy mean output normc(0.01), value output normc(1.0); ppo2/CleanRL: 0.01 and 1.0 too.
        tensors = {**mlp_weights("policy", [*sizes, act_dim], policy_init_scale, init, gens),
                   **mlp_weights("value", [*sizes, 1], 1.0, init, gens),
                   "log_std": torch.full((len(gens), 1, act_dim), float(log_std_init))}
        self.params = FlatParameters(tensors)
        v = self.params.views
        n = len(sizes)
        self.policy_layers = [(v[f"policy.w{i}"], v[f"policy.b{i}"]) for i in range(n)]
        self.value_layers = [(v[f"value.w{i}"], v[f"value.b{i}"]) for i in range(n)]
        self.log_std = v["log_std"]  # [G, 1, act_dim]

    def policy_mean(self, obs: torch.Tensor) -> torch.Tensor:
        return mlp_forward(self.policy_layers, obs)

    def evaluate(self, obs: torch.Tensor) -> tuple[DiagGaussian, torch.Tensor]:
        """(π(.|s), V(s)) of normalized observations [G, B, obs_dim]."""
        return self.policy(obs), self.value_of(obs)

    def policy(self, obs: torch.Tensor) -> DiagGaussian:
        """π(.|s) alone: the value network is separate, so it need not run."""
        return DiagGaussian(self.policy_mean(obs), self.log_std)

    def value_of(self, obs: torch.Tensor) -> torch.Tensor:
        return mlp_forward(self.value_layers, obs).squeeze(-1)


class CategoricalActorCritic(nn.Module):
    """The same separate policy and value MLPs for a discrete action set (CartPole, Acrobot, LunarLander): the
    policy's outputs are the logits of a categorical distribution, its output layer initialised at scale 0.01
    (``policy_init_scale``) like the Gaussian's mean, so the first policy is near uniform."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: tuple[int, ...], init: str,
                 gens: list[torch.Generator], policy_init_scale: float = 0.01):
        super().__init__()
        sizes = [obs_dim, *hidden]
        tensors = {**mlp_weights("policy", [*sizes, num_actions], policy_init_scale, init, gens),
                   **mlp_weights("value", [*sizes, 1], 1.0, init, gens)}
        self.params = FlatParameters(tensors)
        v = self.params.views
        n = len(sizes)
        self.policy_layers = [(v[f"policy.w{i}"], v[f"policy.b{i}"]) for i in range(n)]
        self.value_layers = [(v[f"value.w{i}"], v[f"value.b{i}"]) for i in range(n)]

    def evaluate(self, obs: torch.Tensor) -> tuple[Categorical, torch.Tensor]:
        """(π(.|s), V(s)) of normalized observations [G, B, obs_dim]."""
        return self.policy(obs), self.value_of(obs)

    def policy(self, obs: torch.Tensor) -> Categorical:
        return Categorical(mlp_forward(self.policy_layers, obs))

    def value_of(self, obs: torch.Tensor) -> torch.Tensor:
        return mlp_forward(self.value_layers, obs).squeeze(-1)
