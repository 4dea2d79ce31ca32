"""PPO (Schulman et al. 2017), for every run of a group at once: MuJoCo (Gaussian policy, separate networks)
and Atari (categorical policy, shared network), through the same update.

One iteration, top to bottom: (1) collect a rollout and its GAE advantages (ppo/algorithms/rollout.py), (2) keep
π_old on the batch, (3) K epochs of minibatch Adam steps on the surrogate objective, (4) the full-batch
KL and the adaptive-β rule. Every Table 1 setting is a per-run value of one objective (ppo/algorithms/objective.py).

The implementation details of later PPO code are settings of this one update, all off in the paper preset:
reward scaling (``reward_norm``, in the rollout), advantages recomputed before every epoch
(``adv_recompute``), value-function clipping (``vf_clip``), gradient-norm clipping (``max_grad_norm``) and
KL early stopping (``target_kl``: a run whose approx KL passed the target after an epoch takes no further
step in this update, while the rest of its group goes on).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..config.registry import CONVNETS, MLP, AlgorithmSpec, LearningCheck, Line
from ..config.settings import PPOSettings
from ..nn.categorical import Categorical
from ..nn.gaussian import DiagGaussian
from ..nn.normalizer import RewardScaler
from ..nn.optim import BatchedAdam, PerRunAdam, per_run_grad_norm_clip
from .base import ActorCriticAlgorithm, per_run
from .objective import adapt_beta, objective_terms, value_loss
from .rollout import GroupContext, recompute_advantages, standardized
from .schedule import annealed


class PPO(ActorCriticAlgorithm):
    def __init__(self, ctx: GroupContext):
        super().__init__(ctx)
        G = ctx.num_runs
        cfg = ctx.cfg
        # With target_kl a run may stop taking steps while its group goes on: Adam with a step count per run
        self.optimizers["adam"] = (BatchedAdam if cfg.ppo.target_kl is None else PerRunAdam)(
            self.flat, lr=cfg.ppo.learning_rate, eps=cfg.ppo.adam_eps)
        if cfg.ppo.reward_norm:
            self.reward_scaler = RewardScaler(G, cfg.num_envs, cfg.gamma, cfg.ppo.reward_clip)
        objectives = [c.ppo.objective for c in ctx.configs]
        self.clip_eps = per_run([o.clip_epsilon for o in objectives], math.inf).view(G, 1)
        self.beta = per_run([o.kl_beta for o in objectives], 0.0)
        self.kl_target = per_run([o.kl_target for o in objectives], math.nan)
        self.ent_coef = per_run([o.ent_coef for o in objectives], 0.0).view(G, 1)

    def extra_state(self) -> dict:
        if self.reward_scaler is None:
            return {"beta": self.beta.clone()}
        return {"beta": self.beta.clone(), "reward_scaler": self.reward_scaler.state()}

    def load_extra_state(self, state: dict) -> None:
        self.beta = state["beta"]
        if self.reward_scaler is not None:
            self.reward_scaler.load_state(state["reward_scaler"])

    def iterate(self, iteration: int) -> dict:
        ctx, cfg = self.ctx, self.ctx.cfg
        # both scale with Table 5's α = 1 - iteration / num_iterations when linear
        lr = annealed(cfg.ppo.learning_rate, cfg.ppo.lr_schedule, iteration, self.num_iterations)
        clip_eps = annealed(self.clip_eps, cfg.ppo.clip_schedule, iteration, self.num_iterations)
        self.optimizers["adam"].set_lr(lr)

        # (1) a rollout of every run and its GAE advantages (the normalizer first updated with it, as ppo1)
        batch = self.collect()
        # (2) π_old (and V_old) on the batch, kept beside each sample
        samples = Samples(batch, self.agent, cfg.ppo.vf_clip is not None)
        # (3) K epochs of minibatch steps on  −L^{CLIP/KLPEN}(θ) + c1·L^VF(θ) − c2·S  (Eq. 9)
        stats = UpdateStats(ctx.num_runs)
        active = torch.ones(ctx.num_runs, dtype=torch.bool)  # runs still taking steps (target_kl stops a run)
        for epoch in range(cfg.ppo.epochs):
            if not active.any():
                break
            if cfg.ppo.adv_recompute:  # GAE again with the value network as it is now (Andrychowicz et al. 2021)
                samples.set_targets(*recompute_advantages(cfg, batch, self.agent.value_of))
            for index in self.minibatches(active):
                approx_kl = self.minibatch_step(samples.minibatch(index), clip_eps, active, stats)
            if cfg.ppo.target_kl is not None:
                # CleanRL's rule (ppo_continuous_action.py), per run: after each epoch, the approx KL of its last
                # minibatch above the target ends the run's update
                active &= ~(approx_kl > cfg.ppo.target_kl)
        # (4) the full-batch KL of this update, and the β rule (runs without a KL target keep β)
        batch_kl = self.full_batch_kl(samples)
        beta_used, self.beta = self.beta, adapt_beta(self.beta, batch_kl, self.kl_target)
        return self.statistics(stats, batch, batch_kl, beta_used, lr, clip_eps)

    def minibatches(self, active: torch.Tensor):
        """Each run's sample rows in a fresh random order, M at a time (rows of run g start at g·B). A stopped
        run draws no more permutations, as a loop that breaks would not: its sampling stream then does not
        depend on the group. Its rows are still computed (in order), but never stepped."""
        G, B, M = self.ctx.num_runs, self.batch_size, self.ctx.cfg.ppo.minibatch_size
        perm = torch.stack([torch.randperm(B, generator=g) if on else torch.arange(B)
                            for g, on in zip(self.ctx.sample_gens, active.tolist())])  # [G, B]
        perm += torch.arange(G).unsqueeze(1) * B
        for lo in range(0, B, M):
            yield perm[:, lo:lo + M].reshape(-1)

    def minibatch_step(self, mb: Minibatch, clip_eps: torch.Tensor, active: torch.Tensor,
                       stats: UpdateStats) -> torch.Tensor:
        """One Adam step of every active run on its minibatch; returns each run's approx KL before the step."""
        cfg, agent = self.ctx.cfg, self.agent
        adv = standardized(mb.advantages, correction=1) if cfg.adv_norm == "minibatch" else mb.advantages
        policy, value = agent.evaluate(mb.obs)
        logratio = policy.log_prob(mb.actions) - mb.old_logp
        ratio = logratio.exp()
        kl = mb.old_policy.kl(policy)
        entropy = policy.entropy()  # [G, M], or [G, 1] where it is the same for every state
        policy_loss, surr = objective_terms(ratio, adv, kl, entropy, clip_eps, self.beta.view(-1, 1), self.ent_coef)
        vf_loss = value_loss(value, mb.returns, mb.old_value, cfg.ppo.vf_clip)
        # Summing over runs keeps them independent: d(sum)/d(run g's slice) = run g's gradient.
        loss = policy_loss + cfg.ppo.vf_coef * vf_loss
        agent.params.zero_grad_()  # in place: the parameters' .grad are views of flat.grad
        loss.sum().backward()
        if cfg.ppo.max_grad_norm is not None:
            per_run_grad_norm_clip(self.flat, cfg.ppo.max_grad_norm)
        if cfg.ppo.target_kl is None:
            self.optimizers["adam"].step()
        else:  # a stopped run's parameters and Adam state stay exactly as they are
            self.optimizers["adam"].step(active)
        with torch.no_grad():
            approx_kl = ((ratio - 1) - logratio).mean(1)  # of this minibatch, before its step
            clipped = ((ratio - 1).abs() > clip_eps).float().mean(1)
            stats.add(active, policy_loss=policy_loss, value_loss=vf_loss, entropy=entropy.mean(1),
                      approx_kl=approx_kl, clipfrac=clipped, surrogate=surr)
        return approx_kl

    def full_batch_kl(self, samples: Samples) -> torch.Tensor:
        """KL(π_old ‖ π) over each run's whole batch after the update, [G]."""
        with torch.no_grad():
            if samples.frames:  # minibatch-sized pieces: the convolutions run faster than on the whole batch at once
                M = self.ctx.cfg.ppo.minibatch_size
                pieces = [self.agent.policy(samples.obs[:, lo:lo + M]).logits for lo in range(0, self.batch_size, M)]
                policy = Categorical.of_log_probs(torch.cat(pieces, 1))
            else:
                policy = self.agent.policy(samples.obs)
            return samples.old_policy.kl(policy).mean(1)

    def statistics(self, stats: UpdateStats, batch, batch_kl, beta_used, lr, clip_eps) -> dict:
        cfg, G = self.ctx.cfg, self.ctx.num_runs
        mean = stats.mean()
        clipping = self.clip_eps.view(G).isfinite()  # NaN for a run without clipping (ε = ∞)
        out = {**mean, "clipfrac": torch.where(clipping, mean["clipfrac"], torch.nan), "kl": batch_kl,
               "beta": beta_used, "explained_variance": batch.explained_variance, "learning_rate": np.full(G, lr),
               "rollout_seconds": batch.rollout_seconds}
        if cfg.ppo.clip_schedule != "constant":
            out["clip_epsilon"] = torch.where(clipping, clip_eps.view(G), torch.nan)
        if cfg.ppo.target_kl is not None:
            out["minibatch_steps"] = stats.steps
        if hasattr(self.agent, "log_std"):
            out["log_std_mean"] = self.agent.log_std.detach().mean((1, 2))
        return out


@dataclass
class Minibatch:
    """One minibatch of every run, [G, M, ...]."""

    obs: torch.Tensor
    actions: torch.Tensor
    old_policy: DiagGaussian | Categorical  # π_old on these samples
    old_logp: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    old_value: torch.Tensor | None  # V_old, the centre of value clipping (vf_clip only)


class Samples:
    """A batch as the update reads it: one row per (run, sample), with π_old, V_old and the targets beside each.

    Per-sample data is packed into one tensor of rows [G·B, ...], so that a minibatch is one index_select, half
    the cost of [rows, index] indexing (the same elements copied, so the same bits). Atari frames are kept
    channels-last ([G, B, H, W, C] memory, ``obs`` a view of it in [G, B, C, H, W]): the convolutions want
    that layout, and a minibatch then skips a transposing copy."""

    def __init__(self, batch, agent, keep_old_value: bool):
        self.frames = batch.obs.dim() == 5
        self.stored = batch.obs.permute(0, 1, 3, 4, 2).contiguous() if self.frames else batch.obs
        self.obs = self.stored.permute(0, 1, 4, 2, 3) if self.frames else self.stored
        with torch.no_grad():
            # On Atari π_old is the policy the rollout acted with (as baselines ppo2 keeps the rollout's
            # neglogpacs): the same parameters on the same frames, without another pass of the network.
            self.old_policy = batch.policy.frozen() if batch.policy is not None else agent.policy(self.obs).frozen()
            self.old_logp = self.old_policy.log_prob(batch.actions)
            # V_old: the value network before this update, on the observations as the update sees them (the
            # rollout's values saw the normalizer's previous statistics), so that V = V_old at the first step (ppo2)
            self.old_value = agent.value_of(self.obs) if keep_old_value else None
        self.actions = batch.actions
        self.widths = [batch.actions.shape[-1], self.old_policy.params.shape[-1], 1, 1, 1] + [1] * keep_old_value
        self.obs_rows = self.stored.flatten(0, 1)
        self.set_targets(batch.advantages, batch.returns)

    def set_targets(self, advantages: torch.Tensor, returns: torch.Tensor) -> None:
        columns = [self.actions, self.old_policy.params, advantages[..., None], returns[..., None],
                   self.old_logp[..., None]]
        if self.old_value is not None:
            columns.append(self.old_value[..., None])
        self.rows = torch.cat(columns, -1).flatten(0, 1)

    def minibatch(self, index: torch.Tensor) -> Minibatch:
        G = self.obs.shape[0]
        x = self.obs_rows.index_select(0, index).view(G, -1, *self.obs_rows.shape[1:])
        rows = self.rows.index_select(0, index).view(G, -1, self.rows.shape[-1])
        act, params_old, adv, ret, logp_old, *v_old = rows.split(self.widths, -1)
        return Minibatch(obs=x.permute(0, 1, 4, 2, 3) if self.frames else x, actions=act,
                         old_policy=self.old_policy.like(params_old), old_logp=logp_old.squeeze(-1),
                         advantages=adv.squeeze(-1), returns=ret.squeeze(-1),
                         old_value=v_old[0].squeeze(-1) if v_old else None)


class UpdateStats:
    """Each run's statistics summed over the minibatch steps it took, and their means."""

    NAMES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "surrogate")

    def __init__(self, num_runs: int):
        self.sums = torch.zeros(len(self.NAMES), num_runs)
        self.steps = torch.zeros(num_runs)  # minibatch steps of each run in this update

    def add(self, active: torch.Tensor, **values: torch.Tensor) -> None:
        step = torch.stack([values[name] for name in self.NAMES])
        self.sums = torch.where(active, self.sums + step, self.sums)
        self.steps += active

    def mean(self) -> dict[str, torch.Tensor]:
        return dict(zip(self.NAMES, self.sums / self.steps))

SPEC = AlgorithmSpec(
    name="ppo", build=PPO, order=0, settings=PPOSettings,
    summary="Proximal policy optimization (Schulman et al. 2017): every Table 1 surrogate as one objective",
    lines=(Line("ppo", "PPO", variant="clip_0.2", reference="ppo"),),
    networks=MLP + CONVNETS, continuous=True, discrete_mlp=True,
    # no clipping: no clip fraction and no annealed ε; constant returns: no explained variance
    nan_allowed=frozenset({"clipfrac", "clip_epsilon", "explained_variance"}),
    tiny={"total_steps": 1024, "horizon": 128, "ppo": {"epochs": 2, "minibatch_size": 32}},
    learning=(LearningCheck(
        "clip_0.2", "InvertedPendulum-v5", steps=40 * 2048, threshold=950.0, start_below=100.0, window=20,
        start_window=20, seeds=(0, 1, 2),
        why="40 updates of the paper's horizon; 950 is gymnasium's reward_threshold for InvertedPendulum-v5 "
            "(1000 = never falls), reached as a 20-episode mean by every seed"),),
)
