"""A2C and A2C + ACER's trust region (ppo/algorithms/a2c.py): the loss gradient and one RMSprop step by
hand, the trust-region projection and KL gradient by hand and by autograd, runs independent of their
group, resume, and short real learning on InvertedPendulum-v5."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from killing import Killed, kill_at
from same_records import assert_same_records

import ppo.algorithms.a2c
import ppo.envs.lockstep
import ppo.training.driver
from ppo.algorithms.a2c import A2C, kl_gradient_wrt_statistics, policy_gradient_wrt_statistics, trust_region_projection
from ppo.algorithms.rollout import GroupContext
from ppo.config.experiments import load_variant
from ppo.config.run_config import RunConfig
from ppo.config.settings import A2CSettings
from ppo.envs import gym as gymnasium
from ppo.training.driver import RunSpec, train_group

# ---- a toy algorithm whose networks reduce to their output biases (every weight 0): μ(s) = b_μ, V(s) = b_V


def toy(num_runs=1, hidden=(4,), obs_dim=3, act_dim=1, **settings) -> A2C:
    cfg = RunConfig(algorithm="a2c", num_envs=1, horizon=4, total_steps=400, hidden_sizes=hidden, init="orthogonal",
                    a2c=A2CSettings(**settings))
    ctx = GroupContext(configs=[cfg] * num_runs, seeds=[{}] * num_runs,
                       envs=SimpleNamespace(obs_dim=obs_dim, act_dim=act_dim), family=gymnasium.FAMILY, log=None,
                       init_gens=[torch.Generator().manual_seed(g) for g in range(num_runs)],
                       sample_gens=[torch.Generator().manual_seed(100 + g) for g in range(num_runs)])
    return A2C(ctx)


def set_biases(algo, mu, log_std, v0):
    """All weights 0, the output biases and the log-std as given (run 0)."""
    views, out = algo.agent.params.views, len(algo.ctx.cfg.hidden_sizes)
    with torch.no_grad():
        algo.flat.zero_()
        views[f"policy.b{out}"][0].fill_(mu)
        views["log_std"][0].fill_(log_std)
        views[f"value.b{out}"][0].fill_(v0)


def grads(algo):
    views, out = algo.agent.params.views, len(algo.ctx.cfg.hidden_sizes)
    return (views[f"policy.b{out}"].grad[0, 0, 0].item(), views["log_std"].grad[0, 0, 0].item(),
            views[f"value.b{out}"].grad[0, 0, 0].item())


# A batch of B = 4 samples of a 1-d action; the observations do not matter (every weight is 0).
ACTIONS = [0.5, -1.0, 2.0, 0.0]
ADVANTAGES = [1.0, -2.0, 0.5, 3.0]
TARGETS = [1.0, 2.0, -1.0, 0.5]


def toy_batch(num_runs=1):
    obs = torch.randn(num_runs, 4, 3, generator=torch.Generator().manual_seed(0))
    rows = lambda x: torch.tensor([x] * num_runs)  # noqa: E731
    return obs, rows(ACTIONS).unsqueeze(-1), rows(ADVANTAGES), rows(TARGETS)


def hand_gradient(mu, log_std, v0, vf_coef=0.5, ent_coef=0.01):
    """d/d(b_μ, log σ, b_V) of −mean(log π·A) + c_v·mean((V − R)²) − c_e·H, 1-d Gaussian, in float64:
    ∂log π/∂μ = (a − μ)/σ²,  ∂log π/∂log σ = ((a − μ)/σ)² − 1,  ∂H/∂log σ = 1."""
    var, B = math.exp(2 * log_std), len(ACTIONS)
    d_mu = -sum(A * (a - mu) / var for a, A in zip(ACTIONS, ADVANTAGES)) / B
    d_log_std = -sum(A * ((a - mu) ** 2 / var - 1) for a, A in zip(ACTIONS, ADVANTAGES)) / B - ent_coef
    d_v = vf_coef * sum(2 * (v0 - R) for R in TARGETS) / B
    return d_mu, d_log_std, d_v


def test_loss_gradient_equals_hand_computation():
    algo = toy(vf_coef=0.5, ent_coef=0.01)
    set_biases(algo, mu=0.25, log_std=math.log(2.0), v0=0.5)
    stats = algo.loss_and_gradient(*toy_batch())
    # By hand, σ² = 4: (a − μ) = (0.25, −1.25, 1.75, −0.25), A·(a − μ)/σ² sums to 2.875/4, so
    # d/dμ = −2.875/16 = −0.1796875; A·(z² − 1) sums to −2.8359375, d/dlog σ = 2.8359375/4 − 0.01;
    # V − R = (−0.5, −1.5, 1.5, 0), d/dV = 0.5 · 2/4 · (−0.5) = −0.125.
    expected = (-0.1796875, 0.708984375 - 0.01, -0.125)
    assert grads(algo) == pytest.approx(expected, rel=1e-6)
    assert hand_gradient(0.25, math.log(2.0), 0.5) == pytest.approx(expected, rel=1e-12)  # the helper, checked
    # Every other parameter's gradient is 0 (the weights are 0 and tanh(0) = 0).
    assert algo.flat.grad.abs().sum().item() == pytest.approx(sum(abs(x) for x in expected), rel=1e-6)
    # The reported policy loss is −mean(log π·A) with torch.distributions' log-density.
    dist = torch.distributions.Normal(0.25, 2.0)
    logp = dist.log_prob(torch.tensor(ACTIONS))
    assert stats["policy_loss"].item() == pytest.approx(-(logp * torch.tensor(ADVANTAGES)).mean().item(), rel=1e-6)
    assert stats["entropy"].item() == pytest.approx(dist.entropy().item(), rel=1e-6)


@pytest.mark.parametrize("optimizer", ["rmsprop", "rmsprop_tf"])
def test_two_optimizer_steps_equal_hand_computed_clipped_rmsprop(optimizer):
    lr, alpha, eps, max_norm = 7e-4, 0.99, 1e-5, 0.5
    algo = toy(learning_rate=lr, rmsprop_alpha=alpha, optimizer_eps=eps, max_grad_norm=max_norm, vf_coef=0.5,
               ent_coef=0.01, optimizer=optimizer)
    set_biases(algo, mu=0.25, log_std=math.log(2.0), v0=0.5)
    # By hand: clip the gradient's global norm to 0.5, then
    #   torch's RMSprop       v ← α v + (1 − α) g²,  p ← p − lr · g / (√v + ε)      (square average from 0)
    #   TensorFlow 1's        v ← α v + (1 − α) g²,  p ← p − lr · g / √(v + ε)      (square average from 1)
    tf_style = optimizer == "rmsprop_tf"
    params, square_avg = [0.25, math.log(2.0), 0.5], [1.0 if tf_style else 0.0] * 3
    for step in range(2):
        stats = algo.update(*toy_batch())
        g = hand_gradient(*params)
        norm = math.sqrt(sum(x * x for x in g))
        assert stats["grad_norm"].item() == pytest.approx(norm, rel=1e-6)
        g = [x * min(1.0, max_norm / (norm + 1e-6)) for x in g]
        square_avg = [alpha * v + (1 - alpha) * x * x for v, x in zip(square_avg, g)]
        params = [p - lr * x / (math.sqrt(v + eps) if tf_style else math.sqrt(v) + eps)
                  for p, x, v in zip(params, g, square_avg)]
        views, out = algo.agent.params.views, 1
        got = [views[f"policy.b{out}"][0, 0, 0].item(), views["log_std"][0, 0, 0].item(),
               views[f"value.b{out}"][0, 0, 0].item()]
        assert got == pytest.approx(params, rel=1e-6, abs=1e-9), f"step {step + 1}"
    assert norm > max_norm  # the clip acted: the test checks it, not only RMSprop
    # Every other parameter is still exactly 0.
    assert algo.flat.abs().sum().item() == pytest.approx(sum(abs(p) for p in params), rel=1e-6)


def test_rmsprop_over_the_group_buffer_is_per_run_bit_identical():
    """torch's single-tensor RMSprop on the [G, P] buffer is elementwise: row g steps as if alone."""
    G = 3
    group = toy(num_runs=G, hidden=(64, 64), obs_dim=11, act_dim=3)
    alone = [toy(num_runs=1, hidden=(64, 64), obs_dim=11, act_dim=3) for _ in range(G)]
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        group.flat.copy_(torch.randn(group.flat.shape, generator=gen))
        for g, a in enumerate(alone):
            a.flat.copy_(group.flat[g:g + 1])
    for _ in range(3):
        grad = torch.randn(group.flat.shape, generator=gen) * torch.logspace(-3, 1, G).unsqueeze(1)
        group.flat.grad.copy_(grad)
        group.optimizer.step()
        for g, a in enumerate(alone):
            a.flat.grad.copy_(grad[g:g + 1])
            a.optimizer.step()
    for g, a in enumerate(alone):
        assert torch.equal(group.flat[g], a.flat[0])


def test_learning_rate_decays_linearly_over_lr_decay_steps():
    # The preset: 16 envs × 5 steps = 80 per update, decay over 3M steps = Tianshou's 37500 updates.
    cfg = load_variant("a2c").config
    assert math.ceil(cfg.a2c.lr_decay_steps / (cfg.num_envs * cfg.horizon)) == 37500
    algo = toy(learning_rate=7e-4, lr_decay_steps=3_000_000)  # the toy: 4 steps per update
    assert algo.decay_iterations == 750_000
    assert algo.learning_rate(0) == 7e-4
    assert algo.learning_rate(250_000) == pytest.approx(7e-4 * 2 / 3)  # after 1M of the 3M steps
    assert algo.learning_rate(800_000) == 0.0
    algo = toy(learning_rate=7e-4)  # lr_decay_steps null: to 0 over total_steps = 400, i.e. 100 updates
    assert algo.learning_rate(50) == pytest.approx(3.5e-4)
    assert toy(learning_rate=7e-4, lr_schedule="constant").learning_rate(99) == 7e-4


def test_return_statistics_are_those_of_every_return_so_far():
    algo = toy(num_runs=2, return_norm=True)
    assert algo.return_std().tolist() == pytest.approx([1.0, 1.0])  # σ_R starts at 1 (Tianshou: var 1, count 0)
    gen = torch.Generator().manual_seed(3)
    seen = []
    for scale in (1.0, 10.0, 0.5):
        batch = torch.randn(2, 80, generator=gen) * scale + 5
        algo.update_return_stats(batch)
        seen.append(batch.double().numpy())
        history = np.concatenate(seen, axis=1)
        assert algo.ret_mean.numpy() == pytest.approx(history.mean(1), rel=1e-12)
        assert algo.ret_var.numpy() == pytest.approx(history.var(1), rel=1e-12)
    assert algo.return_std().numpy() == pytest.approx(np.sqrt(history.var(1) + 1e-8), rel=1e-6)


# ---- ACER's trust region


def test_projection_by_hand():
    # kᵀg = 0.5·1 + 0.25·2 = 1 ≤ δ = 1: unchanged (exactly)
    g, k = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([0.5, 0.25], dtype=torch.float64)
    z, active = trust_region_projection(g, k, 1.0)
    assert torch.equal(z, g) and not active
    # kᵀg = 3 + 2 = 5 > δ = 1, ‖k‖² = 5: z = g − (4/5)·k = (2.2, −0.6), and kᵀz = 2.2 − 1.2 = 1 = δ
    g, k = torch.tensor([3.0, 1.0], dtype=torch.float64), torch.tensor([1.0, 2.0], dtype=torch.float64)
    z, active = trust_region_projection(g, k, 1.0)
    assert active and z.tolist() == pytest.approx([2.2, -0.6], abs=1e-15)
    assert (k @ z).item() == pytest.approx(1.0, abs=1e-15)
    # k = 0 (the average policy equals the policy, as at the start): unchanged, no NaN from 0/0
    z, active = trust_region_projection(g, torch.zeros(2, dtype=torch.float64), 1.0)
    assert torch.equal(z, g) and not active


def test_projection_per_sample_over_group_batches():
    gen = torch.Generator().manual_seed(0)
    g = torch.randn(3, 50, 4, generator=gen, dtype=torch.float64) * 3
    k = torch.randn(3, 50, 4, generator=gen, dtype=torch.float64)
    delta = 0.5
    z, active = trust_region_projection(g, k, delta)
    kg, kz = (k * g).sum(-1), (k * z).sum(-1)
    assert active.any() and (~active).any()  # both cases occur in this batch
    assert torch.equal(active, kg > delta)
    assert torch.equal(z[~active], g[~active])
    assert torch.allclose(kz[active], torch.full_like(kz[active], delta), atol=1e-12)  # on the constraint
    # z − g is a non-positive multiple of k: the closest point of the half-space kᵀz ≤ δ
    coef = ((z - g) * k).sum(-1) / (k * k).sum(-1)
    assert torch.allclose(z - g, coef.unsqueeze(-1) * k, atol=1e-12) and (coef <= 0).all()
    # each sample on its own gives the same answer (no mixing between samples or runs)
    z1, _ = trust_region_projection(g[1, 7], k[1, 7], delta)
    assert torch.equal(z1, z[1, 7])


def test_kl_and_policy_gradients_match_autograd_of_torch_distributions():
    gen = torch.Generator().manual_seed(0)
    shape = (2, 5, 3)
    mean_avg, mean = (torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(2))
    log_std_avg, log_std = (0.3 * torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(2))
    actions = torch.randn(shape, generator=gen, dtype=torch.float64)
    adv = torch.randn(shape[:2], generator=gen, dtype=torch.float64)
    mu, ls = mean.clone().requires_grad_(), log_std.clone().requires_grad_()
    Normal = torch.distributions.Normal
    kl = torch.distributions.kl_divergence(Normal(mean_avg, log_std_avg.exp()), Normal(mu, ls.exp())).sum()
    k_mu, k_ls = torch.autograd.grad(kl, [mu, ls])
    ours = kl_gradient_wrt_statistics(mean_avg, log_std_avg, mean, log_std)
    assert torch.allclose(ours[0], k_mu, rtol=1e-12, atol=1e-12)
    assert torch.allclose(ours[1], k_ls, rtol=1e-12, atol=1e-12)
    objective = (Normal(mu, ls.exp()).log_prob(actions).sum(-1) * adv).sum()
    g_mu, g_ls = torch.autograd.grad(objective, [mu, ls])
    ours = policy_gradient_wrt_statistics(actions, mean, log_std, adv)
    assert torch.allclose(ours[0], g_mu, rtol=1e-12, atol=1e-12)
    assert torch.allclose(ours[1], g_ls, rtol=1e-12, atol=1e-12)
    # At φ = φ_avg the KL gradient is 0: no projection at the first update.
    zero = kl_gradient_wrt_statistics(mean, log_std, mean, log_std)
    assert torch.equal(zero[0], torch.zeros(shape, dtype=torch.float64)) and zero[1].abs().max() < 1e-15


def test_trust_region_backpropagates_the_projected_gradient():
    """The toy with a trust region: d/d(b_μ, log σ) = −(1/B) Σ_b z*_b − (0, c_e), z*_b projected by hand."""
    mu, log_std, mu_avg, log_std_avg, delta = 0.25, math.log(2.0), -0.5, 0.0, 0.05
    algo = toy(trust_region=True, trust_region_delta=delta, average_policy_decay=0.9, vf_coef=0.5, ent_coef=0.01)
    set_biases(algo, mu=mu, log_std=log_std, v0=0.5)
    views = algo.agent.params.views
    with torch.no_grad():  # the average policy: its own output bias and log-std
        algo.average.copy_(algo.flat)
        algo.average[0, views["policy.b1"].storage_offset()] = mu_avg
        algo.average[0, views["log_std"].storage_offset()] = log_std_avg
    stats = algo.loss_and_gradient(*toy_batch())
    var, var_avg, B = math.exp(2 * log_std), math.exp(2 * log_std_avg), 4
    k = np.array([(mu - mu_avg) / var, 1 - (var_avg + (mu - mu_avg) ** 2) / var])  # the same for every sample
    z_sum, n_active = np.zeros(2), 0
    for a, A in zip(ACTIONS, ADVANTAGES):
        g = np.array([A * (a - mu) / var, A * ((a - mu) ** 2 / var - 1)])
        if k @ g > delta:
            g = g - (k @ g - delta) / (k @ k) * k
            n_active += 1
        z_sum += g
    assert 0 < n_active < B  # both cases occur
    assert stats["trust_region_active"].item() == n_active / B
    d_mu, d_ls, d_v = grads(algo)
    assert d_mu == pytest.approx(-z_sum[0] / B, rel=1e-6)
    assert d_ls == pytest.approx(-z_sum[1] / B - 0.01, rel=1e-6)
    assert d_v == pytest.approx(-0.125, rel=1e-6)  # the value loss is untouched
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(mu_avg, 1.0), torch.distributions.Normal(mu, 2.0))
    assert stats["kl_average"].item() == pytest.approx(kl.item(), rel=1e-6)
    # After the step, θ_avg ← α θ_avg + (1 − α) θ (α = 0.9), everywhere in the buffer.
    before = algo.average.clone()
    algo.update(*toy_batch())
    assert torch.allclose(algo.average, 0.9 * before + 0.1 * algo.flat.detach(), atol=1e-7)
    # With a δ no sample reaches, the trust-region gradient is A2C's own.
    plain, loose = toy(), toy(trust_region=True, trust_region_delta=1e9)
    for a in (plain, loose):
        set_biases(a, mu=mu, log_std=log_std, v0=0.5)
        a.loss_and_gradient(*toy_batch())
    assert torch.allclose(plain.flat.grad, loose.flat.grad, rtol=1e-6, atol=1e-9)


# ---- group independence, resume


SMALL = RunConfig(algorithm="a2c", total_steps=320, num_envs=2, horizon=8,
                  a2c=A2CSettings(return_norm=True, ent_coef=0.01))
# δ small enough that the projection acts within these few updates
SMALL_TR = dataclasses.replace(SMALL, a2c=dataclasses.replace(SMALL.a2c, trust_region=True, trust_region_delta=1e-3))


@pytest.mark.parametrize("cfg", [SMALL, SMALL_TR], ids=["a2c", "a2c_trust_region"])
def test_records_do_not_depend_on_the_group(cfg):
    alone = train_group([RunSpec("t", "Hopper-v5", cfg, 7)], log=lambda _: None)[0]
    shared = train_group([RunSpec("o1", "Hopper-v5", cfg, 1), RunSpec("t", "Hopper-v5", cfg, 7),
                          RunSpec("o2", "Hopper-v5", cfg, 2)], log=lambda _: None)
    assert len(alone.episodes) > 3 and len(alone.updates) == 20
    assert_same_records(alone, shared[1])  # bit-identical on CPU, one thread
    assert not shared[0].updates["policy_loss"].equals(alone.updates["policy_loss"])  # other seeds differ
    if cfg.a2c.trust_region:
        assert alone.updates["trust_region_active"].max() > 0  # the projection really acted


RESUME = dataclasses.replace(SMALL_TR, total_steps=2 * 8 * 12)


def resume_specs():
    return [RunSpec("a", "Hopper-v5", RESUME, 0), RunSpec("b", "Hopper-v5", RESUME, 1)]


@pytest.mark.parametrize("target, name, after_calls", [
    (ppo.envs.lockstep.LockstepEnvs, "step", 8 * 7 + 3),  # inside the rollout of update 8
    (ppo.algorithms.a2c, "per_run_grad_norm_clip", 7),  # inside update 7, after its backward
], ids=["during a rollout", "during an update"])
def test_resume_gives_identical_records(tmp_path, monkeypatch, target, name, after_calls):
    uninterrupted = train_group(resume_specs(), log=lambda _: None)
    ckpt = tmp_path / "group.ckpt"
    with monkeypatch.context() as m:
        kill_at(m, target, name, after_calls)
        with pytest.raises(Killed):
            train_group(resume_specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=2)
    assert ckpt.exists()
    messages = []
    resumed = train_group(resume_specs(), log=messages.append, checkpoint=ckpt, checkpoint_every=2)
    assert any("resumed from" in msg for msg in messages)
    assert_same_records(uninterrupted, resumed)


def test_a_diverging_run_is_detected_and_does_not_touch_its_group(monkeypatch):
    """From the 5th update on, run 1's gradient is NaN: run 1 is recorded as diverged at that update,
    run 0 completes with records identical to its run alone (clip, RMSprop, θ_avg, σ_R are all per run)."""
    alone = train_group([RunSpec("ok", "Hopper-v5", SMALL_TR, 0)], log=lambda _: None)[0]
    real, calls = A2C.loss_and_gradient, {"n": 0}

    def poisoned(self, *args):
        stats = real(self, *args)
        calls["n"] += 1
        if calls["n"] >= 5:
            self.flat.grad[1] = torch.nan
        return stats

    monkeypatch.setattr(A2C, "loss_and_gradient", poisoned)
    ok, bad = train_group([RunSpec("ok", "Hopper-v5", SMALL_TR, 0), RunSpec("bad", "Hopper-v5", SMALL_TR, 1)],
                          log=lambda _: None)
    assert bad.status == "diverged" and bad.diverged_at_step == 5 * 16
    assert ok.status == "completed"
    assert_same_records(alone, ok)
