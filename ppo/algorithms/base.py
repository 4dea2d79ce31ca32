"""Shared set-up of the actor-critic algorithms (PPO, A2C, TRPO, VPG): per-run Gaussian policy and value
networks in one batched parameter buffer, an observation normalizer, and their checkpoint state."""
from __future__ import annotations

import math

import torch

from ..batched import GaussianActorCritic
from ..normalizer import ObsNormalizer
from ..rollout import GroupContext


class ActorCriticAlgorithm:
    def __init__(self, ctx: GroupContext):
        cfg, envs = ctx.cfg, ctx.envs
        self.ctx = ctx
        self.agent = GaussianActorCritic(envs.obs_dim, envs.act_dim, cfg.hidden_sizes, cfg.init, cfg.log_std_init,
                                         ctx.init_gens)
        self.flat = self.agent.params.flat  # every parameter of every run, [G, P]
        self.normalizer = ObsNormalizer(ctx.num_runs, envs.obs_dim, cfg.obs_clip, cfg.obs_norm)
        self.batch_size = cfg.num_envs * cfg.horizon  # samples per run per iteration
        self.num_iterations = math.ceil(cfg.total_steps / self.batch_size)
        self.optimizers: dict[str, torch.optim.Optimizer] = {}  # saved and restored with the checkpoint

    def finite(self) -> torch.Tensor:
        return self.flat.isfinite().all(1)

    def extra_state(self) -> dict:
        """Subclasses: any further state (adaptive coefficients, average networks...)."""
        return {}

    def load_extra_state(self, state: dict) -> None:
        pass

    def state_dict(self) -> dict:
        return {"params": self.flat.detach().clone(),
                "optimizers": {k: opt.state_dict() for k, opt in self.optimizers.items()},
                "normalizer": [self.normalizer.state(g) for g in range(self.ctx.num_runs)],
                "extra": self.extra_state()}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            self.flat.copy_(state["params"])
        for k, opt in self.optimizers.items():
            opt.load_state_dict(state["optimizers"][k])
        self.normalizer.load_states(state["normalizer"])
        self.load_extra_state(state["extra"])

    def run_model(self, g: int) -> dict:
        return {"params": self.agent.params.run_state(g), "obs_norm": self.normalizer.state(g)}


def per_run(values, fill: float) -> torch.Tensor:
    """A [G] tensor of per-run settings, ``fill`` standing in for None."""
    return torch.tensor([fill if v is None else float(v) for v in values], dtype=torch.float32)
