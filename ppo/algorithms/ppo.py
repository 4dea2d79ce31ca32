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

import numpy as np
import torch

from ..config.registry import CONVNETS, MLP, AlgorithmSpec, LearningCheck, Line
from ..config.settings import PPOSettings
from ..nn.categorical import Categorical
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
        ctx, cfg, agent = self.ctx, self.ctx.cfg, self.agent
        G, B, M = ctx.num_runs, self.batch_size, cfg.ppo.minibatch_size
        # both scale with Table 5's α = 1 - iteration / num_iterations when linear
        lr = annealed(cfg.ppo.learning_rate, cfg.ppo.lr_schedule, iteration, self.num_iterations)
        clip_eps = annealed(self.clip_eps, cfg.ppo.clip_schedule, iteration, self.num_iterations)
        self.optimizers["adam"].set_lr(lr)

        # ---- (1) rollout and advantages; the normalizer is updated with this batch first (as ppo1)
        batch = self.collect()

        # ---- (2) π_old on the batch; per-sample data in one tensor, so a minibatch is a single gather.
        # Atari frames [G, B, C, H, W] are stored channels-last ([G, B, H, W, C] memory, ``obs`` a view of it;
        # the rollout stores them so): the convolutions want that layout, and each minibatch then skips a
        # transposing copy. π_old on Atari is the policy the rollout acted with (as baselines ppo2 keeps the
        # rollout's neglogpacs): the same parameters on the same frames, without another pass of the network.
        frames = batch.obs.dim() == 5
        stored = batch.obs.permute(0, 1, 3, 4, 2).contiguous() if frames else batch.obs
        obs = stored.permute(0, 1, 4, 2, 3) if frames else stored
        with torch.no_grad():
            old_policy = batch.policy.frozen() if batch.policy is not None else agent.policy(obs).frozen()
            old_logp = old_policy.log_prob(batch.actions)
            # V_old, the centre of value clipping: the value network before this update, on the observations as
            # the update sees them (the rollout's values saw the normalizer's previous statistics), so that
            # V = V_old at the first step, as in ppo2
            old_value = agent.value_of(obs) if cfg.ppo.vf_clip is not None else None

        def pack(advantages, returns):
            """Per-sample data in one tensor of rows [G·B, ...]: a minibatch is then an index_select, half the
            cost of [rows, index] indexing (same elements copied, so the same bits)."""
            columns = [batch.actions, old_policy.params, advantages[..., None], returns[..., None], old_logp[..., None]]
            if old_value is not None:
                columns.append(old_value[..., None])
            return torch.cat(columns, -1).flatten(0, 1)

        widths = [batch.actions.shape[-1], old_policy.params.shape[-1], 1, 1, 1] + [1] * (old_value is not None)
        obs_rows, packed_rows = stored.flatten(0, 1), pack(batch.advantages, batch.returns)

        # ---- (3) K epochs of minibatch updates of  −L^{CLIP/KLPEN}(θ) + c1·L^VF(θ) − c2·S  (Eq. 9; shared
        # parameters only for the Atari network, where c1 then weighs the value gradient against the policy's)
        stats = torch.zeros(6, G)  # policy loss, value loss, entropy, approx kl, clip fraction, surrogate
        steps_taken = torch.zeros(G)  # minibatch steps of each run in this update
        active = torch.ones(G, dtype=torch.bool)  # runs still taking steps (target_kl stops a run's update)
        row_start = torch.arange(G).unsqueeze(1) * B  # run g's samples start at row g·B
        beta = self.beta.view(G, 1)
        for epoch in range(cfg.ppo.epochs):
            if not active.any():
                break
            if cfg.ppo.adv_recompute:  # GAE again with the value network as it is now (Andrychowicz et al. 2021)
                packed_rows = pack(*recompute_advantages(cfg, batch, agent.value_of))
            # A stopped run draws no more permutations, as a loop that breaks would not: its sampling stream then
            # does not depend on the group. Its rows are still computed (in order), but never stepped.
            perm = torch.stack([torch.randperm(B, generator=g) if on else torch.arange(B)
                                for g, on in zip(ctx.sample_gens, active.tolist())])  # [G, B]
            perm += row_start
            for lo in range(0, B, M):
                index = perm[:, lo:lo + M].reshape(-1)
                x = obs_rows.index_select(0, index).view(G, -1, *obs_rows.shape[1:])
                x = x.permute(0, 1, 4, 2, 3) if frames else x
                mb = packed_rows.index_select(0, index).view(G, -1, packed_rows.shape[-1])
                act, params_old, adv, ret, logp_old, *v_old = mb.split(widths, -1)
                adv, ret, logp_old = adv.squeeze(-1), ret.squeeze(-1), logp_old.squeeze(-1)
                if cfg.adv_norm == "minibatch":
                    adv = standardized(adv, correction=1)
                policy, value = agent.evaluate(x)
                logratio = policy.log_prob(act) - logp_old
                ratio = logratio.exp()
                kl = old_policy.like(params_old).kl(policy)
                entropy = policy.entropy()  # [G, M], or [G, 1] where it is the same for every state
                policy_loss, surr = objective_terms(ratio, adv, kl, entropy, clip_eps, beta, self.ent_coef)
                vf_loss = value_loss(value, ret, v_old[0].squeeze(-1) if v_old else None, cfg.ppo.vf_clip)
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
                    step_stats = torch.stack([policy_loss, vf_loss, entropy.mean(1), approx_kl,
                                              ((ratio - 1).abs() > clip_eps).float().mean(1), surr])
                    stats = torch.where(active, stats + step_stats, stats)
                steps_taken += active
            if cfg.ppo.target_kl is not None:
                # CleanRL's rule (ppo_continuous_action.py), per run: after each epoch, the approx KL of its last
                # minibatch above the target ends the run's update
                active &= ~(approx_kl > cfg.ppo.target_kl)
        stats /= steps_taken

        # ---- (4) full-batch KL of this update, and the β rule (runs without a KL target keep β)
        with torch.no_grad():
            if frames:  # minibatch-sized pieces: the convolutions run faster than on the whole batch at once
                pieces = [agent.policy(obs[:, lo:lo + M]).logits for lo in range(0, B, M)]
                policy = Categorical.of_log_probs(torch.cat(pieces, 1))
            else:
                policy = agent.policy(obs)
            batch_kl = old_policy.kl(policy).mean(1)
        beta_used = self.beta
        self.beta = adapt_beta(self.beta, batch_kl, self.kl_target)
        clipfrac = torch.where(self.clip_eps.view(G).isfinite(), stats[4], torch.nan)
        out = {"policy_loss": stats[0], "value_loss": stats[1], "entropy": stats[2], "approx_kl": stats[3],
               "clipfrac": clipfrac, "surrogate": stats[5], "kl": batch_kl, "beta": beta_used,
               "explained_variance": batch.explained_variance, "learning_rate": np.full(G, lr),
               "rollout_seconds": batch.rollout_seconds}
        if cfg.ppo.clip_schedule != "constant":  # NaN for a run without clipping (ε = ∞), like its clip fraction
            out["clip_epsilon"] = torch.where(self.clip_eps.view(G).isfinite(), clip_eps.view(G), torch.nan)
        if cfg.ppo.target_kl is not None:
            out["minibatch_steps"] = steps_taken
        if hasattr(agent, "log_std"):
            out["log_std_mean"] = agent.log_std.detach().mean((1, 2))
        return out


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
