"""Shared set-up of the actor-critic algorithms (PPO, A2C, TRPO, VPG): per-run policy and value networks in
one batched parameter buffer (Gaussian or categorical MLPs, or Atari's convolutional network), an observation
normalizer, and their checkpoint state."""
from __future__ import annotations

import math

import torch

from ..nn.actor_critic import CategoricalActorCritic, GaussianActorCritic
from ..nn.convnet import CNNActorCritic
from ..nn.normalizer import ObsNormalizer
from ..nn.optim import BatchedAdam
from .rollout import Batch, GroupContext, collect_batch


class ActorCriticAlgorithm:
    def __init__(self, ctx: GroupContext):
        cfg, envs = ctx.cfg, ctx.envs
        self.ctx = ctx
        if ctx.family.observation == "pixels":  # frames in [0, 255] are scaled by the network; no running normalizer
            self.agent = CNNActorCritic(cfg.network, envs.obs_shape, envs.num_actions, ctx.init_gens,
                                        policy_init_scale=cfg.policy_init_scale)
            self.normalizer = None
        else:  # vector observations: separate policy and value MLPs, categorical or Gaussian by the action space
            if getattr(envs, "discrete", False):  # LockstepEnvs says; stand-ins for continuous tasks need not
                self.agent = CategoricalActorCritic(envs.obs_dim, envs.num_actions, cfg.hidden_sizes, cfg.init,
                                                    ctx.init_gens, cfg.policy_init_scale)
            else:
                self.agent = GaussianActorCritic(envs.obs_dim, envs.act_dim, cfg.hidden_sizes, cfg.init,
                                                 cfg.log_std_init, ctx.init_gens, cfg.policy_init_scale)
            self.normalizer = ObsNormalizer(ctx.num_runs, envs.obs_dim, cfg.obs_clip, cfg.obs_norm)
        self.flat = self.agent.params.flat  # every parameter of every run, [G, P]
        self.batch_size = cfg.num_envs * cfg.horizon  # samples per run per iteration
        self.num_iterations = math.ceil(cfg.total_steps / self.batch_size)
        self.optimizers: dict[str, torch.optim.Optimizer] = {}  # saved and restored with the checkpoint
        self.reward_scaler = None  # PPO's reward_norm (ppo/nn/normalizer.py RewardScaler); its state is the algorithm's

    def collect(self, agent=None) -> Batch:
        """One on-policy batch per run with ``agent`` (default: the algorithm's own)."""
        return collect_batch(self.ctx, agent or self.agent, self.normalizer, self.reward_scaler)

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
                "normalizer": [self.normalizer.state(g) for g in range(self.ctx.num_runs)] if self.normalizer else None,
                "extra": self.extra_state()}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            self.flat.copy_(state["params"])
        for k, opt in self.optimizers.items():
            opt.load_state_dict(state["optimizers"][k])
        if self.normalizer is not None:
            self.normalizer.load_states(state["normalizer"])
        self.load_extra_state(state["extra"])

    def run_model(self, g: int) -> dict:
        return {"params": self.agent.params.run_state(g),
                "obs_norm": self.normalizer.state(g) if self.normalizer is not None else None}


def per_run(values, fill: float) -> torch.Tensor:
    """A [G] tensor of per-run settings, ``fill`` standing in for None."""
    return torch.tensor([fill if v is None else float(v) for v in values], dtype=torch.float32)


# ---- Shared by the algorithms that fit their value network apart from the policy update (TRPO, VPG)


def column_slices(params, names) -> dict[str, slice]:
    """Where each named parameter lives in a row of the [G, P] buffer (every view starts at its offset in
    row 0, because it is ``flat[:, lo:hi]`` of a buffer whose own storage offset is 0)."""
    return {name: slice(params.views[name].storage_offset(),
                        params.views[name].storage_offset() + params.views[name][0].numel()) for name in names}


def policy_parameter_names(params) -> list[str]:
    """The policy's parameters: its MLP and the state-independent log-std (not the value network)."""
    return [name for name in params.views if name.startswith("policy.") or name == "log_std"]


def value_parameter_names(params) -> list[str]:
    return [name for name in params.views if name.startswith("value.")]


def column_mask(params, names) -> torch.Tensor:
    """[P] float mask, 1 on the columns of ``names`` and 0 elsewhere (other networks, padding)."""
    mask = torch.zeros(params.flat.shape[1])
    for cols in column_slices(params, names).values():
        mask[cols] = 1.0
    return mask


def to_flat(params, names, tensors) -> torch.Tensor:
    """Per-parameter tensors [G, ...] (e.g. autograd.grad's answer) written into a zero [G, P] buffer."""
    out = torch.zeros_like(params.flat, requires_grad=False)
    for cols, t in zip(column_slices(params, names).values(), tensors):
        out[:, cols] = t.reshape(out.shape[0], -1)
    return out


def fit_value(agent, optimizer: torch.optim.Optimizer, value_mask: torch.Tensor, obs: torch.Tensor,
              returns: torch.Tensor, epochs: int, minibatch_size: int, gens: list[torch.Generator]) -> torch.Tensor:
    """Regress every run's value network on its λ-returns: ``epochs`` passes of shuffled minibatches, one Adam
    step each, a final partial minibatch dropped (baselines trpo_mpi: dataset.iterbatches with
    include_final_partial_batch=False). Returns each run's mean squared error over the minibatches, [G].

    ``optimizer`` must step only through gradients: the gradient is masked to ``value_mask`` before each step,
    so an Adam whose state outside the value columns is zero (a separate Adam for the value network) leaves
    every other parameter bit-unchanged (tests/algorithms/test_trpo.py).
    """
    flat = agent.params.flat
    G, B = returns.shape
    rows = torch.arange(G).unsqueeze(1)
    losses, n = torch.zeros(G), 0
    for _ in range(epochs):
        perm = torch.stack([torch.randperm(B, generator=g) for g in gens])  # [G, B], each run its own stream
        for lo in range(0, B - minibatch_size + 1, minibatch_size):
            idx = perm[:, lo:lo + minibatch_size]
            loss = (agent.value_of(obs[rows, idx]) - returns[rows, idx]).square().mean(1)  # [G]
            agent.params.zero_grad_()
            loss.sum().backward()  # a sum over runs: each run's slice receives its own gradient
            flat.grad.mul_(value_mask)
            optimizer.step()
            losses += loss.detach()
            n += 1
    agent.params.zero_grad_()
    return losses / max(n, 1)


class PolicyStepThenValueFit(ActorCriticAlgorithm):
    """Base of TRPO and VPG: per batch, the subclass's ``policy_step(batch) -> {stat: [G]}``, then the value
    network fitted apart from it with its own Adam (``fit_value``), so the policy step never sees the value
    loss."""

    def __init__(self, ctx: GroupContext, settings):
        super().__init__(ctx)
        self.settings = settings
        if self.batch_size < settings.vf_minibatch_size:
            raise ValueError(f"{ctx.cfg.algorithm}.vf_minibatch_size {settings.vf_minibatch_size} exceeds the "
                             f"batch {self.batch_size}")
        params = self.agent.params
        self.policy_mask = column_mask(params, policy_parameter_names(params))
        self.value_mask = column_mask(params, value_parameter_names(params))
        # Adam of the value network only: its state outside the value columns stays zero (fit_value masks the
        # gradient), so value fitting never moves the policy.
        self.optimizers["value_adam"] = BatchedAdam(self.flat, lr=settings.vf_learning_rate, eps=settings.vf_adam_eps)

    def iterate(self, iteration: int) -> dict:
        s, agent = self.settings, self.agent
        # ---- rollout and advantages; the normalizer is updated with this batch first (as baselines)
        batch = self.collect()
        # ---- the algorithm's policy step
        stats = self.policy_step(batch)
        # ---- value fitting, apart from the policy (baselines: epochs of shuffled minibatches)
        value_loss = fit_value(agent, self.optimizers["value_adam"], self.value_mask, batch.obs, batch.returns,
                               s.vf_epochs, s.vf_minibatch_size, self.ctx.sample_gens)
        stats = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in stats.items()}
        return {**stats, "value_loss": value_loss, "explained_variance": batch.explained_variance,
                "log_std_mean": agent.log_std.detach().mean((1, 2)), "rollout_seconds": batch.rollout_seconds}
