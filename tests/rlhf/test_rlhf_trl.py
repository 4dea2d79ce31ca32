"""benchmarks/rlhf_trl.py: its bookkeeping without TRL; with TRL (the optional .venv-trl, never required), that
our models copied into GPT-2 compute the same log-probabilities and scores, and that two TRL updates run on
our task and their batches are captured. Its speed and curves are measured, not tested."""
import importlib.util
import os
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest
import torch

from ppo.rlhf.config import load_variant
from ppo.rlhf.language import EOS
from ppo.rlhf.train import build_models

with mock.patch.dict(os.environ):  # the script pins threads and the hub off for its own process only
    spec = importlib.util.spec_from_file_location("rlhf_trl", Path(__file__).parents[2] / "benchmarks/rlhf_trl.py")
    rlhf_trl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rlhf_trl)

TINY = {"updates": 2, "sft": {"steps": 20}, "reward_model": {"pairs": 64, "normalise_samples": 64}}


def test_curve_summary_takes_start_smoothed_peak_and_final():
    curve = pd.DataFrame({"update": range(6), "gold_reward": [0.0, 1.0, 5.0, 3.0, 1.0, -1.0]})
    s = rlhf_trl.curve_summary(curve, "gold_reward", window=2)
    assert s["gold_reward_start"] == 0.0
    assert s["gold_reward_final"] == 0.0  # mean of 1 and -1
    # centred rolling mean of 2 (pandas: the row and the one before): 0, .5, 3, 4, 2, 0 -> peak 4 at update 3
    assert (s["gold_reward_peak"], s["gold_reward_peak_update"]) == (4.0, 3)


def test_no_clipping_is_spelled_none():
    assert rlhf_trl.parse_clip("none") is None and rlhf_trl.parse_clip("0.2") == 0.2


def test_trl_gc_calls_are_timed_or_skipped_in_the_module_only(monkeypatch):
    """The stand-in for TRL's trainer module's ``gc``: 'keep' calls the real gc.collect and times it, 'skip' calls
    nothing; both count, the module gets its gc back, and gc itself is never touched."""
    import gc
    import types

    real_calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: real_calls.append(a) or 7)
    module = types.SimpleNamespace(gc=gc)
    with rlhf_trl.trl_gc(module, "keep") as calls:
        assert module.gc.collect() == 7 and module.gc.isenabled() == gc.isenabled()  # the rest is the real gc
        module.gc.collect()
    assert module.gc is gc and len(real_calls) == 2 and len(calls.calls) == 2
    with rlhf_trl.trl_gc(module, "skip") as skipped:
        assert module.gc.collect() == 0
    assert len(real_calls) == 2 and len(skipped.calls) == 1 and module.gc is gc
    start = skipped.calls[0][0]
    assert skipped.within(start, start + 1) == (1, skipped.calls[0][1]) and skipped.within(start + 1, start + 2) == (0, 0.0)
    with pytest.raises(ValueError):
        rlhf_trl.GcCalls("maybe")


def test_the_larger_model_size():
    args = types_namespace(quick=True, updates=3)
    small, large = (rlhf_trl.cell_config(args, 0.2, 0.03, size=s) for s in ("small", "large"))
    assert small.policy_model == load_variant("clip_0.2").config.policy_model  # the study's model
    assert (large.policy_model.d_model, large.policy_model.n_layer, large.policy_model.n_head) == (128, 4, 4)
    assert large.reward_model.model is None  # the reward and value models follow the policy's size
    from ppo.rlhf.model import Transformer
    count = {s: rlhf_trl.parameter_count(Transformer(26, 20, c.policy_model)) for s, c in (("small", small), ("large", large))}
    assert 100_000 < count["small"] < 110_000 and 780_000 < count["large"] < 820_000


def types_namespace(**kw):
    import argparse
    return argparse.Namespace(**kw)


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("trl", reason="TRL is optional: benchmarks/rlhf_trl.py sets up .venv-trl")
    cfg = load_variant("clip_0.2", **TINY).config
    return cfg, build_models(cfg)


def test_gpt2_copies_compute_our_models(tiny):
    cfg, models = tiny
    lang = models.language
    policy, reward = rlhf_trl.port_policy(models.sft, lang), rlhf_trl.port_scalar(models.reward, lang)
    err = rlhf_trl.port_error(models, policy, reward, n=64)
    assert err["policy_logprob_max_abs_diff"] < 1e-4 and err["reward_max_abs_diff"] < 1e-4
    assert err["pad_prob_max"] < 1e-12  # the padding token is never sampled
    tok = rlhf_trl.char_tokenizer(lang)
    seq = lang.sample(2, torch.Generator().manual_seed(0))
    text = lang.decode(seq[0])
    assert tok(text)["input_ids"] == seq[0, : len(text)].tolist()
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (0, EOS, lang.vocab_size)


def test_two_trl_updates_on_our_task(tiny, tmp_path):
    cfg, models = tiny
    curve, timing = rlhf_trl.run_trl(cfg, 0, models, tmp_path)
    assert list(curve["update"]) == [0, 1] and timing["seconds"] > 0
    # the captured batches are the ones TRL scored: its mean score equals ours on them
    assert (curve["trl_scores"] - curve["check_scores"]).abs().max() < 1e-4
    assert curve[["gold_reward", "proxy_reward", "ref_kl_k1"]].notna().all().all()
    assert timing["gc_mode"] == "keep" and timing["gc_calls"] > 0  # the stand-in reached the trainer's gc.collect()
