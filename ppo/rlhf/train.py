"""One RLHF run: a function of (config, seed). PPO in the InstructGPT/Ziegler form, its critic-free
baselines (GRPO, RLOO, ReMax) through the same generation, reward and update path, and best-of-n sampling
without training.

One update, top to bottom: (1) prompts and responses sampled from π at temperature T, (2) π_old, π_ref,
values, proxy and gold scores on the batch, (3) per-token rewards with the reference-KL penalty and the
advantages (GAE with a critic, or a baseline from other responses), (4) K epochs of minibatch Adam steps on
the surrogate family of Table 1 (ppo/algorithms/objective.py) with the trust-region KL(π_old‖π), plus the clipped value
loss, (5) the full-batch trust-region KL and the paper's d_targ rule, and Ziegler's controller on the
reference KL. Row u of the records describes the batch sampled from the policy after u updates (row 0 is
the SFT policy; the last row, after the last update, has no optimisation statistics); with ``held_out.every``
it also has the policy's answers to a fixed held-out prompt set (columns ``heldout_*``) every so many updates.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..algorithms.objective import adapt_beta, objective_terms
from . import losses as L
from .config import RLHFConfig
from .language import Language, response_mask
from .model import Transformer, generate, response_logits, response_values, sequence_scores, token_log_probs
from .pretrain import pretrain_sft, score, train_reward_model


@dataclass
class Models:
    """What a run starts from; shared by every run with the same language, SFT and reward-model settings."""

    language: Language
    sft: Transformer  # the initial policy and the frozen reference
    reward: Transformer  # the proxy; the value model starts from it
    info: dict = field(default_factory=dict)


def build_models(cfg: RLHFConfig) -> Models:
    lang = Language(cfg.language)
    sft, sft_info = pretrain_sft(lang, cfg.policy_model, cfg.sft)
    rm, rm_info = train_reward_model(lang, sft, cfg.reward_model, cfg.policy_model, cfg.sft)
    return Models(lang, sft, rm, {**sft_info, **rm_info})


@dataclass
class RunResult:
    updates: pd.DataFrame  # per update (or per n for best-of-n): everything the config and seed determine
    samples: pd.DataFrame  # sampled responses as text at a few updates
    timing: pd.DataFrame  # wall-clock seconds per update, kept apart from the deterministic records
    info: dict  # the pretraining measures of the models the run started from
    status: str = "completed"  # or "diverged": non-finite parameters after an update; the records stop there
    diverged_at_update: int | None = None
    diverged_reason: str | None = None


@dataclass
class Batch:
    """One update's responses and everything computed on them before the update ([B, L] or [B])."""

    queries: torch.Tensor
    responses: torch.Tensor
    mask: torch.Tensor
    old_logits: torch.Tensor  # [B, L, V], / T
    old_logp: torch.Tensor
    ref_logits: torch.Tensor
    ref_logp: torch.Tensor
    proxy: torch.Tensor  # the reward model's normalised score
    gold: dict  # Language.gold
    scores: torch.Tensor  # proxy minus the missing-EOS penalty: what the policy is rewarded with


def seeds(seed: int) -> tuple[torch.Generator, torch.Generator]:
    """Independent streams for sampling responses and for minibatch order."""
    a, b = np.random.SeedSequence(seed).generate_state(2)
    return torch.Generator().manual_seed(int(a)), torch.Generator().manual_seed(int(b))


def held_out_seeds(seed: int) -> tuple[int, int]:
    """The held-out prompt set's seed and its sampling seed: a child of the run's seed sequence, so drawing them
    leaves the training streams of ``seeds`` untouched."""
    a, b = np.random.SeedSequence(seed).spawn(1)[0].generate_state(2)
    return int(a), int(b)


@torch.no_grad()
def rollout(cfg: RLHFConfig, models: Models, policy: Transformer, queries: torch.Tensor,
            gen: torch.Generator | None, greedy: bool = False) -> Batch:
    lang, T = models.language, cfg.temperature
    # the logits each token was sampled from are π_old's: no second pass of the policy over the batch
    responses, old_logits = generate(policy, queries, lang.settings.max_response_length, T, gen, greedy,
                                     return_logits=True)
    mask = response_mask(responses)
    ref_logits = response_logits(models.sft, queries, responses, T)
    gold = lang.gold(queries, responses)
    proxy = sequence_scores(models.reward, queries, responses, gold["length"])
    return Batch(queries, responses, mask, old_logits, token_log_probs(old_logits, responses), ref_logits,
                 token_log_probs(ref_logits, responses), proxy, gold,
                 L.scores_with_penalty(proxy, gold["has_eos"], cfg.missing_eos_penalty))


def batch_record(b: Batch, ref_beta: float) -> dict:
    """What the batch says about the policy that sampled it: rewards, reference KLs, hack diagnostics."""
    per_response = lambda x: ((x * b.mask).sum(1)).mean().item()  # noqa: E731 - a sum over tokens, mean over responses
    return {
        "proxy_reward": b.proxy.mean().item(), "gold_reward": b.gold["gold"].mean().item(),
        "score": b.scores.mean().item(),
        "ref_kl": per_response(L.kl_exact(b.old_logits, b.ref_logits)),  # exact over the vocabulary
        "ref_kl_k1": per_response(L.kl_k1(b.old_logp, b.ref_logp)),
        "ref_kl_k3": per_response(L.kl_k3(b.old_logp, b.ref_logp)),
        "ref_beta": ref_beta,
        "entropy": L.masked_mean(L.entropy(b.old_logits), b.mask).item(),
        "response_length": b.gold["length"].mean().item(), "eos_rate": b.gold["has_eos"].float().mean().item(),
        "violations": b.gold["violations"].mean().item(), "repeats": b.gold["repeats"].mean().item(),
        "grammatical_rate": (b.gold["violations"] == 0).float().mean().item(),
    }


HELD_OUT_COLUMNS = ("gold_reward", "proxy_reward", "ref_kl", "entropy", "response_length", "eos_rate", "violations",
                    "repeats", "grammatical_rate")


@torch.no_grad()
def held_out_record(cfg: RLHFConfig, models: Models, policy: Transformer, prompts: torch.Tensor,
                    sampling_seed: int) -> dict:
    """The policy's answers to the held-out prompts, sampled with the same seed every time, measured as a
    batch is (``batch_record``): gold and proxy reward, exact KL(π‖π_ref), the hack diagnostics; ``heldout_*``."""
    b = rollout(cfg, models, policy, prompts, torch.Generator().manual_seed(sampling_seed))
    record = batch_record(b, math.nan)
    return {f"heldout_{k}": record[k] for k in HELD_OUT_COLUMNS}


def sample_rows(lang: Language, b: Batch, update: int, count: int) -> list[dict]:
    return [{"update": update, "index": i, "prompt": lang.decode(b.queries[i]), "response": lang.decode(b.responses[i]),
             "proxy_reward": b.proxy[i].item(), "gold_reward": b.gold["gold"][i].item(),
             "violations": b.gold["violations"][i].item(), "repeats": b.gold["repeats"][i].item()}
            for i in range(min(count, len(b.queries)))]


def advantages(cfg: RLHFConfig, b: Batch, ref_beta: float, values: torch.Tensor | None,
               greedy: Batch | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token advantages [B, L] and, for PPO, the value targets. The baselines use the same per-token
    rewards summed over the response (γ = 1) as the return, and a baseline from other responses."""
    if cfg.reference_kl.placement == "loss":  # the KL is a term of the policy loss (optimize), not of the reward
        ref_beta = 0.0
    rewards = L.token_rewards(b.scores, b.old_logp, b.ref_logp, b.mask, ref_beta)
    if cfg.algorithm == "ppo":
        adv, returns = L.gae(rewards, values, b.mask, cfg.gamma, cfg.gae_lambda)
    else:
        ret = rewards.sum(1)
        if cfg.algorithm == "grpo":
            seq_adv = L.grpo_advantages(ret, cfg.group_size)
        elif cfg.algorithm == "rloo":
            seq_adv = L.rloo_advantages(ret, cfg.group_size)
        else:  # remax: the greedy response's return under the same reward, its KL term included
            greedy_ret = L.token_rewards(greedy.scores, greedy.old_logp, greedy.ref_logp, greedy.mask, ref_beta).sum(1)
            seq_adv = L.remax_advantages(ret, greedy_ret)
        adv, returns = seq_adv[:, None] * b.mask, None
    if cfg.whiten_advantages:
        adv = L.whiten(adv, b.mask)
    return adv, returns


def clip_grad(params: list[torch.Tensor], max_norm: float | None) -> None:
    """``params`` as a list: clip_grad_norm_ would walk ``model.parameters()``, a generator over the module
    tree, several times per call, a third of its cost at these sizes."""
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, max_norm)


@dataclass
class Learner:
    """What the updates change: the policy, the value model (PPO only), their optimizers and the two β's."""

    policy: Transformer
    value: Transformer | None
    opt_policy: torch.optim.Optimizer
    opt_value: torch.optim.Optimizer | None
    tr_beta: torch.Tensor  # the surrogate's β on KL(π_old‖π), adapted by d_targ
    ref_beta: float  # the reward's β on KL(π‖π_ref), adapted by Ziegler's controller

    def finite(self) -> bool:
        return all(torch.isfinite(p).all() for m in (self.policy, self.value) if m is not None for p in m.parameters())


def start_learner(cfg: RLHFConfig, models: Models) -> Learner:
    """The SFT policy and, for PPO, a value model started from the reward model, each with its own Adam."""
    policy = copy.deepcopy(models.sft).train().requires_grad_(True)
    value = copy.deepcopy(models.reward).train().requires_grad_(True) if cfg.algorithm == "ppo" else None
    # fused: one kernel for the whole Adam step, about 3x faster on CPU than foreach (a loop of ops per tensor)
    # at these sizes; the same update up to rounding in the last bit (as TRL's fused AdamW)
    adam = lambda m: torch.optim.Adam(m.parameters(), lr=cfg.learning_rate, eps=cfg.adam_eps, fused=True)  # noqa: E731
    return Learner(policy, value, adam(policy), adam(value) if value is not None else None,
                   torch.tensor([cfg.objective.kl_beta]), cfg.reference_kl.beta)


def optimize(cfg: RLHFConfig, learner: Learner, b: Batch, adv: torch.Tensor, returns: torch.Tensor | None,
             old_values: torch.Tensor | None, order_gen: torch.Generator) -> torch.Tensor:
    """K epochs of minibatch Adam steps on −L^{CLIP/KLPEN}(θ) (+ β_ref·k3 KL(π‖π_ref) with the reference KL in
    the loss) and, on the value model with its own Adam, c1·L^VF, over the valid tokens. Returns the means over
    minibatches of: policy loss, surrogate, approx KL(old‖new), clip fraction, value loss, value clip fraction
    and, with the reference KL in the loss, its k3 term (before β)."""
    o, policy, value = cfg.objective, learner.policy, learner.value
    kl_in_loss = cfg.reference_kl.placement == "loss"
    clip_eps = torch.tensor([[math.inf if o.clip_epsilon is None else o.clip_epsilon]])
    ent_coef = torch.tensor([[o.ent_coef]])
    # A term with coefficient 0 adds exactly 0 to the loss and to every gradient (β = 0 stays 0 under d_targ:
    # 0/2 = 0·2 = 0), so its exact KL or entropy over the vocabulary, and their backward, are skipped: a
    # zero [1, 1] stands in (objective_terms broadcasts it) and the records are bit-identical.
    zero_term = torch.zeros(1, 1)
    n_stats = 7 if kl_in_loss else 6
    stats = torch.zeros(n_stats + 1)  # the statistics summed over minibatches, and their count
    for _ in range(cfg.epochs):
        for idx in torch.randperm(cfg.batch_size, generator=order_gen).split(cfg.minibatch_size):
            q, r, m = b.queries[idx], b.responses[idx], b.mask[idx]
            logits = response_logits(policy, q, r, cfg.temperature)
            logp = token_log_probs(logits, r)
            logratio = logp - b.old_logp[idx]
            ratio = logratio.exp()
            valid = lambda x: x[m][None]  # noqa: E731 - the valid tokens as one run of objective_terms: [1, N]
            # KL(π_old‖π) per token, exact; and the entropy bonus
            tr_kl = valid(L.kl_exact(b.old_logits[idx], logits)) if o.kl_beta != 0 else zero_term
            ent = valid(L.entropy(logits)) if o.ent_coef != 0 else zero_term
            policy_loss, surr = objective_terms(valid(ratio), valid(adv[idx]), tr_kl, ent, clip_eps,
                                                learner.tr_beta.view(1, 1), ent_coef)
            loss = policy_loss.sum()
            if kl_in_loss:
                ref_term = L.reference_kl_loss(logp, b.ref_logp[idx], m)
                loss = loss + learner.ref_beta * ref_term
            learner.opt_policy.zero_grad()
            loss.backward()
            clip_grad(learner.opt_policy.param_groups[0]["params"], cfg.max_grad_norm)
            learner.opt_policy.step()
            value_loss = value_clipfrac = torch.tensor(math.nan)
            if value is not None:
                new_values = response_values(value, q, r)
                value_loss, value_clipfrac = L.clipped_value_loss(new_values, old_values[idx], returns[idx], m,
                                                                  cfg.value_clip)
                learner.opt_value.zero_grad()
                (cfg.vf_coef * value_loss).backward()
                clip_grad(learner.opt_value.param_groups[0]["params"], cfg.max_grad_norm)
                learner.opt_value.step()
            with torch.no_grad():
                stats += torch.stack([policy_loss.sum(), surr.sum(), L.masked_mean(L.kl_k3(b.old_logp[idx], b.old_logp[idx] + logratio), m),
                                      L.masked_mean(((ratio - 1).abs() > clip_eps[0, 0]).float(), m),
                                      value_loss.detach(), value_clipfrac,
                                      *([ref_term.detach()] if kl_in_loss else []), torch.tensor(1.0)])
    return stats[:n_stats] / stats[n_stats]


@torch.no_grad()
def close_update(cfg: RLHFConfig, learner: Learner, b: Batch, ref_kl_k1: float, adv: torch.Tensor,
                 returns: torch.Tensor | None, old_values: torch.Tensor | None, stats: torch.Tensor) -> dict:
    """The update's trust-region KL on the whole batch, the two β rules (d_targ on it, Ziegler's controller on
    the batch's reference KL), and the update's record."""
    o = cfg.objective
    batch_tr_kl = L.masked_mean(L.kl_exact(b.old_logits, response_logits(learner.policy, b.queries, b.responses,
                                                                         cfg.temperature)), b.mask)
    beta_used = learner.tr_beta.item()
    kl_target = torch.tensor([math.nan if o.kl_target is None else o.kl_target])  # nan: β stays fixed
    learner.tr_beta = adapt_beta(learner.tr_beta, batch_tr_kl.view(1), kl_target)
    if cfg.reference_kl.target is not None:
        learner.ref_beta = L.ziegler_beta(learner.ref_beta, ref_kl_k1, cfg.reference_kl.target, cfg.batch_size,
                                          cfg.reference_kl.horizon)
    explained = math.nan
    if learner.value is not None:
        var = L.masked_mean((returns - L.masked_mean(returns, b.mask)) ** 2, b.mask)
        explained = (1 - L.masked_mean((returns - old_values - L.masked_mean(returns - old_values, b.mask)) ** 2,
                                       b.mask) / var).item()
    record = {"tr_kl": batch_tr_kl.item(), "tr_beta": beta_used, "policy_loss": stats[0].item(),
              "surrogate": stats[1].item(), "approx_kl": stats[2].item(),
              "clipfrac": stats[3].item() if o.clip_epsilon is not None else math.nan,
              "value_loss": stats[4].item(), "value_clipfrac": stats[5].item(),
              "explained_variance": explained, "advantage_std": adv[b.mask].std().item()}
    if len(stats) > 6:  # the reference KL in the loss: its k3 term, averaged over minibatches
        record["ref_kl_loss_k3"] = stats[6].item()
    return record


def train(cfg: RLHFConfig, seed: int, models: Models | None = None, log=None, until: int | None = None) -> RunResult:
    """Train one run (or, for best_of_n, evaluate the SFT policy's best-of-n curve). ``until``: stop after that
    many updates, the rows so far being the full run's first (``./repro verify``; best-of-n ignores it)."""
    models = models or build_models(cfg)
    if cfg.algorithm == "best_of_n":
        return best_of_n(cfg, seed, models)
    lang, (sample_gen, order_gen) = models.language, seeds(seed)
    learner = start_learner(cfg, models)
    B = cfg.batch_size
    group = cfg.group_size if cfg.algorithm in ("grpo", "rloo") else 1
    rows, sample_table, timing = [], [], []
    diverged = None
    held = cfg.held_out
    if held.every:
        prompt_seed, held_out_sampling = held_out_seeds(seed)
        held_out_prompts = lang.sample_prompts(held.prompts, torch.Generator().manual_seed(prompt_seed))
    for update in range(cfg.updates + 1 if until is None else min(until, cfg.updates + 1)):
        held_out, held_seconds = {}, {}
        if held.every and (update % held.every == 0 or update == cfg.updates):
            t = time.perf_counter()
            held_out = held_out_record(cfg, models, learner.policy, held_out_prompts, held_out_sampling)
            held_seconds = {"heldout_seconds": time.perf_counter() - t}
        t0 = time.perf_counter()
        # ---- (1)-(2) responses and what is known of them before the update
        queries = lang.sample_prompts(B // group, sample_gen).repeat_interleave(group, 0)
        b = rollout(cfg, models, learner.policy, queries, sample_gen)
        greedy = rollout(cfg, models, learner.policy, queries, None, greedy=True) if cfg.algorithm == "remax" else None
        old_values = None
        if learner.value is not None:
            with torch.no_grad():
                old_values = response_values(learner.value, queries, b.responses) * b.mask
        row = {"update": update, "responses": update * B, **batch_record(b, learner.ref_beta), **held_out}
        if update % cfg.samples.every == 0 or update == cfg.updates:
            sample_table += sample_rows(lang, b, update, cfg.samples.count)
        t1 = time.perf_counter()
        if update == cfg.updates:  # the trained policy, measured; nothing left to optimise
            rows.append(row)
            timing.append({"update": update, "rollout_seconds": t1 - t0, "optimize_seconds": 0.0, **held_seconds})
            break
        # ---- (3) per-token rewards and advantages
        adv, returns = advantages(cfg, b, learner.ref_beta, old_values, greedy)
        # ---- (4) K epochs of minibatch steps
        stats = optimize(cfg, learner, b, adv, returns, old_values, order_gen)
        # ---- (5) the full-batch trust-region KL and the two β rules
        row.update(close_update(cfg, learner, b, row["ref_kl_k1"], adv, returns, old_values, stats))
        rows.append(row)
        timing.append({"update": update, "rollout_seconds": t1 - t0, "optimize_seconds": time.perf_counter() - t1,
                       **held_seconds})
        if not learner.finite():
            # a diverged run is recorded up to here, not a crash: nothing after it could be sampled
            diverged = (update, "non-finite policy or value parameters after the update")
            if log:
                log(f"update {update}: diverged ({diverged[1]}); recorded, the run stops")
            break
        if log and (update % 10 == 0):
            log(f"update {update}: proxy {row['proxy_reward']:+.2f} gold {row['gold_reward']:+.2f} "
                f"KL(π‖π_ref) {row['ref_kl']:.2f} KL(π_old‖π) {row['tr_kl']:.4f}")
    return RunResult(pd.DataFrame(rows), pd.DataFrame(sample_table), pd.DataFrame(timing), dict(models.info),
                     "diverged" if diverged else "completed", *(diverged or (None, None)))


@torch.no_grad()
def best_of_n(cfg: RLHFConfig, seed: int, models: Models) -> RunResult:
    """Gao et al.'s second curve: per prompt, the response with the best proxy score among n SFT samples,
    for each n of the settings, from one set of max(n) samples per prompt (the first n of them). The KL of
    best-of-n to the SFT policy is the closed form log n − (n − 1)/n (Stiennon et al. 2020)."""
    lang, bon = models.language, cfg.best_of_n
    sample_gen, _ = seeds(seed)
    n_max, P = max(bon.ns), bon.prompts
    start = time.perf_counter()
    prompts = lang.sample_prompts(P, sample_gen).repeat_interleave(n_max, 0)
    responses = torch.cat([generate(models.sft, q, lang.settings.max_response_length, cfg.temperature, sample_gen)
                           for q in prompts.split(4096)])
    gold = lang.gold(prompts, responses)
    proxy = score(models.reward, prompts, responses)
    scores = L.scores_with_penalty(proxy, gold["has_eos"], cfg.missing_eos_penalty).view(P, n_max)
    rows, samples = [], []
    for n in bon.ns:
        pick = scores[:, :n].argmax(1) + torch.arange(P) * n_max
        chosen = lambda x: x[pick].float().mean().item()  # noqa: E731
        kl = math.log(n) - (n - 1) / n
        rows.append({"n": n, "ref_kl": kl, "sqrt_ref_kl": math.sqrt(kl), "proxy_reward": chosen(proxy),
                     "gold_reward": chosen(gold["gold"]), "score": chosen(scores.view(-1)),
                     "response_length": chosen(gold["length"]), "eos_rate": chosen(gold["has_eos"]),
                     "violations": chosen(gold["violations"]), "repeats": chosen(gold["repeats"]),
                     "grammatical_rate": chosen(gold["violations"] == 0)})
        samples += [{"n": n, "index": i, "prompt": lang.decode(prompts[p]), "response": lang.decode(responses[p]),
                     "proxy_reward": proxy[p].item(), "gold_reward": gold["gold"][p].item()}
                    for i, p in enumerate(pick[: cfg.samples.count].tolist())]
    timing = pd.DataFrame([{"seconds": time.perf_counter() - start}])
    return RunResult(pd.DataFrame(rows), pd.DataFrame(samples), timing, dict(models.info))


def models_key(cfg: RLHFConfig) -> str:
    """A digest of exactly the settings the starting models depend on."""
    parts = {k: dataclasses.asdict(getattr(cfg, k)) for k in ("language", "policy_model", "sft", "reward_model")}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

