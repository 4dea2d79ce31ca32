"""The RLHF pieces around the surrogate: per-token rewards, GAE over tokens, whitening, the clipped value
loss, the Bradley-Terry loss, KL estimators, the reference-KL controller and the critic-free baselines.

Two KLs are kept apart everywhere. The *reference* KL(π‖π_ref) is part of the reward (−β_ref per token; or,
with ``reference_kl.placement: loss``, GRPO's k3 term in the policy loss) and fights over-optimisation of the
proxy; its β is ``reference_kl.beta`` and Ziegler's controller adapts it.
The *trust-region* KL(π_old‖π) is the PPO paper's, inside the surrogate (ppo/algorithms/objective.py); its β is
``objective.kl_beta`` and the paper's d_targ rule adapts it.

Shapes: [B, L] per response token (B responses, L = max response length), [B] per response. ``mask`` is
ppo.rlhf.language.response_mask: the tokens up to and including the first EOS.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum()


def whiten(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(x − mean) / std over the valid tokens (population variance, as lm-human-preferences); 0 elsewhere."""
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) * torch.rsqrt(var + 1e-8) * mask


# ---- rewards and advantages
def token_rewards(scores: torch.Tensor, logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor,
                  beta: float) -> torch.Tensor:
    """r_t = −β·(log π(y_t) − log π_ref(y_t)) on every valid token, plus the sequence score on the last
    valid token (EOS when there is one); 0 after EOS (Ziegler et al. 2019). ``scores`` already carry the
    missing-EOS penalty (``scores_with_penalty``)."""
    rewards = -beta * (logp - ref_logp) * mask
    last = mask.sum(1) - 1
    return rewards.index_put((torch.arange(len(scores)), last), scores, accumulate=True)


def scores_with_penalty(scores: torch.Tensor, has_eos: torch.Tensor, penalty: float) -> torch.Tensor:
    """The reward model's score, minus ``penalty`` for a response cut at the maximum length without EOS
    (TRL's missing_eos_penalty): otherwise a policy can gain by never ending."""
    return scores - penalty * (~has_eos).float()


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float,
        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE over the tokens of each response; after the last valid token the episode is over (V = 0).

        δ_t = r_t + γ V_{t+1} − V_t,   A_t = δ_t + γλ A_{t+1}
    Returns advantages and λ-returns (A + V), 0 after EOS."""
    values = values * mask
    B, L = rewards.shape
    adv = torch.zeros_like(rewards)
    last = torch.zeros(B, dtype=rewards.dtype)
    for t in reversed(range(L)):
        next_value = values[:, t + 1] if t + 1 < L else torch.zeros_like(last)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        last = (delta + gamma * lam * last) * mask[:, t]
        adv[:, t] = last
    return adv, (adv + values) * mask


def grpo_advantages(returns: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """GRPO (Shao et al. 2024): each response's return standardised within its prompt's group (sample
    std, as TRL's GRPOTrainer); ``returns`` [B] with the groups contiguous."""
    r = returns.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + eps)).view(-1)


def rloo_advantages(returns: torch.Tensor, group_size: int) -> torch.Tensor:
    """RLOO (Kool et al. 2019; Ahmadian et al. 2024, arXiv:2402.14740): return minus the mean of the other
    k − 1 responses to the same prompt. As published it is used as it is; ``whiten_advantages`` (a setting of
    the run, ppo.rlhf.train.advantages) would whiten it over the batch on top."""
    r = returns.view(-1, group_size)
    baseline = (r.sum(1, keepdim=True) - r) / (group_size - 1)
    return (r - baseline).view(-1)


def remax_advantages(returns: torch.Tensor, greedy_returns: torch.Tensor) -> torch.Tensor:
    """ReMax (Li et al. 2023, arXiv:2310.10505): return minus that of the greedy response to the same prompt.
    As published it is used as it is; ``whiten_advantages`` would whiten it over the batch on top."""
    return returns - greedy_returns


# ---- losses
def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       mask: torch.Tensor, clip: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """½·max((V − R)², (clip(V, V_old ± c) − R)²) over valid tokens, and the fraction where the clipped term
    is the larger (N Implementation Details: value clipping as in openai/lm-human-preferences)."""
    unclipped = (values - returns) ** 2
    if clip is None:
        return 0.5 * masked_mean(unclipped, mask), torch.tensor(0.0)
    clipped = (old_values + (values - old_values).clamp(-clip, clip) - returns) ** 2
    return 0.5 * masked_mean(torch.maximum(unclipped, clipped), mask), masked_mean((clipped > unclipped).float(), mask)


def bradley_terry_loss(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    """−log σ(r_chosen − r_rejected), averaged over pairs."""
    return -F.logsigmoid(chosen - rejected).mean()


# ---- KL divergences and estimators
def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """log π − log π_ref of the sampled token: unbiased for KL(π‖π_ref) under y ~ π, high variance, can be < 0."""
    return logp - ref_logp


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """(ρ − 1) − log ρ with ρ = π_ref/π (Schulman's k3): unbiased, never negative, lower variance."""
    log_ratio = ref_logp - logp
    return torch.expm1(log_ratio) - log_ratio


def kl_exact(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """KL(p‖q) = Σ_v p_v (log p_v − log q_v) over the vocabulary, per position (logits already / T)."""
    logp, logq = torch.log_softmax(logits_p, -1), torch.log_softmax(logits_q, -1)
    return (logp.exp() * (logp - logq)).sum(-1)


def reference_kl_loss(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GRPO's KL term (DeepSeekMath, Shao et al. 2024, eq. 4): the k3 estimate π_ref/π − log(π_ref/π) − 1 of
    KL(π‖π_ref) at each sampled token, with π the policy being optimised (``logp`` carries its gradient),
    averaged over the valid tokens as the surrogate is. The loss adds β times it; its gradient with respect to
    log π is β·(1 − π_ref/π) per token, so it pulls log π towards log π_ref from either side and vanishes at
    π = π_ref. DeepSeekMath averages over each response's tokens and then over responses; this averages over
    every valid token of the minibatch, as the surrogate here does."""
    return masked_mean(kl_k3(logp, ref_logp), mask)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, -1)
    return -(logp.exp() * logp).sum(-1)


def ziegler_beta(beta: float, kl: float, target: float, n_steps: int, horizon: int) -> float:
    """Ziegler et al. 2019's adaptive reference-KL coefficient: β ← β·(1 + clip(KL/target − 1, ±0.2)·n/H),
    with KL the mean KL(π‖π_ref) per response of the batch and n the responses in it. One update moves β by a
    factor within 1 ± 0.2·n/H, so U updates by at most (1 + 0.2·n/H)^U: the horizon H sets how fast β can
    follow the KL (experiments/rlhf/variants/ref_adaptive.yaml works the numbers out for this study)."""
    error = min(max(kl / target - 1.0, -0.2), 0.2)
    return beta * (1.0 + error * n_steps / horizon)
