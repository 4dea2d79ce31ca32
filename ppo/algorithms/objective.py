"""The surrogate objective family of the paper and the adaptive-β rule.

All eleven Table 1 settings are points of one objective, per run:

    L(θ) = E[min(r·A, clip(r, 1-ε, 1+ε)·A)] − β·E[KL[π_old, π_θ]] + c2·E[H[π_θ]]

with ε = ∞ for "no clipping" (clip is then the identity and min(rA, rA) = rA), β = 0 for "no penalty",
and β adapted after each update when a KL target d_targ is set (Sec. 4).
"""
from __future__ import annotations

import torch


def surrogate(ratio: torch.Tensor, adv: torch.Tensor, clip_epsilon: torch.Tensor) -> torch.Tensor:
    """Elementwise min(r·A, clip(r, 1-ε, 1+ε)·A); ``clip_epsilon`` broadcasts (inf = unclipped)."""
    clipped = torch.clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    return torch.minimum(ratio * adv, clipped * adv)


def objective_terms(ratio, adv, kl, entropy, clip_epsilon, kl_beta, ent_coef):
    """Per-run policy loss (negated objective), averaged over the minibatch axis (dim 1).

    Shapes: ratio, adv, kl [G, M]; entropy [G, M] or [G, 1]; clip_epsilon, kl_beta, ent_coef [G, 1].
    Returns the loss [G] and the surrogate [G] so the caller can log both.
    """
    surr = surrogate(ratio, adv, clip_epsilon).mean(dim=1)
    penalty = (kl_beta * kl).mean(dim=1)
    bonus = (ent_coef * entropy).mean(dim=1)
    return -(surr - penalty + bonus), surr


def value_loss(value: torch.Tensor, ret: torch.Tensor, old_value: torch.Tensor | None = None,
               vf_clip: float | None = None) -> torch.Tensor:
    """Per-run value loss L^VF, averaged over the minibatch axis (dim 1) of [G, M] tensors: (V − R)², or with
    ``vf_clip`` = ε_v baselines ppo2's pessimistic clipped form

        max((V − R)², (V_clipped − R)²),   V_clipped = V_old + clip(V − V_old, −ε_v, ε_v)

    so the value cannot gain by moving more than ε_v from its prediction before the update. There is no ½ in
    front: ppo1's loss, which the paper preset follows, is the plain mean squared error with c1 = 1, while ppo2
    and CleanRL write ½·max(...) with c1 = 0.5. Their weight on the squared error is vf_coef 0.25 here.
    """
    if vf_clip is None:
        return (value - ret).square().mean(1)
    clipped = old_value + (value - old_value).clamp(-vf_clip, vf_clip)
    return torch.maximum((value - ret).square(), (clipped - ret).square()).mean(1)


def adapt_beta(beta: torch.Tensor, kl: torch.Tensor, kl_target: torch.Tensor) -> torch.Tensor:
    """Paper Sec. 4: d < d_targ/1.5 → β/2; d > d_targ·1.5 → 2β; else unchanged.

    Runs without a target carry kl_target = nan, and every comparison with nan is false, so their β
    stays fixed without a separate code path.
    """
    beta = torch.where(kl < kl_target / 1.5, beta / 2, beta)
    return torch.where(kl > kl_target * 1.5, beta * 2, beta)
