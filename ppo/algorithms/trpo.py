"""TRPO (Schulman et al. 2015) for continuous control, for every run of a group at once; the value network
is fitted separately, after the policy step (as openai/baselines trpo_mpi).

One iteration, top to bottom: (1) collect a rollout and its GAE advantages (ppo/algorithms/rollout.py), (2) keep π_old
on the batch, (3) the gradient g of the surrogate E[r·A] (+ entropy bonus) at θ_old, (4) the natural
direction s ≈ F⁻¹g by conjugate gradient on Fisher-vector products (the Hessian of the mean
KL[π_old‖π_θ] times a vector, by double backprop, plus damping), (5) the step s·sqrt(2δ / sᵀFs) and a
backtracking line search per run, (6) value fitting with Adam on minibatches.

Every vector of steps (3)-(5) is a [G, P] tensor over the whole parameter buffer, zero outside each run's
policy columns (policy MLP and log-std), and every dot product is a per-row sum, so the runs of a group
solve G independent problems; a run whose line search fails keeps θ_old while the others move.
"""
from __future__ import annotations

import torch

from ..config.registry import MLP, AlgorithmSpec, LearningCheck, Line
from ..config.settings import TRPOSettings
from ..nn import gaussian
from .base import PolicyStepThenValueFit, column_slices, policy_parameter_names, to_flat
from .rollout import GroupContext


def rowdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-run dot products of [G, P] tensors: [G, 1]."""
    return (a * b).sum(1, keepdim=True)


def conjugate_gradient(fvp, b: torch.Tensor, iters: int, residual_tol: float) -> torch.Tensor:
    """Solve F x = b for every row of b [G, P] at once, F given as ``fvp(v) -> F v`` (row-wise).

    Conjugate gradient as baselines common/cg.py (x0 = 0, at most ``iters`` iterations, stop once r·r <
    residual_tol), with the stop decided per run: a run that has converged (or has b = 0, which baselines
    skips as "zero gradient") is frozen by masks while the others go on, so its answer does not depend on
    its group.
    """
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rdotr = rowdot(r, r)
    active = rdotr > 0
    for _ in range(iters):
        if not active.any():
            break
        z = fvp(p)
        alpha = rdotr / rowdot(p, z)
        x = torch.where(active, x + alpha * p, x)
        r_new = torch.where(active, r - alpha * z, r)
        new_rdotr = rowdot(r_new, r_new)
        p = torch.where(active, r_new + (new_rdotr / rdotr) * p, p)
        r, rdotr = r_new, torch.where(active, new_rdotr, rdotr)
        active = active & (new_rdotr >= residual_tol)
    return x


def fisher_vector_product(agent, names: list[str], obs: torch.Tensor, old_mean: torch.Tensor,
                          old_log_std: torch.Tensor, damping: float):
    """``v -> (F + damping·I) v`` per run, F the Hessian of the mean KL[π_old‖π_θ] over ``obs`` at θ = θ_old
    (the Fisher information of the policy there). The KL's gradient graph is built once; each product is
    one more backward pass through it (double backprop)."""
    params = [agent.params.views[n] for n in names]
    slices = column_slices(agent.params, names)
    kl = gaussian.kl(old_mean, old_log_std, agent.policy_mean(obs), agent.log_std).mean(1)  # [G]
    grads = torch.autograd.grad(kl.sum(), params, create_graph=True)  # a sum over runs: per-run gradients

    def fvp(v: torch.Tensor) -> torch.Tensor:
        grad_dot_v = sum((g * v[:, slices[n]].view_as(g)).sum() for n, g in zip(names, grads))
        hv = torch.autograd.grad(grad_dot_v, params, retain_graph=True)
        return to_flat(agent.params, names, hv) + damping * v

    return fvp


def backtracking_line_search(flat: torch.Tensor, theta_old: torch.Tensor, fullstep: torch.Tensor,
                             expected_improve: torch.Tensor, gain_before: torch.Tensor, evaluate, max_kl: float,
                             steps: int, kl_factor: float, accept: float):
    """Try θ_old + f·fullstep for f = 1, ½, ¼, ... (``steps`` tries) per run; a run keeps the first f whose
    gain and KL are finite, whose KL ≤ kl_factor·max_kl and whose gain improved by at least
    accept·f·expected_improve (baselines trpo_mpi: kl_factor 1.5, accept 0). A run with no acceptable f
    gets θ_old back, bit-exactly. ``evaluate()`` returns (gain [G], kl [G]) at the current parameters.

    Returns accepted [G] bool, the step fraction [G] (0 if rejected) and the number of tries [G].
    """
    G = flat.shape[0]
    accepted = torch.zeros(G, dtype=torch.bool)
    frac = torch.ones(G)
    tries = torch.zeros(G)
    for _ in range(steps):
        pending = ~accepted
        if not pending.any():
            break
        with torch.no_grad():
            flat.copy_(torch.where(pending[:, None], theta_old + frac[:, None] * fullstep, flat))
            gain, kl = evaluate()
        ok = (pending & gain.isfinite() & kl.isfinite() & (kl <= kl_factor * max_kl)
              & (gain - gain_before >= accept * frac * expected_improve))
        accepted |= ok
        tries += pending.float()
        frac = torch.where(pending & ~ok, frac / 2, frac)
    with torch.no_grad():
        flat.copy_(torch.where(accepted[:, None], flat, theta_old))
    return accepted, torch.where(accepted, frac, 0.0), tries


class TRPO(PolicyStepThenValueFit):
    def __init__(self, ctx: GroupContext):
        super().__init__(ctx, ctx.cfg.trpo)
        self.policy_names = policy_parameter_names(self.agent.params)

    def surrogate(self, obs, actions, adv, old_logp):
        """Per run: the surrogate gain E[r·A] + c·H that TRPO maximises, and E[r·A] alone ([G] each)."""
        agent = self.agent
        ratio = (gaussian.log_prob(actions, agent.policy_mean(obs), agent.log_std) - old_logp).exp()
        surr = (ratio * adv).mean(1)
        return surr + self.settings.ent_coef * gaussian.entropy(agent.log_std).mean(1), surr

    def policy_step(self, batch) -> dict:
        """Steps (2)-(5) on a batch: one natural-gradient step with line search per run."""
        s, agent, flat = self.settings, self.agent, self.flat
        params = [agent.params.views[n] for n in self.policy_names]

        # ---- (2) π_old on the batch
        with torch.no_grad():
            old_mean, old_log_std = agent.policy_mean(batch.obs), agent.log_std.clone()
            old_logp = gaussian.log_prob(batch.actions, old_mean, old_log_std)
            theta_old = flat.detach().clone()

        # ---- (3) g = ∇θ gain at θ_old (gain summed over runs: each run's columns get its own gradient)
        gain, _ = self.surrogate(batch.obs, batch.actions, batch.advantages, old_logp)
        g = to_flat(agent.params, self.policy_names, torch.autograd.grad(gain.sum(), params))
        gain_before = gain.detach()

        # ---- (4) s ≈ F⁻¹ g, F from every fvp_subsample-th sample (baselines: seg[...][::5])
        k = s.fvp_subsample
        fvp = fisher_vector_product(agent, self.policy_names, batch.obs[:, ::k].contiguous(),
                                    old_mean[:, ::k].contiguous(), old_log_std, s.cg_damping)
        stepdir = conjugate_gradient(fvp, g, s.cg_iters, s.cg_residual_tol) * self.policy_mask

        # ---- (5) scale to the trust region: ½ sᵀFs·λ⁻² = δ  ->  fullstep = s·sqrt(2δ / sᵀFs); line search
        shs = 0.5 * rowdot(stepdir, fvp(stepdir)).squeeze(1)
        del fvp  # frees the KL's double-backprop graph
        usable = shs > 0  # sᵀFs = 0 only for a zero gradient: no step (baselines: "Got zero gradient")
        scale = torch.where(usable, (s.max_kl / torch.where(usable, shs, 1.0)).sqrt(), 0.0)
        fullstep = stepdir * scale[:, None]
        expected_improve = rowdot(g, fullstep).squeeze(1)

        def evaluate():
            new_gain, _ = self.surrogate(batch.obs, batch.actions, batch.advantages, old_logp)
            return new_gain, self._mean_kl(batch.obs, old_mean, old_log_std)

        accepted, frac, tries = backtracking_line_search(
            flat, theta_old, fullstep, expected_improve, gain_before, evaluate, s.max_kl, s.line_search_steps,
            s.line_search_kl_factor, s.line_search_accept)

        with torch.no_grad():
            gain_after, surr_after = self.surrogate(batch.obs, batch.actions, batch.advantages, old_logp)
            kl = self._mean_kl(batch.obs, old_mean, old_log_std)
        return {"surrogate": surr_after, "improvement": gain_after - gain_before, "expected_improvement":
                expected_improve * frac, "kl": kl, "accepted": accepted.float(), "step_fraction": frac,
                "line_search_steps": tries, "grad_norm": rowdot(g, g).squeeze(1).sqrt(),
                "entropy": gaussian.entropy(agent.log_std.detach()).mean(1)}

    def _mean_kl(self, obs, old_mean, old_log_std) -> torch.Tensor:
        return gaussian.kl(old_mean, old_log_std, self.agent.policy_mean(obs), self.agent.log_std).mean(1)


SPEC = AlgorithmSpec(
    name="trpo", build=TRPO, order=1, settings=TRPOSettings,
    summary="Trust region policy optimization (Schulman et al. 2015), value network fitted apart",
    lines=(Line("trpo", "TRPO", variant="trpo", reference="trpo"),),
    networks=MLP, continuous=True,
    nan_allowed=frozenset({"explained_variance"}),
    tiny={"total_steps": 1024, "horizon": 256},
    learning=(LearningCheck(
        "trpo", "InvertedPendulum-v5", steps=20 * 1024, threshold=500.0, start_below=20.0, window=10,
        seeds=(0, 1),
        why="Observed with seeds 0-4: the first 1000-step episode after 11.3k-14.3k steps, best 10-episode mean "
            "706-975; the first 20 episodes average 6-8 (random level). 500 is half the maximum, 50x the "
            "random policy, below every seed seen"),),
)
