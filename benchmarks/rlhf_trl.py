#!/usr/bin/env python
"""TRL 1.12's PPO trainer beside ours (ppo/rlhf) on our RLHF task: curves and updates per second, measured
side by side in one process with one thread each. TRL is optional and pinned; nothing is downloaded.

Set up once (a separate venv, so the project's own stays lean; ``torch==2.13.0`` is the CPU build on local disk,
an unpinned torch would pull a CUDA build), then run:

    python3 -m venv .venv-trl && .venv-trl/bin/pip install -e '.[trl]'
    nice -n 10 .venv-trl/bin/python benchmarks/rlhf_trl.py [--quick] [--out results/benchmarks/rlhf_trl]

``--quick``: one cell of 4 updates and one speed round of 2, small SFT and reward-model budgets (about a
minute; checks that it works). Full mode: ``--clip 0.2 none --beta 0 0.1 --updates 150`` by default (clip ε ×
fixed reference β, the slice TRL can express; ``none`` = no clipping, ``cliprange=1e9`` in TRL), ours then
TRL in each cell, at ``--curve-size`` (default small); then, at each of ``--sizes`` (default small and large),
``--speed-pairs 3`` rounds of ``--speed-updates 20``-update runs (clip 0.2, β 0.03): ours, TRL as it ships and
TRL with its ``gc.collect()`` calls made no-ops, the order rotating, for speed ratios less exposed to drifting
load on a shared machine (``--no-curves``: only these). Writes to ``--out``: ``curves.csv`` (per implementation,
cell and update: proxy and gold reward, k1 KL to the reference, length, EOS rate, grammar violations, cumulative
seconds), ``summary.csv``, ``speed.csv``, ``summary.md`` (speed, ratios, curve summaries, checks) and
``manifest.json``.

Sizes (``SIZES``): ``small`` is the study's model (d = 64, 2 layers, 2 heads, about 105K parameters), where an
update is a few milliseconds of compute per minibatch and the ratio weighs per-update overhead (Python, HF
``generate``'s machinery) as much as RL compute; ``large`` (d = 128, 4 layers, 4 heads, about 0.8M parameters,
the size of the reward-model variant rm_d128) puts more of each update into the matrix products both sides share.

``gc.collect()``: TRL 1.12's PPO loop calls it twice per update (``trl/experimental/ppo/ppo_trainer.py``: after the
rollout, and after ``on_step_end``, so inside the next update's timed interval), on a CPU process holding torch,
transformers and datasets: tens of milliseconds each. The speed rounds time TRL both ways: ``gc: kept`` (the real
call, each one timed: ``trl_gc_ms_per_update``) and ``gc: skipped`` (the trainer module's ``gc`` replaced, for that
run only, by one whose ``collect`` does nothing; calls elsewhere in TRL or its dependencies, and Python's automatic
collection, are left as they are). Ours never calls it.

Same task for both: one language, SFT policy and reward model are built once by ``ppo.rlhf.train.build_models``
and our pre-LN transformers are copied weight for weight into ``GPT2LMHeadModel`` (policy, reference) and
``GPT2ForSequenceClassification`` (reward model, value model), so both sides start from the same functions
(checked: the largest difference in logits and scores is written down). GPT-2's heads have no bias; ours do.
The bias is folded into the final LayerNorm's shift (exact: solve W·δ = b for δ), and the extra padding token
TRL needs gets a logit of −30 that does not depend on the input (its head row is ∝ 1/γ, orthogonal to every
LayerNorm output), so it is never sampled. A character-level tokenizer (one token per letter, as
``Language.decode`` writes them) serves as TRL's ``processing_class``.

Matched: batch 64 responses, 4 epochs × 4 minibatches of 16, response length 16 with EOS as the stop token,
prompts of BOS + 3 words from the grammar, temperature 1, Adam lr 1e-4 with ε 1e-5, no weight decay and a
constant rate, γ 1, λ 0.95, whitened advantages, clipped value loss (0.2, vf_coef 0.1, ½ in front), the
per-token k1 reference KL with a fixed β, missing-EOS penalty 1, d = 64 with 2 layers and 2 heads.

What differs (TRL's choices that cannot be switched off, or this comparison's):
- TRL places the score on the token *after* EOS (index length + 1, where the value is still counted), so GAE
  discounts it once more by γλ; ours on the last valid token (EOS).
- TRL never clips gradients in its PPO loop (``max_grad_norm`` is unused); ours clips each model's at 1.0.
- TRL steps one (fused) AdamW over policy and value together; ours one fused Adam each (the same updates
  without clipping; both without weight decay, checked).
- TRL's prompts come from a fixed dataset of ``updates × 64`` grammar prompts, shuffled; ours are drawn fresh
  per update. Same distribution, different draws; seeds differ anyway, so curves agree only statistically.
- TRL's policy and score heads have no bias parameter (folded in at the start, but it is not a free parameter
  during training) and its vocabulary has one more token (padding).
- TRL whitens advantages with the unbiased variance, ours the population variance (a factor 1 + 1/N).
- Our loop also computes diagnostics TRL does not (exact KLs over the vocabulary, entropy, a full-batch
  KL(π_old‖π) pass after each update); their cost is in our time. Both generate with a KV cache (TRL through
  HF ``generate`` and its logits processors, ours in ``ppo.rlhf.model.generate``), and both take π_old's
  log-probabilities from the logits the tokens were sampled from, without a second pass of the policy.
Both curves use the batches sampled for training: row u is the batch sampled by the policy after u updates
(u = 0 … updates − 1). For TRL, the query-responses its reward model scores are captured by a forward hook
(outside TRL's code), and gold and proxy are computed on them afterwards, outside the timed loop, with our
gold program and our reward model (which equals TRL's copy; TRL's own mean score is kept as a check).
"""
from __future__ import annotations

import os

# Before torch is imported: one thread each, nothing from a hub.
for _key, _value in {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                     "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                     "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ[_key] = _value

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

from ppo.rlhf.config import RLHFConfig, load_variant  # noqa: E402
from ppo.rlhf.language import BOS, EOS, FIRST_WORD, Language  # noqa: E402
from ppo.rlhf.model import Transformer  # noqa: E402
from ppo.rlhf.pretrain import score  # noqa: E402
from ppo.rlhf.train import Models, build_models, train  # noqa: E402

TRL_PINS = {"trl": "1.12.0", "transformers": "5.23.0", "accelerate": "1.15.0", "datasets": "5.2.0",
            "tokenizers": "0.23.3", "huggingface_hub": "2.4.0", "torch": "2.13.0"}
PAD_LOGIT = -30.0  # the padding token's constant logit in the ported policy
NO_CLIP = 1e9  # TRL's cliprange for "no clipping"
CURVE_COLUMNS = ["proxy_reward", "gold_reward", "ref_kl_k1", "response_length", "eos_rate", "violations"]


def trl_versions() -> dict[str, str | None]:
    from importlib import metadata
    out = {}
    for name in TRL_PINS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


# ---------------------------------------------------------------- our models as GPT-2
def token_strings(lang: Language) -> list[str]:
    """One character per token id, as Language.decode writes them, and '_' for TRL's padding token."""
    if lang.settings.num_words > 26:
        raise ValueError("the character tokenizer needs num_words <= 26")
    letters = "abcdefghijklmnopqrstuvwxyz"
    chars = ["^", "$"] + [letters[i] for i in range(lang.settings.num_words)] + ["_"]
    assert chars.index("^") == BOS and chars.index("$") == EOS and chars.index("a") == FIRST_WORD
    return chars


def char_tokenizer(lang: Language):
    """A character-level WordLevel tokenizer over our vocabulary plus a padding token (id vocab_size)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    chars = token_strings(lang)
    tok = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token="_"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="^", eos_token="$", pad_token="_",
                                   unk_token="_", padding_side="left")


def gpt2_config(lang: Language, model: Transformer, **extra):
    from transformers import GPT2Config
    s = model.settings
    return GPT2Config(vocab_size=lang.vocab_size + 1, n_positions=lang.seq_len, n_embd=s.d_model,
                      n_layer=s.n_layer, n_head=s.n_head, activation_function="gelu", resid_pdrop=0.0,
                      embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5, bos_token_id=BOS,
                      eos_token_id=EOS, pad_token_id=lang.vocab_size, tie_word_embeddings=False, **extra)


@torch.no_grad()
def _copy_trunk(ours: Transformer, backbone) -> None:
    """Embeddings, blocks and final LayerNorm; nn.Linear [out, in] -> GPT-2's Conv1D [in, out]."""
    backbone.wte.weight.zero_()
    backbone.wte.weight[: ours.tok_emb.weight.shape[0]] = ours.tok_emb.weight
    backbone.wpe.weight.copy_(ours.pos_emb.weight)
    for mine, theirs in zip(ours.blocks, backbone.h):
        pairs = [(mine.ln1, theirs.ln_1), (mine.ln2, theirs.ln_2)]
        for a, b in pairs:
            b.weight.copy_(a.weight)
            b.bias.copy_(a.bias)
        for a, b in [(mine.qkv, theirs.attn.c_attn), (mine.proj, theirs.attn.c_proj), (mine.mlp[0], theirs.mlp.c_fc),
                     (mine.mlp[2], theirs.mlp.c_proj)]:
            b.weight.copy_(a.weight.T)
            b.bias.copy_(a.bias)
    backbone.ln_f.weight.copy_(ours.ln_f.weight)
    backbone.ln_f.bias.copy_(ours.ln_f.bias)


@torch.no_grad()
def port_policy(ours: Transformer, lang: Language):
    """GPT2LMHeadModel computing our policy's logits exactly, plus a padding token at logit PAD_LOGIT."""
    from transformers import GPT2LMHeadModel
    model = GPT2LMHeadModel(gpt2_config(lang, ours)).float()
    _copy_trunk(ours, model.transformer)
    W, b = ours.head.weight.double(), ours.head.bias.double()  # [V, d], [V]
    gamma, beta = ours.ln_f.weight.double(), ours.ln_f.bias.double()
    u = 1.0 / gamma  # u·(γ ⊙ n) = Σ n = 0 for every LayerNorm output n: a constant feature
    u = u / u.norm()
    # shift δ of the LayerNorm bias: W·δ = b (our head's bias) and u·(β + δ) = 1 (the padding logit's scale)
    A = torch.cat([W, u[None]])
    rhs = torch.cat([b, (1.0 - u @ beta)[None]])
    delta = torch.linalg.lstsq(A, rhs[:, None], driver="gelsd").solution[:, 0]
    if (A @ delta - rhs).abs().max() > 1e-8:
        raise RuntimeError("cannot fold the head's bias into the final LayerNorm (rank-deficient head)")
    model.transformer.ln_f.bias.copy_((beta + delta).float())
    model.lm_head.weight.copy_(torch.cat([W, PAD_LOGIT * u[None]]).float())
    model.generation_config.bos_token_id, model.generation_config.eos_token_id = BOS, EOS
    model.generation_config.pad_token_id = lang.vocab_size
    return model.eval()


@torch.no_grad()
def port_scalar(ours: Transformer, lang: Language):
    """GPT2ForSequenceClassification (num_labels 1) whose backbone + score head equals our scalar model."""
    from transformers import GPT2ForSequenceClassification
    model = GPT2ForSequenceClassification(gpt2_config(lang, ours, num_labels=1)).float()
    _copy_trunk(ours, model.transformer)
    w, b = ours.head.weight.double()[0], ours.head.bias.double()[0]
    model.transformer.ln_f.bias.add_((b * w / w.dot(w)).float())  # w·(β + δ) = w·β + b
    model.score.weight.copy_(ours.head.weight)
    return model.eval()


@torch.no_grad()
def port_error(models: Models, policy, reward, n: int = 256, seed: int = 1) -> dict[str, float]:
    """Largest differences between ours and the GPT-2 copies on grammar sequences: the policy's log-probs
    over our vocabulary, the padding token's probability, and the reward scores at every position."""
    lang = models.language
    tokens = lang.sample(n, torch.Generator().manual_seed(seed))
    ours = torch.log_softmax(models.sft(tokens), -1)
    theirs = torch.log_softmax(policy(input_ids=tokens).logits, -1)
    out_r = reward.transformer(input_ids=tokens, output_hidden_states=True)
    scores = reward.score(out_r.hidden_states[-1])[..., 0]
    return {"policy_logprob_max_abs_diff": (ours - theirs[..., :-1]).abs().max().item(),
            "pad_prob_max": theirs[..., -1].exp().max().item(),
            "reward_max_abs_diff": (models.reward(tokens) - scores).abs().max().item()}


# ---------------------------------------------------------------- the two implementations
SIZES = {"small": {"d_model": 64, "n_layer": 2, "n_head": 2},  # the study's preset
         "large": {"d_model": 128, "n_layer": 4, "n_head": 4}}  # as rm_d128's reward model


def cell_config(args, clip: float | None, beta: float, updates: int | None = None, size: str = "small") -> RLHFConfig:
    extra = {"updates": updates or args.updates, "objective": {"clip_epsilon": clip, "kl_beta": 0.0, "kl_target": None},
             "reference_kl": {"beta": beta, "target": None}, "policy_model": dict(SIZES[size])}
    if args.quick:
        extra.update({"sft": {"steps": 100}, "reward_model": {"pairs": 512, "normalise_samples": 256}})
    return load_variant("clip_0.2", **extra).config


def run_ours(cfg: RLHFConfig, seed: int, models: Models) -> tuple[pd.DataFrame, dict]:
    start = time.perf_counter()
    result = train(cfg, seed, models)
    wall = time.perf_counter() - start
    rows = result.updates[result.updates["update"] < cfg.updates].reset_index(drop=True)
    timing = result.timing[result.timing["update"] < cfg.updates]
    step_seconds = (timing["rollout_seconds"] + timing["optimize_seconds"]).to_numpy()
    curve = rows[["update"] + CURVE_COLUMNS].copy()
    curve["seconds"] = step_seconds.cumsum()
    tokens = (rows["response_length"] * cfg.batch_size).sum()
    return curve, {"seconds": step_seconds.sum(), "wall_seconds": wall, "response_tokens": float(tokens),
                   "generated_positions": cfg.updates * cfg.batch_size * cfg.language.max_response_length,
                   "rollout_seconds": timing["rollout_seconds"].sum()}


class RewardTap:
    """A forward pre-hook on the reward model's backbone: keeps the query-responses TRL scores (the
    responses truncated after EOS, padding marked by the attention mask), one entry per call."""

    def __init__(self, backbone):
        self.batches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.times: list[float] = []  # when the reward model is called: the end of the rollout, nearly
        self.handle = backbone.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        self.times.append(time.perf_counter())
        self.batches.append((kwargs["input_ids"].detach().clone(), kwargs["attention_mask"].detach().clone()))


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class GcCalls:
    """Stands in for the ``gc`` module inside TRL's PPO trainer module (its only use there is ``gc.collect()``):
    ``keep`` calls the real ``gc.collect`` and times each call, ``skip`` only counts the calls. ``calls`` holds
    (start time, seconds) per call."""

    def __init__(self, mode: str):
        if mode not in ("keep", "skip"):
            raise ValueError(f"gc mode must be 'keep' or 'skip', got {mode!r}")
        self.mode, self.calls = mode, []

    def collect(self, *args, **kwargs) -> int:
        start = time.perf_counter()
        found = gc.collect(*args, **kwargs) if self.mode == "keep" else 0
        self.calls.append((start, time.perf_counter() - start))
        return found

    def __getattr__(self, name):  # anything else the module might read of gc: the real one
        return getattr(gc, name)

    def within(self, begin: float, end: float) -> tuple[int, float]:
        """Calls that started in [begin, end] and their seconds: those inside the timed updates."""
        inside = [seconds for start, seconds in self.calls if begin <= start <= end]
        return len(inside), float(sum(inside))


@contextmanager
def trl_gc(module, mode: str):
    """``module.gc`` replaced by a GcCalls for the duration (the module's own name for gc, nothing global)."""
    shim, real = GcCalls(mode), module.gc
    module.gc = shim
    try:
        yield shim
    finally:
        module.gc = real


def run_trl(cfg: RLHFConfig, seed: int, models: Models, workdir: Path, gc_mode: str = "keep") -> tuple[pd.DataFrame, dict]:
    import importlib

    import transformers
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl.experimental.ppo import PPOConfig, PPOTrainer

    lang, B, L = models.language, cfg.batch_size, cfg.language.max_response_length
    transformers.set_seed(seed)
    tokenizer = char_tokenizer(lang)
    policy, ref = port_policy(models.sft, lang), port_policy(models.sft, lang)
    reward, value = port_scalar(models.reward, lang), port_scalar(models.reward, lang)
    prompts = lang.sample_prompts(cfg.updates * B, torch.Generator().manual_seed(10_000 + seed))
    train_set = Dataset.from_dict({"input_ids": prompts.tolist()})
    eval_set = Dataset.from_dict({"input_ids": prompts[:B].tolist()})  # never used: num_sample_generations 0
    clip = cfg.objective.clip_epsilon
    ppo_args = PPOConfig(
        output_dir=str(workdir), seed=seed, use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
        report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True, dataloader_num_workers=0,
        num_sample_generations=0, total_episodes=cfg.updates * B,
        per_device_train_batch_size=B, gradient_accumulation_steps=1, num_mini_batches=B // cfg.minibatch_size,
        num_ppo_epochs=cfg.epochs, local_rollout_forward_batch_size=B, response_length=L, stop_token="eos",
        temperature=cfg.temperature, missing_eos_penalty=cfg.missing_eos_penalty,
        learning_rate=cfg.learning_rate, adam_epsilon=cfg.adam_eps, weight_decay=0.0, lr_scheduler_type="constant",
        warmup_steps=0, kl_coef=cfg.reference_kl.beta, kl_estimator="k1",
        cliprange=NO_CLIP if clip is None else clip, vf_coef=cfg.vf_coef,
        cliprange_value=cfg.value_clip if cfg.value_clip is not None else NO_CLIP, gamma=cfg.gamma, lam=cfg.gae_lambda,
        whiten_rewards=False)

    logs_so_far: list[dict] = []  # TRL's metrics, one entry per update
    clock: dict[str, list[float]] = {"begin": [], "step": []}

    class Recorder(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            clock["begin"].append(time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):
            clock["step"].append(time.perf_counter())

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "objective/scores" in logs:
                logs_so_far.append({**logs, "step": state.global_step})

    trainer = PPOTrainer(args=ppo_args, processing_class=tokenizer, model=policy, ref_model=ref,
                         reward_model=reward, train_dataset=train_set, value_model=value, eval_dataset=eval_set,
                         callbacks=[Recorder()])
    trainer.remove_callback(PrinterCallback)
    torch.set_num_threads(1)
    tap = RewardTap(trainer.reward_model.transformer)
    start = time.perf_counter()
    with trl_gc(importlib.import_module("trl.experimental.ppo.ppo_trainer"), gc_mode) as gc_calls:
        trainer.train()
    wall = time.perf_counter() - start
    tap.handle.remove()
    if len(clock["step"]) != cfg.updates or len(tap.batches) != cfg.updates:
        raise RuntimeError(f"TRL ran {len(clock['step'])} updates and scored {len(tap.batches)} batches, "
                           f"expected {cfg.updates} (is local_rollout_forward_batch_size the batch size?)")
    gc_count, gc_seconds = gc_calls.within(clock["begin"][0], clock["step"][-1])
    step_starts = torch.tensor([clock["begin"][0]] + clock["step"][:-1], dtype=torch.float64)
    step_seconds = (torch.tensor(clock["step"], dtype=torch.float64) - step_starts).numpy()
    rollout_seconds = float((torch.tensor(tap.times, dtype=torch.float64) - step_starts).sum())

    # outside the timed loop: gold and proxy on the batches TRL trained on
    rows = []
    P = 1 + cfg.language.prompt_length
    for u, (ids, mask) in enumerate(tap.batches):
        responses = torch.where(mask[:, P:], ids[:, P:], EOS)  # padding after EOS -> EOS, as ours pads
        if responses.shape[1] < L:  # HF generate stops early once every response has ended
            responses = torch.cat([responses, torch.full((len(ids), L - responses.shape[1]), EOS)], 1)
        queries = ids[:, :P]
        gold = lang.gold(queries, responses)
        proxy = score(models.reward, queries, responses)
        log = logs_so_far[u] if u < len(logs_so_far) else {}
        rows.append({"update": u, "proxy_reward": proxy.mean().item(), "gold_reward": gold["gold"].mean().item(),
                     "ref_kl_k1": log.get("objective/kl", math.nan),
                     "response_length": gold["length"].mean().item(), "eos_rate": gold["has_eos"].float().mean().item(),
                     "violations": gold["violations"].mean().item(),
                     "trl_scores": log.get("objective/scores", math.nan),
                     "check_scores": (proxy - cfg.missing_eos_penalty * (~gold["has_eos"]).float()).mean().item(),
                     "approx_kl": log.get("policy/approxkl_avg", math.nan),
                     "clipfrac": log.get("policy/clipfrac_avg", math.nan)})
    curve = pd.DataFrame(rows)
    curve["seconds"] = step_seconds.cumsum()
    tokens = curve["response_length"].sum() * B
    return curve, {"seconds": float(step_seconds.sum()), "wall_seconds": wall, "response_tokens": float(tokens),
                   "generated_positions": cfg.updates * B * L, "rollout_seconds": rollout_seconds,
                   "score_check_max_abs_diff": float((curve["trl_scores"] - curve["check_scores"]).abs().max()),
                   "threads_after_init": torch.get_num_threads(), "gc_mode": gc_mode, "gc_calls": gc_count,
                   "gc_seconds": gc_seconds}


# ---------------------------------------------------------------- summaries
def curve_summary(curve: pd.DataFrame, column: str, window: int) -> dict[str, float]:
    """Start (row 0: the SFT policy's batch), peak of the rolling mean over ``window`` updates and where it
    is, final (mean of the last ``window`` rows)."""
    values = curve[column].astype(float)
    smooth = values.rolling(window, min_periods=1, center=True).mean()
    peak_at = int(smooth.idxmax())
    return {f"{column}_start": values.iloc[0], f"{column}_peak": smooth.iloc[peak_at],
            f"{column}_peak_update": int(curve["update"].iloc[peak_at]),
            f"{column}_final": values.iloc[-window:].mean()}


def summary_row(impl: str, clip, beta, curve: pd.DataFrame, timing: dict, cfg: RLHFConfig, window: int) -> dict:
    row = {"impl": impl, "clip": "none" if clip is None else clip, "beta": beta, "updates": cfg.updates,
           "seconds": timing["seconds"], "updates_per_s": cfg.updates / timing["seconds"],
           "response_tokens_per_s": timing["response_tokens"] / timing["seconds"],
           "generated_positions_per_s": timing["generated_positions"] / timing["seconds"],
           "rollout_share": timing["rollout_seconds"] / timing["seconds"]}
    for column in ("gold_reward", "proxy_reward"):
        row.update(curve_summary(curve, column, window))
    row["ref_kl_k1_final"] = curve["ref_kl_k1"].iloc[-window:].mean()
    return row


def fmt(x, digits=2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def markdown(summary: pd.DataFrame, speed: pd.DataFrame, meta: dict) -> str:
    lines = [f"# TRL {meta['versions'].get('trl')} PPO beside ours (ppo/rlhf)", "",
             f"Measured {meta['date']} on {meta['host']['cpu']} ({meta['host']['cpu_count']} cores, shared with "
             f"other jobs; load average {meta['load_start']} at the start, {meta['load_end']} at the end), one "
             f"thread each, both sides in one process. Batch {meta['batch']}, {meta['epochs']} epochs × "
             f"{meta['minibatches']} minibatches, response length {meta['length']}, seed {meta['seed']}; curves at "
             f"size {meta['curve_size']} ({meta['sizes'][meta['curve_size']]}). Times are per update (rollout and optimisation; "
             f"setup excluded); response tokens count up to and including EOS (positions generated per update: "
             f"{meta['batch']} × {meta['length']}); rollout share: the part of an update spent sampling and "
             f"scoring (for TRL: until its reward model is called).", ""]
    if len(speed):
        lines += [f"## Speed, rounds of three runs ({meta['speed_updates']} updates each, clip 0.2, ref β 0.03; "
                  "ours, TRL with its gc.collect() calls, TRL with them skipped; the order rotating)", "",
                  "| size | round | order | ours upd/s | TRL upd/s (gc kept) | TRL upd/s (gc skipped) | ours / TRL "
                  "(gc kept) | ours / TRL (gc skipped) | TRL gc ms / update | TRL gc calls / update |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in speed.itertuples(index=False):
            lines.append(f"| {r.size} | {r.round} | {r.order} | {fmt(r.ours_updates_per_s)} | "
                         f"{fmt(r.trl_updates_per_s)} | {fmt(r.trl_nogc_updates_per_s)} | {fmt(r.ratio)}× | "
                         f"{fmt(r.ratio_nogc)}× | {fmt(r.trl_gc_ms_per_update, 1)} | {fmt(r.trl_gc_calls_per_update)} |")
        lines.append("")
        for size, part in speed.groupby("size", sort=False):
            lines.append(f"- {size} ({meta['sizes'][size]}): ours / TRL median {fmt(float(part['ratio'].median()))}× "
                         f"with TRL's gc.collect() (range {fmt(part['ratio'].min())}–{fmt(part['ratio'].max())}×), "
                         f"{fmt(float(part['ratio_nogc'].median()))}× without (range "
                         f"{fmt(part['ratio_nogc'].min())}–{fmt(part['ratio_nogc'].max())}×); TRL's gc.collect() "
                         f"{fmt(float(part['trl_gc_ms_per_update'].median()), 1)} ms per update (median).")
        lines.append("")
    if len(summary):
        lines += [f"## Speed of the curve runs ({meta['updates']} updates each; ours first in each cell, so load "
                  f"drift between the two runs of a cell enters the ratio)", "",
                  "| clip ε | ref β | ours upd/s | TRL upd/s | ours / TRL | ours resp. tok/s | TRL resp. tok/s "
                  "| ours rollout share | TRL rollout share |", "|---|---|---|---|---|---|---|---|---|"]
        pivot = summary.set_index(["clip", "beta", "impl"])
        ratios = []
        for clip, beta in summary[["clip", "beta"]].drop_duplicates().itertuples(index=False):
            o, t = pivot.loc[(clip, beta, "ours")], pivot.loc[(clip, beta, "trl")]
            ratios.append(o["updates_per_s"] / t["updates_per_s"])
            lines.append(f"| {clip} | {beta} | {fmt(o['updates_per_s'])} | {fmt(t['updates_per_s'])} | "
                         f"{fmt(ratios[-1])}× | {o['response_tokens_per_s']:.0f} | {t['response_tokens_per_s']:.0f} | "
                         f"{o['rollout_share']:.0%} | {t['rollout_share']:.0%} |")
        lines += ["", f"Ratio ours / TRL: median {fmt(float(pd.Series(ratios).median()))}×, "
                      f"range {fmt(min(ratios))}–{fmt(max(ratios))}×.", "",
                  f"## Curves (start = update 0, the SFT policy's batch; peak of a {meta['window']}-update centred "
                  f"rolling mean and where; final = mean of the last {meta['window']} updates)", "",
                  "| clip ε | ref β | impl | gold start | gold peak (update) | gold final | proxy start | proxy peak "
                  "(update) | proxy final | k1 KL(π‖π_ref) final |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in summary.itertuples(index=False):
            lines.append(f"| {r.clip} | {r.beta} | {r.impl} | {fmt(r.gold_reward_start)} | {fmt(r.gold_reward_peak)} "
                         f"({r.gold_reward_peak_update}) | {fmt(r.gold_reward_final)} | {fmt(r.proxy_reward_start)} | "
                         f"{fmt(r.proxy_reward_peak)} ({r.proxy_reward_peak_update}) | {fmt(r.proxy_reward_final)} | "
                         f"{fmt(r.ref_kl_k1_final)} |")
        lines.append("")
    lines += ["## Checks", "", f"- Port (ours → GPT-2): {json.dumps(meta['port_error'])}",
              f"- TRL's own mean score minus ours on the captured batches, largest |difference| over updates: "
              f"{meta['score_check']}", f"- Versions: {json.dumps(meta['versions'])}", "",
              "What differs between the two implementations: see the docstring of benchmarks/rlhf_trl.py.", ""]
    return "\n".join(lines)


def parse_clip(text: str) -> float | None:
    return None if text.lower() in ("none", "null", "inf") else float(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "rlhf_trl")
    p.add_argument("--quick", action="store_true", help="one cell, 4 updates, small SFT/RM budgets")
    p.add_argument("--clip", nargs="+", type=parse_clip, default=None, help="clip ε values ('none': no clipping)")
    p.add_argument("--beta", nargs="+", type=float, default=None, help="fixed reference-KL β values")
    p.add_argument("--updates", type=int, default=None, help="updates per run (default 150, quick 4)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--window", type=int, default=None, help="updates averaged for peak and final (default 5)")
    p.add_argument("--no-curves", action="store_true", help="only the paired speed runs")
    p.add_argument("--speed-pairs", type=int, default=None,
                   help="rounds of short runs per size (ours, TRL with gc.collect, TRL without; the order "
                        "rotating) for the speed ratios (default 3, quick 1)")
    p.add_argument("--speed-updates", type=int, default=None, help="updates per speed run (default 20, quick 2)")
    p.add_argument("--sizes", nargs="+", choices=list(SIZES), default=None,
                   help="model sizes of the speed rounds (default small large, quick small)")
    p.add_argument("--curve-size", choices=list(SIZES), default="small", help="model size of the curve runs")
    args = p.parse_args(argv)
    args.clip = args.clip or ([0.2] if args.quick else [0.2, None])
    args.beta = args.beta or ([0.03] if args.quick else [0.0, 0.1])
    args.updates = args.updates or (4 if args.quick else 150)
    args.window = args.window or (2 if args.quick else 5)
    args.speed_pairs = (1 if args.quick else 3) if args.speed_pairs is None else args.speed_pairs
    args.speed_updates = args.speed_updates or (2 if args.quick else 20)
    args.sizes = args.sizes or (["small"] if args.quick else ["small", "large"])
    if args.no_curves:
        args.clip, args.beta = [], []
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)

    versions = trl_versions()
    if versions["trl"] is None:
        print("error: TRL is not installed; set it up as the docstring says (.venv-trl)", file=sys.stderr)
        return 2
    off_pin = {k: v for k, v in versions.items() if v is None or not v.startswith(TRL_PINS[k])}
    if off_pin:
        print(f"warning: versions differ from the pins {TRL_PINS}: {off_pin}", file=sys.stderr)

    from ppo.training import records
    load_start = os.getloadavg()
    cfg0 = cell_config(args, 0.2, 0.03, size=args.curve_size)  # the starting models depend on none of the cell's settings
    all_models, build_seconds, ports, parameters = {}, {}, {}, {}
    for size in dict.fromkeys([args.curve_size, *args.sizes]) if not args.no_curves else args.sizes:
        t0 = time.perf_counter()
        models = all_models[size] = build_models(cell_config(args, 0.2, 0.03, size=size))
        build_seconds[size] = time.perf_counter() - t0
        parameters[size] = parameter_count(models.sft)
        print(f"{size} models ({parameters[size]:,} policy parameters) built in {build_seconds[size]:.1f} s: "
              f"{json.dumps({k: round(v, 3) for k, v in models.info.items()})}", flush=True)
        port = ports[size] = port_error(models, port_policy(models.sft, models.language),
                                        port_scalar(models.reward, models.language))
        print(f"port check ({size}): {port}", flush=True)
        if port["policy_logprob_max_abs_diff"] > 1e-3 or port["reward_max_abs_diff"] > 1e-3 or port["pad_prob_max"] > 1e-9:
            raise RuntimeError(f"the GPT-2 copies do not compute our models ({size}): {port}")
    models = all_models.get(args.curve_size)

    curves, summary, timings, speed = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="rlhf_trl_") as workdir:
        for clip in args.clip:
            for beta in args.beta:
                cfg = cell_config(args, clip, beta, size=args.curve_size)
                for impl, runner in (("ours", run_ours), ("trl", run_trl)):
                    print(f"clip {clip} beta {beta}: {impl} ...", flush=True)
                    if impl == "ours":
                        curve, timing = runner(cfg, args.seed, models)
                    else:
                        curve, timing = runner(cfg, args.seed, models, Path(workdir))
                    curve.insert(0, "impl", impl)
                    curve.insert(1, "clip", "none" if clip is None else clip)
                    curve.insert(2, "beta", beta)
                    curves.append(curve)
                    summary.append(summary_row(impl, clip, beta, curve, timing, cfg, args.window))
                    timings.append({"impl": impl, "clip": clip, "beta": beta, **timing})
                    s = summary[-1]
                    print(f"  {impl}: {s['updates_per_s']:.2f} updates/s, gold {s['gold_reward_start']:+.2f} -> "
                          f"peak {s['gold_reward_peak']:+.2f} (update {s['gold_reward_peak_update']}) -> final "
                          f"{s['gold_reward_final']:+.2f}, proxy final {s['proxy_reward_final']:+.2f}", flush=True)

        kinds = ("ours", "trl", "trl_nogc")
        for size in args.sizes:
            cfg = cell_config(args, 0.2, 0.03, args.speed_updates, size=size)
            for round_ in range(args.speed_pairs):
                order = kinds[round_ % 3:] + kinds[: round_ % 3]  # who goes first rotates
                rates, gc_stats = {}, {}
                for impl in order:
                    seed = args.seed + 1 + round_
                    _, timing = (run_ours(cfg, seed, all_models[size]) if impl == "ours" else
                                 run_trl(cfg, seed, all_models[size], Path(workdir),
                                         gc_mode="keep" if impl == "trl" else "skip"))
                    rates[impl] = (cfg.updates / timing["seconds"], timing["response_tokens"] / timing["seconds"])
                    gc_stats[impl] = timing
                speed.append({"size": size, "parameters": parameters[size], "round": round_, "order": ", ".join(order),
                              "updates": cfg.updates, "ours_updates_per_s": rates["ours"][0],
                              "trl_updates_per_s": rates["trl"][0], "trl_nogc_updates_per_s": rates["trl_nogc"][0],
                              "ratio": rates["ours"][0] / rates["trl"][0],
                              "ratio_nogc": rates["ours"][0] / rates["trl_nogc"][0],
                              "trl_gc_ms_per_update": 1000 * gc_stats["trl"]["gc_seconds"] / cfg.updates,
                              "trl_gc_calls_per_update": gc_stats["trl"]["gc_calls"] / cfg.updates,
                              "trl_nogc_calls_skipped": gc_stats["trl_nogc"]["gc_calls"],
                              "ours_tokens_per_s": rates["ours"][1], "trl_tokens_per_s": rates["trl"][1],
                              "trl_nogc_tokens_per_s": rates["trl_nogc"][1]})
                r = speed[-1]
                print(f"speed {size} round {round_} ({r['order']}): ours {r['ours_updates_per_s']:.2f}, TRL "
                      f"{r['trl_updates_per_s']:.2f} (gc kept, {r['trl_gc_ms_per_update']:.1f} ms/update in gc) and "
                      f"{r['trl_nogc_updates_per_s']:.2f} (gc skipped) updates/s; ratios {r['ratio']:.2f}, "
                      f"{r['ratio_nogc']:.2f}", flush=True)

    summary, speed = pd.DataFrame(summary), pd.DataFrame(speed)
    host = records.host_info()
    meta = {"date": time.strftime("%Y-%m-%d"), "host": host, "load_start": " ".join(f"{x:.1f}" for x in load_start),
            "load_end": " ".join(f"{x:.1f}" for x in os.getloadavg()), "batch": cfg0.batch_size,
            "epochs": cfg0.epochs, "minibatches": cfg0.batch_size // cfg0.minibatch_size,
            "length": cfg0.language.max_response_length, "curve_size": args.curve_size,
            "sizes": {k: f"d = {v['d_model']}, {v['n_layer']} layers, {v['n_head']} heads"
                         + (f", {parameters[k]:,} policy parameters" if k in parameters else "")
                      for k, v in SIZES.items()},
            "updates": args.updates, "speed_updates": args.speed_updates,
            "seed": args.seed, "window": args.window,
            "port_error": {size: {k: float(f"{v:.3g}") for k, v in port.items()} for size, port in ports.items()},
            "versions": versions,
            "score_check": fmt(max([t.get("score_check_max_abs_diff", 0.0) for t in timings] + [0.0]), 6)}
    args.out.mkdir(parents=True, exist_ok=True)
    if curves:
        pd.concat(curves, ignore_index=True).to_csv(args.out / "curves.csv", index=False)
        summary.to_csv(args.out / "summary.csv", index=False)
    if len(speed):
        speed.to_csv(args.out / "speed.csv", index=False)
    (args.out / "summary.md").write_text(markdown(summary, speed, meta))
    records.write_json({**meta, "argv": sys.argv[1:], "quick": args.quick, "build_seconds": build_seconds,
                        "models": {size: m.info for size, m in all_models.items()}, "timings": timings,
                        "code": records.git_state(),
                        "threads": torch.get_num_threads()}, args.out / "manifest.json")
    print((args.out / "summary.md").read_text())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
