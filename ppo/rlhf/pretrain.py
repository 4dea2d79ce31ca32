"""The models an RLHF run starts from, built from scratch with nothing downloaded: the SFT policy (also the
frozen reference) pretrained on grammar samples, and the proxy reward model trained with the Bradley-Terry
loss on pairs of SFT responses labelled by the gold reward, its output normalised on SFT samples.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import torch
from torch.nn import functional as F

from .config import ModelSettings, RewardModelSettings, SFTSettings
from .language import Language, response_mask
from .losses import bradley_terry_loss
from .model import Transformer, generate, sequence_scores

CHUNK = 512  # responses generated or scored per forward pass outside training


@contextmanager
def seeded(seed: int):
    """Parameter initialisation draws from torch's global generator: seed it here without disturbing it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def pretrain_sft(lang: Language, model: ModelSettings, sft: SFTSettings) -> tuple[Transformer, dict]:
    """Next-token cross-entropy on whole grammar sequences (prompt words and response up to EOS)."""
    start = time.perf_counter()
    with seeded(sft.seed):
        policy = Transformer(lang.vocab_size, lang.seq_len, model, "policy")
    gen = torch.Generator().manual_seed(sft.seed)
    opt = torch.optim.Adam(policy.parameters(), lr=sft.learning_rate)
    P = 1 + lang.settings.prompt_length
    for _ in range(sft.steps):
        tokens = lang.sample(sft.batch_size, gen)
        targets = tokens[:, 1:]
        mask = torch.cat([torch.ones(len(tokens), P - 1, dtype=torch.bool), response_mask(tokens[:, P:])], 1)
        nll = F.cross_entropy(policy(tokens[:, :-1]).transpose(1, 2), targets, reduction="none")
        loss = (nll * mask).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    policy.eval().requires_grad_(False)
    return policy, {"sft_loss": loss.item(), "sft_seconds": time.perf_counter() - start}


@torch.no_grad()
def sample_sft(lang: Language, policy: Transformer, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n prompts from the grammar and one response each from ``policy`` at temperature 1."""
    prompts = lang.sample_prompts(n, gen)
    L = lang.settings.max_response_length
    responses = torch.cat([generate(policy, p, L, 1.0, gen) for p in prompts.split(CHUNK)])
    return prompts, responses


@torch.no_grad()
def score(model: Transformer, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    lengths = response_mask(responses).sum(1)
    return torch.cat([sequence_scores(model, q, r, n)
                      for q, r, n in zip(prompts.split(CHUNK), responses.split(CHUNK), lengths.split(CHUNK))])


def labelled_pairs(lang: Language, sft: Transformer, n: int, noise: float, gen: torch.Generator) -> dict:
    """n prompts with two SFT responses each, ordered (chosen, rejected) by the gold reward, ties by a coin,
    then each label flipped with probability ``noise``. Also returns which order the gold reward gives."""
    prompts, a = sample_sft(lang, sft, n, gen)
    b = torch.cat([generate(sft, p, lang.settings.max_response_length, 1.0, gen) for p in prompts.split(CHUNK)])
    gold_a, gold_b = lang.gold(prompts, a)["gold"], lang.gold(prompts, b)["gold"]
    coin = torch.rand(n, generator=gen) < 0.5
    a_wins = torch.where(gold_a == gold_b, coin, gold_a > gold_b)
    label = a_wins ^ (torch.rand(n, generator=gen) < noise)
    chosen = torch.where(label[:, None], a, b)
    rejected = torch.where(label[:, None], b, a)
    return {"prompts": prompts, "chosen": chosen, "rejected": rejected, "gold_agrees": label == a_wins,
            "gold_tie": gold_a == gold_b}


def train_reward_model(lang: Language, sft_policy: Transformer, settings: RewardModelSettings,
                       policy_model: ModelSettings, sft: SFTSettings) -> tuple[Transformer, dict]:
    """Bradley-Terry on gold-labelled pairs; the trunk starts from the SFT policy (or, for a reward model of
    another size, from its own SFT pretraining), and the score is normalised to mean 0, std 1 on SFT samples
    (N Implementation Details, "reward normalization") by folding the shift and scale into the head."""
    start = time.perf_counter()
    size = settings.model or policy_model
    trunk = sft_policy if size == policy_model else pretrain_sft(lang, size, sft)[0]
    with seeded(settings.seed):
        rm = Transformer(lang.vocab_size, lang.seq_len, size, "scalar")
    rm.load_state_dict(trunk.trunk_state(), strict=False)
    gen = torch.Generator().manual_seed(settings.seed)
    train = labelled_pairs(lang, sft_policy, settings.pairs, settings.label_noise, gen)
    held_out = labelled_pairs(lang, sft_policy, max(256, settings.pairs // 4), settings.label_noise, gen)
    opt = torch.optim.Adam(rm.parameters(), lr=settings.learning_rate)
    lengths = {k: response_mask(train[k]).sum(1) for k in ("chosen", "rejected")}
    for _ in range(settings.epochs):
        order = torch.randperm(settings.pairs, generator=gen)
        for idx in order.split(settings.batch_size):
            q = train["prompts"][idx]
            loss = bradley_terry_loss(sequence_scores(rm, q, train["chosen"][idx], lengths["chosen"][idx]),
                                      sequence_scores(rm, q, train["rejected"][idx], lengths["rejected"][idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    rm.eval().requires_grad_(False)
    # normalisation on fresh SFT samples: score' = (score − mean)/std, folded into the scalar head
    prompts, responses = sample_sft(lang, sft_policy, settings.normalise_samples, gen)
    raw = score(rm, prompts, responses)
    mean, std = raw.mean(), raw.std()
    rm.head.weight.div_(std)
    rm.head.bias.sub_(mean).div_(std)
    normalised = score(rm, prompts, responses)
    gold = lang.gold(prompts, responses)["gold"]
    margin = score(rm, held_out["prompts"], held_out["chosen"]) > score(rm, held_out["prompts"], held_out["rejected"])
    decided = ~held_out["gold_tie"]
    return rm, {
        "rm_seconds": time.perf_counter() - start,
        "rm_final_loss": loss.item(),
        "rm_accuracy_labels": margin.float().mean().item(),  # against the noisy labels it was trained on
        "rm_accuracy_gold": (margin == held_out["gold_agrees"])[decided].float().mean().item(),
        "rm_gold_correlation": torch.corrcoef(torch.stack([normalised, gold]))[0, 1].item(),
        "rm_norm_mean": normalised.mean().item(), "rm_norm_std": normalised.std().item(),
        "sft_gold_mean": gold.mean().item(),
    }
