"""The RLHF study's pieces by hand (ppo/rlhf): per-token rewards and masking after EOS, GAE over tokens
against a reference loop, the GRPO/RLOO/ReMax advantages (whitened and as published), GRPO's KL term in the loss,
the Bradley-Terry loss, the KL estimators against the exact KL, the reference-KL controller and its horizon, the
gold reward, the config files and pipeline seeds, the held-out evaluation, and a short learning run."""
import dataclasses
import math
import re
import shutil

import pytest
import torch
import yaml

from ppo.config.errors import ConfigError
from ppo.rlhf import losses as L
from ppo.rlhf.config import (RLHF_DIR, HeldOutSettings, LanguageSettings, ModelSettings, ReferenceKL,
                             RewardModelSettings, RLHFConfig, SampleSettings, SFTSettings, load_variant,
                             pipeline_seeded, variant_names)
from ppo.rlhf.language import EOS, Language, response_mask
from ppo.rlhf.model import Transformer, generate, response_logits, token_log_probs
from ppo.rlhf.train import advantages, build_models, models_key, rollout, train

W = 5  # a word token (EOS = 1, words from 2)


# ---- per-token rewards and masking after EOS
def test_response_mask_keeps_tokens_up_to_the_first_eos():
    responses = torch.tensor([[W, W, EOS, EOS], [W, W, W, W], [EOS, W, EOS, W]])
    assert response_mask(responses).tolist() == [[True, True, True, False], [True, True, True, True],
                                                 [True, False, False, False]]


def test_token_rewards_by_hand():
    responses = torch.tensor([[W, 6, EOS, EOS], [W, 6, 7, 8]])  # the second is cut without EOS
    mask = response_mask(responses)
    logp = torch.tensor([[-1.0, -2.0, -0.5, -9.0], [-1.0, -1.0, -1.0, -1.0]])
    ref_logp = torch.tensor([[-2.0, -2.0, -1.0, -1.0], [-1.5, -1.0, -1.0, -3.0]])
    has_eos = (responses == EOS).any(1)
    scores = L.scores_with_penalty(torch.tensor([1.0, 2.0]), has_eos, penalty=1.0)
    assert scores.tolist() == [1.0, 1.0]  # 2 − 1 for the missing EOS
    rewards = L.token_rewards(scores, logp, ref_logp, mask, beta=0.5)
    # row 0: −0.5·(1, 0, 0.5) and the score on EOS; the padding (which would give −0.5·(−8) = 4) counts 0
    # row 1: −0.5·(0.5, 0, 0, 2) and the penalised score on the last token
    torch.testing.assert_close(rewards, torch.tensor([[-0.5, 0.0, 0.75, 0.0], [-0.25, 0.0, 0.0, 0.0]]))


# ---- GAE over tokens
def reference_gae(rewards, values, lengths, gamma, lam):
    """The definition, one response and one token at a time: A_t = Σ_k (γλ)^(k−t) δ_k over the response."""
    B, T = rewards.shape
    adv = torch.zeros(B, T, dtype=torch.float64)
    for b in range(B):
        n = int(lengths[b])
        for t in range(n):
            total = 0.0
            for k in range(t, n):
                next_value = values[b, k + 1].item() if k + 1 < n else 0.0
                total += (gamma * lam) ** (k - t) * (rewards[b, k].item() + gamma * next_value - values[b, k].item())
            adv[b, t] = total
    return adv


def test_gae_by_hand():
    # γ = 1, λ = 0.5; r = (0, 1), V = (0.5, 0.5): δ1 = 1 − 0.5, δ0 = 0 + 0.5 − 0.5; A0 = 0 + 0.5·0.5
    adv, ret = L.gae(torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([[0.5, 0.5, 7.0]]),
                     torch.tensor([[True, True, False]]), 1.0, 0.5)
    assert adv.tolist() == [[0.25, 0.5, 0.0]]
    assert ret.tolist() == [[0.75, 1.0, 0.0]]  # the value past the end (7) never enters


@pytest.mark.parametrize("gamma, lam", [(1.0, 0.95), (0.9, 0.8)])
def test_gae_matches_reference_loop(gamma, lam):
    g = torch.Generator().manual_seed(0)
    rewards, values = (torch.randn(6, 7, generator=g, dtype=torch.float64) for _ in range(2))
    lengths = torch.tensor([7, 1, 3, 5, 2, 6])
    mask = torch.arange(7)[None] < lengths[:, None]
    adv, ret = L.gae(rewards * mask, values, mask, gamma, lam)
    expected = reference_gae(rewards, values, lengths, gamma, lam)
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(ret, expected + values * mask)


def test_whiten_by_hand():
    x = torch.tensor([[1.0, 2.0, 99.0], [3.0, 99.0, 99.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    # mean 2, population variance 2/3 over the valid tokens; padding stays 0
    s = math.sqrt(2 / 3)
    torch.testing.assert_close(L.whiten(x, mask), torch.tensor([[-1 / s, 0.0, 0.0], [1 / s, 0.0, 0.0]]), atol=1e-6, rtol=0)


def test_clipped_value_loss_by_hand():
    old, ret, mask = torch.tensor([[1.0, 1.0]]), torch.tensor([[2.0, 2.0]]), torch.tensor([[True, True]])
    # V = 1.5: unclipped 0.25, clipped at 1.2 → 0.64 (the larger); V = 0.5: unclipped 2.25, clipped at 0.8 → 1.44
    loss, clipfrac = L.clipped_value_loss(torch.tensor([[1.5, 0.5]]), old, ret, mask, 0.2)
    assert loss.item() == pytest.approx(0.5 * (0.64 + 2.25) / 2)
    assert clipfrac.item() == 0.5
    loss, _ = L.clipped_value_loss(torch.tensor([[1.5, 0.5]]), old, ret, mask, None)
    assert loss.item() == pytest.approx(0.5 * (0.25 + 2.25) / 2)


# ---- critic-free baselines
def test_reference_kl_loss_by_hand():
    """GRPO's KL term (DeepSeekMath eq. 4): k3 = π_ref/π − log(π_ref/π) − 1 per valid token, averaged over them."""
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    ref_logp = torch.tensor([[-2.0, -2.0, -1.0]])
    mask = torch.tensor([[True, True, False]])  # the third token is after EOS
    term = L.reference_kl_loss(logp, ref_logp, mask)
    # log(π_ref/π) = −1 and 0: k3 = (e^−1 + 1 − 1) and 0, mean over the two valid tokens
    assert term.item() == pytest.approx(math.exp(-1) / 2)
    term.backward()
    # d k3 / d log π = 1 − π_ref/π: 1 − e^−1 and 0, halved by the mean; nothing through the padding
    assert logp.grad[0].tolist() == pytest.approx([(1 - math.exp(-1)) / 2, 0.0, 0.0])
    same = L.reference_kl_loss(ref_logp.clone().requires_grad_(True), ref_logp, mask)
    assert same.item() == 0.0  # π = π_ref: no penalty


def test_grpo_rloo_remax_advantages_by_hand():
    returns = torch.tensor([1.0, 2.0, 3.0, 5.0, 5.0, 5.0])  # two prompts, three responses each
    # group 1: mean 2, sample std 1; group 2: all equal, so no signal
    torch.testing.assert_close(L.grpo_advantages(returns, 3), torch.tensor([-1.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
                               atol=1e-3, rtol=0)
    # leave-one-out: 1 − (2+3)/2, 2 − (1+3)/2, 3 − (1+2)/2
    assert L.rloo_advantages(returns, 3).tolist() == [-1.5, 0.0, 1.5, 0.0, 0.0, 0.0]
    assert L.remax_advantages(torch.tensor([1.0, 2.0]), torch.tensor([1.5, 1.5])).tolist() == [-0.5, 0.5]


# ---- the reward model's loss
def test_bradley_terry_loss_by_hand():
    chosen = torch.tensor([1.0, 0.0], requires_grad=True)
    loss = L.bradley_terry_loss(chosen, torch.tensor([0.0, 0.0]))
    assert loss.item() == pytest.approx((math.log(1 + math.exp(-1)) + math.log(2)) / 2)
    loss.backward()
    # d/dr_c of −log σ(r_c − r_r) is −σ(r_r − r_c), halved by the mean
    assert chosen.grad.tolist() == pytest.approx([-0.5 / (1 + math.e), -0.25])


# ---- KL divergences
def test_exact_kl_by_hand():
    p, q = torch.tensor([0.5, 0.5, 0.0 + 1e-30]), torch.tensor([0.25, 0.75, 1e-30])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert L.kl_exact(p.log(), q.log()).item() == pytest.approx(expected, abs=1e-6)
    assert L.kl_exact(p.log() + 3.0, q.log()).item() == pytest.approx(expected, abs=1e-6)  # logits, any shift


def test_k1_and_k3_estimate_the_exact_kl():
    logits_p, logits_q = torch.tensor([1.0, 0.0, -1.0, 0.5]), torch.tensor([0.0, 0.5, 0.0, -1.0])
    exact = L.kl_exact(logits_p, logits_q).item()
    g = torch.Generator().manual_seed(0)
    y = torch.multinomial(torch.softmax(logits_p, 0), 400_000, replacement=True, generator=g)
    logp, logq = torch.log_softmax(logits_p, 0)[y], torch.log_softmax(logits_q, 0)[y]
    k1, k3 = L.kl_k1(logp, logq), L.kl_k3(logp, logq)
    assert k1.mean().item() == pytest.approx(exact, abs=0.01)  # both unbiased
    assert k3.mean().item() == pytest.approx(exact, abs=0.01)
    assert (k1 < 0).any() and (k3 >= 0).all()  # k1 can be negative per sample, k3 never
    assert k3.var() < k1.var()  # here k3 has the lower variance


def test_ziegler_controller_by_hand():
    # β·(1 + clip(KL/target − 1, ±0.2)·n/H) with n = 64 responses, H = 10000
    assert L.ziegler_beta(0.1, 9.0, 6.0, 64, 10000) == pytest.approx(0.1 * (1 + 0.2 * 0.0064))  # clipped at +0.2
    assert L.ziegler_beta(0.1, 6.6, 6.0, 64, 10000) == pytest.approx(0.1 * (1 + 0.1 * 0.0064))
    assert L.ziegler_beta(0.1, 0.0, 6.0, 64, 10000) == pytest.approx(0.1 * (1 - 0.2 * 0.0064))  # clipped at −0.2
    assert L.ziegler_beta(0.1, 6.0, 6.0, 64, 10000) == 0.1


def test_the_controller_horizon_lets_beta_adapt_within_the_run():
    """The arithmetic of experiments/rlhf/variants/ref_adaptive*.yaml: 150 updates of 64 responses at full error."""
    def after(horizon, kl, updates=150):
        beta = 0.05
        for _ in range(updates):
            beta = L.ziegler_beta(beta, kl, 6.0, 64, horizon)
        return beta / 0.05

    adaptive, ziegler = load_variant("ref_adaptive").config, load_variant("ref_adaptive_h10000").config
    assert (adaptive.reference_kl.horizon, ziegler.reference_kl.horizon) == (640, 10000)
    assert adaptive.updates == ziegler.updates == 150 and adaptive.batch_size == 64
    assert after(10000, 100.0) == pytest.approx(1.00128 ** 150) == pytest.approx(1.2115, abs=1e-4)  # "×1.21"
    assert after(10000, 0.0) == pytest.approx(0.99872 ** 150) == pytest.approx(0.8252, abs=1e-4)
    assert after(640, 100.0) == pytest.approx(1.02 ** 150) == pytest.approx(19.50, abs=0.01)
    assert after(640, 0.0) == pytest.approx(0.98 ** 150) == pytest.approx(0.0483, abs=1e-4)
    assert after(640, 100.0, 36) >= 2 > after(640, 100.0, 35)  # doubles within 36 updates
    assert after(640, 0.0, 35) <= 0.5 < after(640, 0.0, 34)  # halves within 35


# ---- the language and its gold reward
def test_gold_reward_by_hand():
    lang = Language(LanguageSettings(num_words=4, successors=1, max_count=1, violation_penalty=1.0,
                                     repeat_penalty=0.5, min_response_length=1, max_response_length=5))
    lang.valence = torch.tensor([0.0, 0.0, 1.0, 2.0, 3.0, 4.0])
    lang.allowed = torch.zeros(6, 6, dtype=torch.bool)
    lang.allowed[2, 3] = lang.allowed[3, 5] = True
    lang.allowed[2:, EOS] = True
    prompts = torch.tensor([[0, 4, 2], [0, 4, 2]])
    responses = torch.tensor([[3, 3, 5, EOS, 2], [3, 5, 5, 5, 5]])
    out = lang.gold(prompts, responses)
    # row 0: 2→3 ok (+2), 3→3 ungrammatical and a second 3 (max_count 1): −1 − 0.5, 3→5 ok (+4); the 2 after EOS is padding
    # row 1: +2, +4, then three 5→5 violations that are also repeats: −3·(1 + 0.5)
    assert out["gold"].tolist() == [4.5, 1.5]
    assert out["violations"].tolist() == [1.0, 3.0]
    assert out["repeats"].tolist() == [1.0, 3.0]
    assert out["length"].tolist() == [4.0, 5.0]
    assert out["has_eos"].tolist() == [True, False]


def test_grammar_samples_are_grammatical_and_seeded():
    lang = Language(LanguageSettings())
    a, b = lang.sample(500, torch.Generator().manual_seed(1)), lang.sample(500, torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    P = 1 + lang.settings.prompt_length
    gold = lang.gold(a[:, :P], a[:, P:])
    assert gold["violations"].sum() == 0
    assert gold["length"].min() >= lang.settings.min_response_length + 1
    assert torch.equal(Language(LanguageSettings()).valence, lang.valence)
    assert not torch.equal(Language(LanguageSettings(seed=1)).valence, lang.valence)


# ---- the model
def test_model_is_causal_and_temperature_scales_log_probs():
    torch.manual_seed(0)
    model = Transformer(10, 8, ModelSettings(d_model=16, n_layer=1, n_head=2))
    x = torch.randint(10, (2, 8))
    y = x.clone()
    y[:, 5:] = (y[:, 5:] + 1) % 10
    torch.testing.assert_close(model(x)[:, :5], model(y)[:, :5])  # later tokens never reach earlier positions
    queries, responses = x[:, :3], x[:, 3:]
    logits = response_logits(model, queries, responses, temperature=2.0)
    raw = model(x)[:, 2:-1]
    torch.testing.assert_close(token_log_probs(logits, responses),
                               torch.log_softmax(raw / 2.0, -1).gather(-1, responses[..., None])[..., 0])
    r1 = generate(model, queries, 5, 0.7, torch.Generator().manual_seed(3))
    assert torch.equal(r1, generate(model, queries, 5, 0.7, torch.Generator().manual_seed(3)))
    assert ((r1 == EOS).cumsum(1) > 0).eq(r1 == EOS).logical_or((r1 == EOS).cumsum(1) == 0).all()  # EOS pads after EOS


def test_kv_cache_generation_matches_rerunning_the_prefix():
    """The KV cache changes only the order of floating-point sums: same tokens for a seed, logits within
    1e-5, and the logits it returns are those response_logits computes on the responses."""
    torch.manual_seed(0)
    model = Transformer(10, 12, ModelSettings(d_model=16, n_layer=2, n_head=2))
    queries = torch.randint(2, 10, (32, 4))
    for greedy in (False, True):
        runs = [generate(model, queries, 8, 0.7, torch.Generator().manual_seed(5), greedy, cache=cache,
                         return_logits=True) for cache in (True, False)]
        (r_cached, l_cached), (r_plain, l_plain) = runs
        assert torch.equal(r_cached, r_plain)
        torch.testing.assert_close(l_cached, l_plain, rtol=0, atol=1e-5)
        with torch.no_grad():
            torch.testing.assert_close(l_cached, response_logits(model, queries, r_cached, 0.7), rtol=0, atol=1e-5)
    assert torch.equal(r_cached, generate(model, queries, 8, 0.7, None, greedy=True))  # the default: cached


# ---- configuration files
def test_every_variant_loads_and_the_two_kls_stay_apart():
    names = variant_names()
    assert {"clip_0.2", "no_clip", "kl_fixed_1", "kl_adaptive_0.01", "ref_beta_0", "ref_beta_0.3", "ref_adaptive",
            "grpo", "rloo", "remax", "best_of_n", "rm_pairs_1000", "rm_d128"} <= set(names)
    configs = {n: load_variant(n).config for n in names}
    assert configs["kl_adaptive_0.01"].objective.kl_target == 0.01  # trust-region d_targ
    assert configs["kl_adaptive_0.01"].reference_kl.target is None
    assert configs["ref_adaptive"].reference_kl.target == 6.0  # reference-KL controller
    assert configs["ref_adaptive"].objective.kl_target is None
    assert load_variant("clip_0.2", updates=7).config.updates == 7


@pytest.mark.parametrize("overrides, field", [
    ({"reference_kl": {"beta": -1}}, "reference_kl.beta"),
    ({"reference_kl": {"betta": 1}}, "reference_kl.betta"),
    ({"objective": {"clip_epsilon": 0}}, "objective.clip_epsilon"),
    ({"language": {"num_words": "24"}}, "language.num_words"),
    ({"batch_size": 60, "minibatch_size": 16}, "minibatch_size"),
    ({"algorithm": "grpo", "group_size": 1}, "group_size"),
])
def test_bad_settings_name_the_file_and_field(tmp_path, overrides, field):
    shutil.copytree(RLHF_DIR / "presets", tmp_path / "presets")
    (tmp_path / "variants").mkdir()
    (tmp_path / "variants" / "broken.yaml").write_text(yaml.safe_dump({"label": "x", "preset": "rlhf_grammar",
                                                                       "overrides": overrides}))
    with pytest.raises(ConfigError, match=r"variants/broken\.yaml: .*" + re.escape(field)):
        load_variant("broken", tmp_path)


# ---- a short run: tiny language, model and budget (a few seconds on one thread)
TINY = RLHFConfig(
    updates=15, batch_size=64, minibatch_size=16, epochs=2, learning_rate=1e-3,
    language=LanguageSettings(num_words=8, successors=2, prompt_length=2, max_response_length=8,
                              min_response_length=2, eos_prob=0.25),
    policy_model=ModelSettings(d_model=32, n_layer=1, n_head=2),
    sft=SFTSettings(steps=150, batch_size=64, learning_rate=3e-3),
    reward_model=RewardModelSettings(pairs=1000, epochs=2, learning_rate=1e-3, normalise_samples=512),
    reference_kl=ReferenceKL(beta=0.05), samples=SampleSettings(every=5, count=2))


@pytest.fixture(scope="module")
def tiny_models():
    torch.set_num_threads(1)
    return build_models(TINY)


def test_reward_model_is_normalised_and_tracks_gold(tiny_models):
    info = tiny_models.info
    assert info["rm_norm_mean"] == pytest.approx(0.0, abs=1e-5) and info["rm_norm_std"] == pytest.approx(1.0)
    assert info["rm_accuracy_gold"] > 0.75  # held-out pairs ordered as the gold reward orders them


def test_gold_reward_rises_with_a_reference_kl_penalty(tiny_models):
    result = train(TINY, seed=0, models=tiny_models)
    u = result.updates
    assert len(u) == TINY.updates + 1 and u["update"].tolist() == list(range(TINY.updates + 1))
    # observed (seeds 0-4): gold 2.7-3.2 at the start, 5.1-6.2 over the last 3 updates; proxy −0.3-0.1 → 1.4
    assert u["gold_reward"].iloc[-3:].mean() > u["gold_reward"].iloc[0] + 1.0
    assert u["proxy_reward"].iloc[-3:].mean() > u["proxy_reward"].iloc[0] + 0.5
    assert u["ref_kl"].iloc[0] == pytest.approx(0.0, abs=1e-6) and u["ref_kl"].iloc[-1] > 0.5
    assert u["tr_kl"].iloc[:-1].gt(0).all() and u["tr_kl"].isna().iloc[-1]  # the last row measures only
    assert set(result.samples["update"]) == {0, 5, 10, 15}
    # a rerun with the same seed is identical; another seed differs
    short = dataclasses.replace(TINY, updates=2)
    again = train(short, seed=0, models=tiny_models).updates
    assert again.equals(train(short, seed=0, models=tiny_models).updates)
    assert not again.equals(train(short, seed=1, models=tiny_models).updates)
    torch.testing.assert_close(torch.tensor(again["gold_reward"].iloc[:2].values),
                               torch.tensor(u["gold_reward"].iloc[:2].values))


@pytest.mark.parametrize("algorithm", ["grpo", "rloo", "remax"])
def test_baselines_run_through_the_same_path(tiny_models, algorithm):
    cfg = dataclasses.replace(TINY, algorithm=algorithm, updates=3)
    u = train(cfg, seed=0, models=tiny_models).updates
    assert len(u) == 4 and u["explained_variance"].isna().all() and u["value_loss"].isna().all()
    assert u["tr_kl"].iloc[:-1].gt(0).all()


def test_best_of_n_climbs_the_proxy(tiny_models):
    cfg = dataclasses.replace(TINY, algorithm="best_of_n")
    u = train(cfg, seed=0, models=tiny_models).updates
    assert u["n"].tolist() == [1, 2, 4, 8, 16, 32, 64]
    assert u["ref_kl"].iloc[0] == 0 and u["ref_kl"].iloc[-1] == pytest.approx(math.log(64) - 63 / 64)
    assert u["score"].is_monotonic_increasing  # the max of a growing set of the same samples
    assert u["gold_reward"].iloc[-1] > u["gold_reward"].iloc[0]


def test_run_entry_point_writes_records_and_reuses_the_models(tmp_path):
    import json

    import pandas as pd

    from ppo.pipeline import rlhf_job as run
    tiny = ["updates=2", "batch_size=16", "minibatch_size=8", "language.num_words=8", "language.successors=2",
            "language.max_response_length=6", "language.min_response_length=2", "policy_model.d_model=16",
            "policy_model.n_layer=1", "sft.steps=20", "reward_model.pairs=64", "reward_model.normalise_samples=64",
            "reference_kl.beta=0.1"]
    argv = ["--variant", "clip_0.2", "--models-cache", str(tmp_path / "models")] + [a for s in tiny for a in ("--set", s)]
    assert run.main(argv + ["--seed", "0", "--out", str(tmp_path / "a")]) == 0
    assert run.main(argv + ["--seed", "0", "--out", str(tmp_path / "b")]) == 0
    a, b = (pd.read_parquet(tmp_path / d / "updates.parquet") for d in "ab")
    assert a.equals(b) and len(a) == 3  # the cached models give the same run
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["config"]["reference_kl"]["beta"] == 0.1 and manifest["seed"] == 0
    assert "cached" in manifest["models"] and "cached" not in json.loads((tmp_path / "a" / "manifest.json").read_text())["models"]
    assert len(list((tmp_path / "models").glob("models-*.pt"))) == 1
    assert set(pd.read_parquet(tmp_path / "a" / "samples.parquet")["update"]) == {0, 1, 2}  # the preset: every update
    assert manifest["pipeline_seeds"] is False
    updates = pd.read_parquet(tmp_path / "a" / "updates.parquet")
    assert updates["heldout_gold_reward"].notna().tolist() == [True, False, True]  # every 5 updates and the last
    # --pipeline-seeds: seed 1 seeds the grammar, SFT and reward model too (its own models file); seed 0 is unchanged
    assert run.main(argv + ["--seed", "1", "--pipeline-seeds", "--out", str(tmp_path / "d")]) == 0
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["pipeline_seeds"] is True and manifest["config"]["language"]["seed"] == 1
    assert manifest["config"]["sft"]["seed"] == manifest["config"]["reward_model"]["seed"] == 1
    assert len(list((tmp_path / "models").glob("models-*.pt"))) == 2
    assert run.main(argv + ["--seed", "0", "--pipeline-seeds", "--out", str(tmp_path / "e")]) == 0
    assert pd.read_parquet(tmp_path / "e" / "updates.parquet").equals(a)
    assert run.main(argv + ["--seed", "0", "--out", str(tmp_path / "c"), "--set", "reference_kl.bta=1"]) == 2


# ---- the reference KL in the loss, the baselines as published, the held-out prompts, pipeline seeds
def test_pipeline_seeds_move_every_seed_of_the_pipeline():
    cfg = load_variant("clip_0.2").config
    assert pipeline_seeded(cfg, 0) == cfg  # seed 0: the run without pipeline seeds
    seeded = pipeline_seeded(cfg, 2)
    assert (seeded.language.seed, seeded.sft.seed, seeded.reward_model.seed) == (2, 2, 2)
    assert dataclasses.replace(seeded, language=cfg.language, sft=cfg.sft, reward_model=cfg.reward_model) == cfg
    assert models_key(seeded) != models_key(cfg)
    shifted = dataclasses.replace(cfg, language=dataclasses.replace(cfg.language, seed=10))
    assert pipeline_seeded(shifted, 2).language.seed == 12  # added to the variant's own seed


@pytest.fixture(scope="module")
def tiny_batch(tiny_models):
    """One batch of 64 responses (16 prompts × 4) of the SFT policy, with its π_ref log-probs and scores."""
    queries = tiny_models.language.sample_prompts(16, torch.Generator().manual_seed(7)).repeat_interleave(4, 0)
    return rollout(TINY, tiny_models, tiny_models.sft, queries, torch.Generator().manual_seed(8))


def test_the_reference_kl_in_the_loss_leaves_the_reward_without_it(tiny_batch):
    """GRPO's two forms: KL in the reward (returns = score − β Σ k1) or in the loss (returns = score alone)."""
    b, beta = tiny_batch, 0.5
    k1_sum = ((b.old_logp - b.ref_logp) * b.mask).sum(1)
    grpo = dataclasses.replace(TINY, algorithm="grpo", whiten_advantages=False)
    in_reward, _ = advantages(grpo, b, beta, None, None)
    torch.testing.assert_close(in_reward, L.grpo_advantages(b.scores - beta * k1_sum, 4)[:, None] * b.mask)
    in_loss = dataclasses.replace(grpo, reference_kl=ReferenceKL(beta=beta, placement="loss"))
    adv, _ = advantages(in_loss, b, beta, None, None)
    torch.testing.assert_close(adv, L.grpo_advantages(b.scores, 4)[:, None] * b.mask)


def test_rloo_and_remax_as_published_are_not_whitened(tiny_batch, tiny_models):
    b, beta = tiny_batch, 0.1
    returns = b.scores - beta * ((b.old_logp - b.ref_logp) * b.mask).sum(1)
    for variant in ("rloo_published", "rloo"):
        cfg = dataclasses.replace(TINY, algorithm="rloo", group_size=4,
                                  whiten_advantages=load_variant(variant).config.whiten_advantages)
        adv, _ = advantages(cfg, b, beta, None, None)
        expected = L.rloo_advantages(returns, 4)[:, None] * b.mask  # Ahmadian et al.: used as it is
        torch.testing.assert_close(adv, expected if variant == "rloo_published" else L.whiten(expected, b.mask))
    greedy = rollout(TINY, tiny_models, tiny_models.sft, b.queries, None, greedy=True)
    greedy_returns = greedy.scores - beta * ((greedy.old_logp - greedy.ref_logp) * greedy.mask).sum(1)
    for variant in ("remax_published", "remax"):
        cfg = dataclasses.replace(TINY, algorithm="remax",
                                  whiten_advantages=load_variant(variant).config.whiten_advantages)
        adv, _ = advantages(cfg, b, beta, None, greedy)
        expected = (returns - greedy_returns)[:, None] * b.mask  # Li et al.: used as it is
        torch.testing.assert_close(adv, expected if variant == "remax_published" else L.whiten(expected, b.mask))


def test_kl_in_the_loss_at_beta_0_is_the_run_without_it(tiny_models):
    """β·k3 with β = 0 adds exact zeros to the loss and its gradient: the records are bit for bit those of the
    reward form at β = 0, plus the k3 term's column; at β > 0 the two forms differ."""
    base = dataclasses.replace(TINY, algorithm="grpo", whiten_advantages=False, updates=3,
                               reference_kl=ReferenceKL(beta=0.0))
    reward = train(base, seed=0, models=tiny_models).updates
    loss = train(dataclasses.replace(base, reference_kl=ReferenceKL(beta=0.0, placement="loss")), seed=0,
                 models=tiny_models).updates
    assert reward.equals(loss.drop(columns="ref_kl_loss_k3"))
    assert loss["ref_kl_loss_k3"].iloc[:-1].ge(0).all()  # k3 is never negative
    beta = dataclasses.replace(base, reference_kl=ReferenceKL(beta=0.5, placement="loss"))
    assert not train(beta, seed=0, models=tiny_models).updates["gold_reward"].equals(loss["gold_reward"])


def test_held_out_prompts_are_measured_without_touching_training(tiny_models):
    short = dataclasses.replace(TINY, updates=4)
    plain = train(short, seed=0, models=tiny_models)
    held = train(dataclasses.replace(short, held_out=HeldOutSettings(every=3, prompts=32)), seed=0, models=tiny_models)
    columns = [c for c in held.updates if c.startswith("heldout_")]
    assert {"heldout_gold_reward", "heldout_proxy_reward", "heldout_ref_kl", "heldout_violations"} <= set(columns)
    assert held.updates.drop(columns=columns).equals(plain.updates)  # the training streams are untouched
    assert held.samples.equals(plain.samples)
    assert held.updates["heldout_gold_reward"].notna().tolist() == [True, False, False, True, True]  # 0, 3, last
    assert held.updates["heldout_ref_kl"].iloc[0] == pytest.approx(0.0, abs=1e-5)  # the SFT policy is the reference
    assert "heldout_seconds" in held.timing and "heldout_seconds" not in plain.timing
    # the prompts and their sampling seed depend only on the run's seed: another run gets the same answers at update 0
    again = train(dataclasses.replace(short, updates=1, held_out=HeldOutSettings(every=3, prompts=32)), seed=0,
                  models=tiny_models).updates
    assert again["heldout_gold_reward"].iloc[0] == held.updates["heldout_gold_reward"].iloc[0]
