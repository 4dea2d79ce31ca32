"""Vanilla policy gradient with an adaptive step size (ppo/algorithms/vpg.py): the step-size rule, the per-run
Adam, the policy gradient itself, group independence, resume
(its learning test is in tests/algorithms/test_conformance.py)."""
import math
import time

import numpy as np
import pytest
import torch
from killing import kill_then_resume
from same_records import assert_same_records

import ppo.algorithms.base
import ppo.algorithms.vpg as vpg
import ppo.envs.lockstep
import ppo.training.driver
from ppo.algorithms.rollout import EpisodeLog, GroupContext, collect_batch, derive_seeds
from ppo.config.experiments import load_preset
from ppo.config.run_config import build_config
from ppo.config.settings import VPGSettings
from ppo.envs import gym as gymnasium
from ppo.envs.lockstep import LockstepEnvs
from ppo.nn.actor_critic import GaussianActorCritic
from ppo.training.driver import RunSpec, train_group

PRESET = load_preset("vpg_mujoco")


def config(**changes):
    section = {**PRESET.config["vpg"], **changes.pop("vpg", {})}
    return build_config({**PRESET.config, "vpg": section, **changes}, "test")


# 4 iterations on Hopper, with a step size and target at which the rule acts differently per run
TINY = config(total_steps=1024, horizon=256, vpg={"vf_epochs": 2, "learning_rate": 0.01, "kl_target": 0.01})


# ---------------------------------------------------------------- the step-size rule


def test_adapt_lr_by_hand():
    # target 0.25, band 2: shrink above 0.5, grow below 0.125 (exact binary numbers, so the boundaries are
    # exactly representable); factor 1.5; bounds [1e-3, 0.1]
    kl = torch.tensor([0.6, 0.5, 0.3, 0.125, 0.1, 0.1, 0.6, math.nan, 0.1])
    lr = torch.tensor([0.01, 0.01, 0.01, 0.01, 0.01, 0.09, 0.0012, 0.01, 0.01])
    target = torch.tensor([0.25] * 8 + [math.nan])  # the last run has no target: fixed step size
    out = vpg.adapt_lr(lr, kl, target, band=2.0, factor=1.5, bounds=(1e-3, 0.1))
    expected = [0.01 / 1.5,  # KL 0.6 > 0.5: smaller
                0.01,  # KL = 0.5 exactly: not above the band, unchanged
                0.01,  # inside the band
                0.01,  # KL = 0.125 exactly: not below, unchanged
                0.015,  # KL 0.1 < 0.125: larger
                0.1,  # 0.09·1.5 = 0.135, clamped to the upper bound
                1e-3,  # 0.0012/1.5 = 0.0008, clamped to the lower bound
                0.01,  # KL nan (a diverged run): unchanged
                0.01]  # no target: unchanged
    torch.testing.assert_close(out, torch.tensor(expected), rtol=1e-6, atol=0)


def test_settings_are_validated():
    with pytest.raises(ValueError, match="kl_band"):
        VPGSettings(kl_band=1.0)
    with pytest.raises(ValueError, match="lr_factor"):
        VPGSettings(lr_factor=0.5)
    with pytest.raises(ValueError, match="within lr_bounds"):
        VPGSettings(learning_rate=0.5)


# ---------------------------------------------------------------- the per-run Adam


def test_row_adam_is_torch_adam_per_row():
    G, P, steps = 3, 128, 5
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(G, P, generator=gen)
    flat = torch.nn.Parameter(start.clone())
    flat.grad = torch.zeros(G, P)
    lr = torch.tensor([1e-3, 2e-3, 5e-2])
    columns = torch.ones(P)
    columns[100:] = 0.0  # e.g. the value network's columns
    ours = vpg.RowAdam(flat, columns, eps=1e-8)
    references = []
    for g in range(G):
        p = torch.nn.Parameter(start[g, :100].clone())
        references.append((p, torch.optim.Adam([p], lr=float(lr[g]), eps=1e-8, foreach=False)))
    for _ in range(steps):
        grads = torch.randn(G, P, generator=gen)
        flat.grad.copy_(grads)
        ours.step(lr)
        for g, (p, opt) in enumerate(references):
            p.grad = grads[g, :100].clone()
            opt.step()
    for g, (p, _) in enumerate(references):
        torch.testing.assert_close(flat.data[g, :100], p.data, rtol=1e-6, atol=1e-7)
    assert torch.equal(flat.data[:, 100:], start[:, 100:])  # masked columns: bit-unchanged
    # The step size really is per run: the same gradients in every row move row g by lr_g/lr_0 times row 0.
    flat.data.zero_()  # from 0, so the displacement is the parameter itself (no cancellation)
    same = vpg.RowAdam(flat, columns, eps=1e-8)
    for _ in range(steps):
        flat.grad.copy_(torch.randn(1, P, generator=gen).expand(G, P))
        same.step(lr)
    moved = flat.data[:, :100]
    assert moved[0].abs().min() > 0
    torch.testing.assert_close(moved[1], 2 * moved[0], rtol=1e-5, atol=0)
    torch.testing.assert_close(moved[2], 50 * moved[0], rtol=1e-5, atol=0)


def test_row_adam_state_round_trips():
    flat = torch.nn.Parameter(torch.zeros(2, 64))
    flat.grad = torch.ones(2, 64)
    opt = vpg.RowAdam(flat, torch.ones(64))
    opt.step(torch.tensor([0.1, 0.2]))
    other = vpg.RowAdam(flat, torch.ones(64))
    other.load_state_dict(opt.state_dict())
    assert other.state[flat]["step"] == 1 and torch.equal(other.state[flat]["exp_avg"], opt.state[flat]["exp_avg"])


# ---------------------------------------------------------------- the policy gradient


def test_policy_gradient_by_hand():
    # A linear Gaussian policy with a 1-d action: μ = w·x + b, σ = exp(log σ).
    # L = −mean_i A_i log π(a_i|x_i), log π = −(a − μ)²/(2σ²) − log σ − ½ log 2π, so
    #   ∂L/∂w = −mean_i A_i (a_i − μ_i)/σ² · x_i,   ∂L/∂b = −mean_i A_i (a_i − μ_i)/σ²,
    #   ∂L/∂log σ = −mean_i A_i ((a_i − μ_i)²/σ² − 1).
    agent = GaussianActorCritic(2, 1, (), "normc", 0.0, [torch.Generator().manual_seed(0)])
    v = agent.params.views
    with torch.no_grad():
        v["policy.w0"].copy_(torch.tensor([[[0.5], [-1.0]]]))
        v["policy.b0"].copy_(torch.tensor([[[0.25]]]))
        v["log_std"].fill_(math.log(0.5))
    x = torch.tensor([[[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]]])  # [G=1, B=3, 2]
    a = torch.tensor([[[0.0], [1.0], [2.0]]])
    adv = torch.tensor([[1.0, -2.0, 0.5]])
    # By hand: μ = [0.5 − 2 + 0.25, 1 + 0.25, 1.5 − 0.5 + 0.25] = [−1.25, 1.25, 1.25]; σ² = 0.25;
    # a − μ = [1.25, −0.25, 0.75]; (a − μ)/σ² = [5, −1, 3]; A·that = [5, 2, 1.5]
    #   ∂L/∂b = −(5 + 2 + 1.5)/3 = −8.5/3
    #   ∂L/∂w = −([5, 10] + [0, −2] + [4.5, 0.75])/3 = −[9.5, 8.75]/3
    #   (a − μ)²/σ² − 1 = [6.25 − 1, 0.25 − 1, 2.25 − 1] = [5.25, −0.75, 1.25]; A·that = [5.25, 1.5, 0.625]
    #   ∂L/∂log σ = −7.375/3
    loss = vpg.policy_gradient_loss(agent, x, a, adv, ent_coef=0.0)
    agent.params.zero_grad_()
    loss.sum().backward()
    torch.testing.assert_close(v["policy.b0"].grad.flatten(), torch.tensor([-8.5 / 3]))
    torch.testing.assert_close(v["policy.w0"].grad.flatten(), torch.tensor([-9.5 / 3, -8.75 / 3]))
    torch.testing.assert_close(v["log_std"].grad.flatten(), torch.tensor([-7.375 / 3]))
    assert v["value.w0"].grad.abs().sum() == 0  # the policy loss does not reach the value network
    # The entropy bonus c·H adds −c to ∂L/∂log σ (H = log σ + const per action dim).
    agent.params.zero_grad_()
    vpg.policy_gradient_loss(agent, x, a, adv, ent_coef=0.1).sum().backward()
    torch.testing.assert_close(v["log_std"].grad.flatten(), torch.tensor([-7.375 / 3 - 0.1]))


def test_one_update_on_a_real_batch():
    """One VPG step on Hopper: the KL it reports is the full-batch KL of the step, the rule then acts on it,
    and only the policy moves in the policy step."""
    cfg = config(horizon=512, vpg={"learning_rate": 0.05, "lr_bounds": [1e-6, 0.1]})  # a big step: KL > band
    seeds = [derive_seeds(s, 1) for s in (0, 1)]
    ctx = GroupContext(configs=[cfg, cfg], seeds=seeds, envs=LockstepEnvs("Hopper-v5", [s["envs"][0] for s in seeds]),
                       family=gymnasium.FAMILY,
                       log=EpisodeLog(2, 1, time.perf_counter()),
                       init_gens=[torch.Generator().manual_seed(s["init"]) for s in seeds],
                       sample_gens=[torch.Generator().manual_seed(s["sampling"]) for s in seeds])
    algo = vpg.VPG(ctx)
    batch = collect_batch(ctx, algo.agent, algo.normalizer)
    before = algo.flat.detach().clone()
    with torch.no_grad():
        old_mean = algo.agent.policy_mean(batch.obs)
        old_std = algo.agent.log_std.exp().expand_as(old_mean).clone()
    stats = algo.policy_step(batch)
    after = algo.flat.detach().clone()
    with torch.no_grad():
        new = torch.distributions.Normal(algo.agent.policy_mean(batch.obs), algo.agent.log_std.exp().expand_as(old_mean))
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(old_mean, old_std), new).sum(-1).mean(1)
    torch.testing.assert_close(stats["kl"], kl, rtol=1e-4, atol=1e-7)
    assert (kl > 2 * 2e-3).all()  # this step size overshoots the target's band ...
    torch.testing.assert_close(algo.lr, torch.full((2,), 0.05 / 1.5))  # ... so the rule shrinks it
    assert torch.equal(stats["learning_rate"], torch.full((2,), 0.05))
    policy = algo.policy_mask.bool()
    assert not torch.equal(after[:, policy], before[:, policy])
    assert torch.equal(after[:, ~policy], before[:, ~policy])


# ---------------------------------------------------------------- group independence and resume


def test_records_do_not_depend_on_the_group():
    alone = train_group([RunSpec("target", "Hopper-v5", TINY, 7)], log=lambda _: None)[0]
    group = train_group([RunSpec(f"r{s}", "Hopper-v5", TINY, s) for s in (1, 7, 2)], log=lambda _: None)
    assert len(alone.episodes) > 3 and len(alone.updates) == 4
    assert_same_records(alone, group[1])
    lrs = np.stack([r.updates["learning_rate"].to_numpy() for r in group])
    assert len({tuple(row) for row in lrs}) == 3  # the runs' step sizes went their own ways
    assert lrs.min() < lrs.max()


@pytest.fixture(scope="module")
def uninterrupted():
    torch.set_num_threads(1)  # module fixtures run before the autouse one-thread fixture of conftest.py
    specs = [RunSpec("a", "Hopper-v5", TINY, 0), RunSpec("b", "Hopper-v5", TINY, 1)]
    return train_group(specs, log=lambda _: None)


@pytest.mark.parametrize("target, name, after_calls", [
    (ppo.envs.lockstep.LockstepEnvs, "step", 256 * 2 + 31),  # inside the 3rd rollout
    (ppo.algorithms.base, "fit_value", 3),  # after the 3rd policy step (step size already adapted), before its value fit
])
def test_resume_gives_identical_records(tmp_path, monkeypatch, uninterrupted, target, name, after_calls):
    specs = [RunSpec("a", "Hopper-v5", TINY, 0), RunSpec("b", "Hopper-v5", TINY, 1)]
    resumed = kill_then_resume(monkeypatch, train_group, specs, tmp_path / "group.ckpt", target, name, after_calls)
    assert_same_records(uninterrupted, resumed)
