"""PPO (Schulman et al. 2017), for every run of a group at once: MuJoCo (Gaussian policy, separate networks)
and Atari (categorical policy, shared network), through the same update.

One iteration, top to bottom: (1) collect a rollout and its GAE advantages (ppo/rollout.py), (2) keep
π_old on the batch, (3) K epochs of minibatch Adam steps on the surrogate objective, (4) the full-batch
KL and the adaptive-β rule. Every Table 1 setting is a per-run value of one objective (ppo/objective.py).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..batched import BatchedAdam, per_run_grad_norm_clip
from ..objective import adapt_beta, objective_terms
from ..rollout import GroupContext
from ..schedule import annealed
from .base import ActorCriticAlgorithm, per_run


class PPO(ActorCriticAlgorithm):
    def __init__(self, ctx: GroupContext):
        super().__init__(ctx)
        G = ctx.num_runs
        cfg = ctx.cfg
        self.optimizers["adam"] = BatchedAdam(self.flat, lr=cfg.learning_rate, eps=cfg.adam_eps)
        objectives = [c.objective for c in ctx.configs]
        self.clip_eps = per_run([o.clip_epsilon for o in objectives], math.inf).view(G, 1)
        self.beta = per_run([o.kl_beta for o in objectives], 0.0)
        self.kl_target = per_run([o.kl_target for o in objectives], math.nan)
        self.ent_coef = per_run([o.ent_coef for o in objectives], 0.0).view(G, 1)

    def extra_state(self) -> dict:
        return {"beta": self.beta.clone()}

    def load_extra_state(self, state: dict) -> None:
        self.beta = state["beta"]

    def iterate(self, iteration: int) -> dict:
        ctx, cfg, agent = self.ctx, self.ctx.cfg, self.agent
        G, B, M = ctx.num_runs, self.batch_size, cfg.minibatch_size
        # both scale with Table 5's α = 1 - iteration / num_iterations when linear
        lr = annealed(cfg.learning_rate, cfg.lr_schedule, iteration, self.num_iterations)
        clip_eps = annealed(self.clip_eps, cfg.clip_schedule, iteration, self.num_iterations)
        self.optimizers["adam"].set_lr(lr)

        # ---- (1) rollout and advantages; the normalizer is updated with this batch first (as ppo1)
        batch = self.collect()

        # ---- (2) π_old on the batch; per-sample data in one tensor, so a minibatch is a single gather.
        # Atari frames [G, B, C, H, W] are stored channels-last once here ([G, B, H, W, C] memory, ``obs`` a
        # view of it): the convolutions want that layout, and each minibatch then skips a transposing copy.
        frames = batch.obs.dim() == 5
        stored = batch.obs.permute(0, 1, 3, 4, 2).contiguous() if frames else batch.obs
        obs = stored.permute(0, 1, 4, 2, 3) if frames else stored
        with torch.no_grad():
            old_policy = agent.policy(obs).frozen()
            old_logp = old_policy.log_prob(batch.actions)
        packed = torch.cat([batch.actions, old_policy.params, batch.advantages[..., None],
                            batch.returns[..., None], old_logp[..., None]], -1)
        widths = [batch.actions.shape[-1], old_policy.params.shape[-1], 1, 1, 1]
        # Rows of [G·B, ...]: a minibatch is then an index_select, half the cost of [rows, index] indexing
        # (same elements copied, so the same bits).
        obs_rows, packed_rows = stored.flatten(0, 1), packed.flatten(0, 1)

        # ---- (3) K epochs of minibatch updates of  −L^{CLIP/KLPEN}(θ) + c1·L^VF(θ) − c2·S  (Eq. 9; shared
        # parameters only for the Atari network, where c1 then weighs the value gradient against the policy's)
        stats = torch.zeros(6, G)  # policy loss, value loss, entropy, approx kl, clip fraction, surrogate
        n_minibatches = 0
        row_start = torch.arange(G).unsqueeze(1) * B  # run g's samples start at row g·B
        beta = self.beta.view(G, 1)
        for epoch in range(cfg.epochs):
            perm = torch.stack([torch.randperm(B, generator=g) for g in ctx.sample_gens])  # [G, B]
            perm += row_start
            for lo in range(0, B, M):
                index = perm[:, lo:lo + M].reshape(-1)
                x = obs_rows.index_select(0, index).view(G, -1, *obs_rows.shape[1:])
                x = x.permute(0, 1, 4, 2, 3) if frames else x
                mb = packed_rows.index_select(0, index).view(G, -1, packed_rows.shape[-1])
                act, params_old, adv, ret, logp_old = mb.split(widths, -1)
                adv, ret, logp_old = adv.squeeze(-1), ret.squeeze(-1), logp_old.squeeze(-1)
                if cfg.adv_norm == "minibatch":
                    adv = (adv - adv.mean(1, keepdim=True)) / (adv.std(1, keepdim=True) + 1e-8)
                policy, value = agent.evaluate(x)
                logratio = policy.log_prob(act) - logp_old
                ratio = logratio.exp()
                kl = old_policy.like(params_old).kl(policy)
                entropy = policy.entropy()  # [G, M], or [G, 1] where it is the same for every state
                policy_loss, surr = objective_terms(ratio, adv, kl, entropy, clip_eps, beta, self.ent_coef)
                value_loss = (value - ret).square().mean(1)
                # Summing over runs keeps them independent: d(sum)/d(run g's slice) = run g's gradient.
                loss = policy_loss + cfg.vf_coef * value_loss
                agent.params.zero_grad_()  # in place: the parameters' .grad are views of flat.grad
                loss.sum().backward()
                if cfg.max_grad_norm is not None:
                    per_run_grad_norm_clip(self.flat, cfg.max_grad_norm)
                self.optimizers["adam"].step()
                with torch.no_grad():
                    stats += torch.stack([
                        policy_loss, value_loss, entropy.mean(1), ((ratio - 1) - logratio).mean(1),
                        ((ratio - 1).abs() > clip_eps).float().mean(1), surr])
                n_minibatches += 1
        stats /= n_minibatches

        # ---- (4) full-batch KL of this update, and the β rule (runs without a KL target keep β)
        with torch.no_grad():
            batch_kl = old_policy.kl(agent.policy(obs)).mean(1)
        beta_used = self.beta
        self.beta = adapt_beta(self.beta, batch_kl, self.kl_target)
        clipfrac = torch.where(self.clip_eps.view(G).isfinite(), stats[4], torch.nan)
        out = {"policy_loss": stats[0], "value_loss": stats[1], "entropy": stats[2], "approx_kl": stats[3],
               "clipfrac": clipfrac, "surrogate": stats[5], "kl": batch_kl, "beta": beta_used,
               "explained_variance": batch.explained_variance, "learning_rate": np.full(G, lr),
               "rollout_seconds": batch.rollout_seconds}
        if cfg.clip_schedule != "constant":  # NaN for a run without clipping (ε = ∞), like its clip fraction
            out["clip_epsilon"] = torch.where(self.clip_eps.view(G).isfinite(), clip_eps.view(G), torch.nan)
        if hasattr(agent, "log_std"):
            out["log_std_mean"] = agent.log_std.detach().mean((1, 2))
        return out


ALGORITHM = PPO
