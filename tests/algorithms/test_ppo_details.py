"""PPO's implementation details as settings of the one update (issue 18): value clipping, KL early stopping,
reward scaling, advantages recomputed every epoch, and the details that were already settings (gradient-norm
clipping, lr annealing, orthogonal init, minibatch advantage normalization). Hand-checked values, reference
loops, and whole runs that must not depend on their group or on being resumed."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
from gymnasium.wrappers.utils import RunningMeanStd
from killing import Killed, kill_at
from same_records import assert_same_records

import ppo.algorithms.ppo
from ppo.algorithms.objective import value_loss
from ppo.algorithms.rollout import Batch, RolloutSignals, recompute_advantages, standardized
from ppo.algorithms.schedule import annealed
from ppo.config.errors import ConfigError
from ppo.config.run_config import RunConfig, build_config
from ppo.config.settings import Objective, PPOSettings
from ppo.nn.actor_critic import GaussianActorCritic
from ppo.nn.normalizer import RewardScaler
from ppo.training.driver import RunSpec, train_group

# ---- value-function clipping: V_old = 1, ε_v = 0.2, so V_clipped = clip(V, 0.8, 1.2)


@pytest.mark.parametrize("v, ret, loss, grad", [
    (1.1, 2.0, 0.81, -1.8),  # inside the clip range: both terms (1.1 − 2)² = 0.81, gradient 2(V − R)
    (1.5, 2.0, 0.64, 0.0),   # clipped above, towards R: max picks the clipped (1.2 − 2)² = 0.64 > 0.25; no gradient
    (1.5, 0.0, 2.25, 3.0),   # clipped above, away from R: max picks the unclipped 1.5² = 2.25 > 1.44; 2·1.5
    (0.5, 0.0, 0.64, 0.0),   # clipped below, towards R: max picks the clipped 0.8² = 0.64 > 0.25; no gradient
    (0.5, 2.0, 2.25, -3.0),  # clipped below, away from R: max picks the unclipped (−1.5)² = 2.25 > 1.44; 2(0.5 − 2)
])
def test_value_clipping_hand_cases(v, ret, loss, grad):
    value = torch.tensor([[v]], dtype=torch.float64, requires_grad=True)
    out = value_loss(value, torch.tensor([[ret]], dtype=torch.float64), torch.tensor([[1.0]], dtype=torch.float64), 0.2)
    out.sum().backward()
    assert out.item() == pytest.approx(loss)
    assert value.grad.item() == pytest.approx(grad)


def test_unclipped_value_loss_is_the_plain_mean_squared_error():
    # no ½: ppo1's loss with c1 = 1 (ppo2's ½·(...) with c1 = 0.5 is vf_coef 0.25 here); mean over the minibatch
    value, ret = torch.tensor([[1.0, 3.0], [0.0, 0.0]]), torch.tensor([[2.0, 1.0], [0.5, -0.5]])
    assert value_loss(value, ret).tolist() == [(1 + 4) / 2, 0.25]
    assert torch.equal(value_loss(value, ret), (value - ret).square().mean(1))


# ---- reward scaling


def reference_scaled_rewards(rewards, ends, runs, envs_per_run, gamma, clip):
    """baselines ppo2's VecNormalize, one run at a time with gymnasium's RunningMeanStd: [T, G·E] arrays."""
    out = np.zeros_like(rewards)
    for g in range(runs):
        cols = slice(g * envs_per_run, (g + 1) * envs_per_run)
        rms, ret = RunningMeanStd(shape=()), np.zeros(envs_per_run)
        for t in range(len(rewards)):
            ret = ret * gamma + rewards[t, cols]
            rms.update(ret)
            out[t, cols] = np.clip(rewards[t, cols] / np.sqrt(rms.var + 1e-8), -clip, clip)
            ret[ends[t, cols]] = 0.0
    return out


def test_reward_scaling_matches_a_reference_loop_with_resets_and_truncations():
    rng = np.random.default_rng(0)
    T, G, E = 200, 3, 2
    rewards = rng.normal(2.0, 3.0, size=(T, G * E))
    rewards[5::37] *= 30  # a few large rewards, so that the clip acts
    terminated, truncated = rng.random((T, G * E)) < 0.03, rng.random((T, G * E)) < 0.03
    ends = terminated | truncated
    scaler = RewardScaler(G, E, gamma=0.99, clip=3.0)
    scaled = np.stack([scaler(rewards[t], ends[t]) for t in range(T)])
    expected = reference_scaled_rewards(rewards, ends, G, E, 0.99, 3.0)
    np.testing.assert_array_equal(scaled, expected)  # the same numbers, bit for bit
    assert (np.abs(scaled) == 3.0).any() and (np.abs(scaled) < 3.0).any()
    assert terminated.sum() > 5 and truncated.sum() > 5


def test_reward_scaling_hand_values_and_reset_on_truncation():
    # one actor, γ = 0.5. Step 0: ret = 2; stats from (mean 0, var 1, count 1e-4) and {2}: count 1 + 1e-4,
    # var = (1e-4 + 2²·1e-4/(1 + 1e-4)) / (1 + 1e-4), so r/std = 89.4. The episode is truncated there, so ret
    # restarts at 0.
    scaler = RewardScaler(1, 1, gamma=0.5, clip=100.0)
    n = 1 + 1e-4
    var = (1e-4 + 4 * 1e-4 / n) / n
    assert scaler(np.array([2.0]), np.array([True]))[0] == pytest.approx(2 / math.sqrt(var + 1e-8))
    assert scaler.returns.tolist() == [0.0]
    scaler(np.array([1.0]), np.array([False]))
    assert scaler.returns.tolist() == [1.0]  # 0.5·0 + 1, not 0.5·2 + 1
    assert RewardScaler(1, 1, gamma=0.5, clip=10.0)(np.array([2.0]), np.array([False]))[0] == 10.0  # 89.4, clipped


# ---- advantages recomputed with the current value network


def tiny_batch(time_limit):
    """T = 3 steps of one actor: observation x_t = t + 1 and V(x) = x, so V = 1, 2, 3; after the last step the
    observation is 4. Rewards 1; the episode is cut by a time limit at t = 1, whose final observation is 10."""
    cfg = RunConfig(horizon=3, gamma=0.5, gae_lambda=0.5, adv_norm="none", time_limit=time_limit,
                    ppo=PPOSettings(minibatch_size=3, adv_recompute=True))
    signals = RolloutSignals(rewards=np.ones((3, 1)), terminated=np.zeros((3, 1), bool),
                             truncated=np.array([[False], [True], [False]]), last_obs=torch.tensor([[[4.0]]]),
                             final_obs=torch.tensor([[[0.0], [10.0], [0.0]]]) if time_limit == "bootstrap" else None)
    batch = Batch(obs=torch.tensor([[[1.0], [2.0], [3.0]]]), actions=torch.zeros(1, 3, 1), advantages=None,
                  returns=None, values=None, explained_variance=None, rollout_seconds=0.0, signals=signals)
    return cfg, batch


def test_recomputed_advantages_hand_values_with_time_limit_bootstrap():
    cfg, batch = tiny_batch("bootstrap")
    adv, ret = recompute_advantages(cfg, batch, lambda x: x[..., 0])
    # next values V(x1) = 2, V(final) = 10 (truncated), V(last) = 4; δ = 1 + 0.5·2 − 1, 1 + 0.5·10 − 2, 1 + 0.5·4 − 3
    # = 1, 4, 0; A2 = 0; A1 = δ1 = 4 (the episode ends there); A0 = 1 + 0.25·4 = 2; R = A + V
    assert adv.tolist() == [[2.0, 4.0, 0.0]]
    assert ret.tolist() == [[3.0, 6.0, 3.0]]


def test_recomputed_advantages_hand_values_time_limit_terminal_and_new_values():
    cfg, batch = tiny_batch("terminal")
    adv, _ = recompute_advantages(cfg, batch, lambda x: x[..., 0])
    # the time limit ends the value too: δ1 = 1 − 2 = −1; A0 = 1 + 0.25·(−1)
    assert adv.tolist() == [[0.75, -1.0, 0.0]]
    adv, ret = recompute_advantages(cfg, batch, lambda x: 2 * x[..., 0])  # another value network: V = 2, 4, 6; 8
    # δ = 1 + 0.5·4 − 2, 1 − 4, 1 + 0.5·8 − 6 = 1, −3, −1; A2 = −1, A1 = −3, A0 = 1 + 0.25·(−3)
    assert adv.tolist() == [[0.25, -3.0, -1.0]]
    assert ret.tolist() == [[2.25, 1.0, 5.0]]


# ---- the details that were settings already


def test_advantage_standardization_batch_and_minibatch_hand_values():
    adv = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    # over the batch, ppo1's numpy std (ddof 0): sqrt(2/3); per minibatch, CleanRL's torch std (ddof 1): 1
    torch.testing.assert_close(standardized(adv, 0), torch.tensor([[-1.0, 0.0, 1.0]], dtype=torch.float64)
                               / (math.sqrt(2 / 3) + 1e-8))
    torch.testing.assert_close(standardized(adv, 1), torch.tensor([[-1.0, 0.0, 1.0]], dtype=torch.float64) / (1 + 1e-8))


def test_linear_lr_annealing_hand_values():
    # CleanRL: lr·(1 − (iteration − 1)/num_iterations) for iteration = 1..N; here iteration is 0-based
    assert [annealed(3e-4, "linear", i, 4) for i in range(5)] == pytest.approx([3e-4, 2.25e-4, 1.5e-4, 0.75e-4, 0.0])
    assert annealed(3e-4, "constant", 3, 4) == 3e-4


def test_orthogonal_init_gains():
    gens = [torch.Generator().manual_seed(0)]
    net = GaussianActorCritic(11, 3, (64, 64), "orthogonal", 0.0, gens)
    v = net.params.views
    # weights are [fan_in, fan_out]: 11 -> 64 has orthogonal rows of norm √2, 64 -> 64 is √2 times orthogonal,
    # the policy output 64 -> 3 has orthogonal columns of norm 0.01, the value output one column of norm 1
    w0, w1 = v["policy.w0"][0].double(), v["value.w1"][0].double()
    torch.testing.assert_close(w0 @ w0.T, 2 * torch.eye(11, dtype=torch.float64), atol=1e-5, rtol=0)
    torch.testing.assert_close(w1.T @ w1, 2 * torch.eye(64, dtype=torch.float64), atol=1e-5, rtol=0)
    out = v["policy.w2"][0].double()
    torch.testing.assert_close(out.T @ out, 1e-4 * torch.eye(3, dtype=torch.float64), atol=1e-9, rtol=0)
    assert v["value.w2"][0].norm().item() == pytest.approx(1.0, rel=1e-5)
    assert v["policy.b0"].abs().sum() == 0 and v["log_std"].abs().sum() == 0


def test_per_run_gradient_norm_clipping_hand_value():
    net = GaussianActorCritic(2, 1, (2,), "normc", 0.0, [torch.Generator().manual_seed(i) for i in range(2)])
    flat = net.params.flat
    flat.grad.zero_()
    flat.grad[0, :2] = torch.tensor([3.0, 4.0])  # norm 5 -> scaled by 0.5/(5 + 1e-6)
    flat.grad[1, :2] = torch.tensor([0.15, 0.2])  # norm 0.25 -> kept as it is
    norms = ppo.nn.optim.per_run_grad_norm_clip(flat, 0.5)
    assert norms.tolist() == pytest.approx([5.0, 0.25])
    assert flat.grad[0, :2].tolist() == pytest.approx([0.3, 0.4], rel=1e-6)
    assert flat.grad[1, :2].tolist() == torch.tensor([0.15, 0.2]).tolist()


# ---- settings: recorded in PPO's section, validated


def test_the_details_are_settings_of_ppo_s_section_in_the_record():
    cfg = RunConfig(ppo=PPOSettings(vf_clip=0.2, target_kl=0.015, reward_norm=True, adv_recompute=True))
    details = {"vf_clip": 0.2, "target_kl": 0.015, "reward_norm": True, "adv_recompute": True}
    assert details.items() <= cfg.to_dict()["ppo"].items()
    assert not set(details) & set(cfg.to_dict())  # not at top level
    assert cfg.structural_key() != RunConfig().structural_key()  # one group per setting of a detail


@pytest.mark.parametrize("data, message", [
    ({"ppo": {"vf_clip": 0}}, "ppo.vf_clip must be > 0 or null"),
    ({"ppo": {"target_kl": -0.01}}, r"field ppo.target_kl must lie in \[0, 1000\]"),
    ({"ppo": {"reward_norm": "yes"}}, "field ppo.reward_norm must be true or false"),
    ({"ppo": {"reward_clip": 5.0}}, "ppo.reward_clip 5.0 has no effect without reward_norm"),
    ({"ppo": {"reward_norm": True, "reward_clip": 0.0}}, "ppo.reward_clip must be > 0"),
    ({"ppo": {"adv_recompute": 1}}, "field ppo.adv_recompute must be true or false"),
    ({"algorithm": "trpo", "ppo": {"vf_clip": 0.2}}, "section ppo is for algorithm ppo; this config's algorithm is trpo"),
    ({"vf_clip": 0.2}, r"field\(s\) \['vf_clip'\] are PPO's settings: they belong in section 'ppo'"),
    ({"network": "cnn_nature", "env_protocol": "paper2017", "ppo": {"reward_norm": True}},
     "MuJoCo .network 'mlp'. only"),
])
def test_bad_settings_are_refused_with_the_field_named(data, message):
    with pytest.raises(ConfigError, match=message):
        build_config(data, "variants/x.yaml")


# ---- whole runs with every detail on

EVERY_DETAIL = RunConfig(total_steps=768, horizon=128, init="orthogonal", adv_norm="minibatch", time_limit="bootstrap",
                         ppo=PPOSettings(epochs=4, minibatch_size=32, learning_rate=1e-3, lr_schedule="linear",
                                         max_grad_norm=0.5, vf_clip=0.2, target_kl=3e-4, reward_norm=True,
                                         adv_recompute=True))


def specs():
    other = dataclasses.replace(EVERY_DETAIL, ppo=dataclasses.replace(EVERY_DETAIL.ppo, objective=Objective(clip_epsilon=0.1)))
    return [RunSpec("x", "Hopper-v5", EVERY_DETAIL, 1), RunSpec("a", "Hopper-v5", EVERY_DETAIL, 7),
            RunSpec("y", "Hopper-v5", other, 2)]


@pytest.fixture(scope="module")
def group():
    return train_group(specs(), log=lambda _: None)


def test_early_stopped_run_in_a_group_has_the_records_of_the_run_alone(group):
    alone = train_group([specs()[1]], log=lambda _: None)[0]
    assert_same_records(alone, group[1])
    steps = np.stack([r.updates["minibatch_steps"].to_numpy() for r in group])
    full = EVERY_DETAIL.ppo.epochs * EVERY_DETAIL.horizon // EVERY_DETAIL.ppo.minibatch_size
    # early stopping acted, at whole epochs (4 minibatches each), and not in lock-step across the group
    assert (steps < full).any() and (steps % 4 == 0).all() and (steps != steps[1]).any()
    # lr annealed linearly to 0 over the 6 updates
    assert group[1].updates["learning_rate"].tolist() == pytest.approx([1e-3 * (1 - i / 6) for i in range(6)])


def test_every_detail_resumes_from_a_checkpoint_with_identical_records(group, tmp_path, monkeypatch):
    ckpt = tmp_path / "group.ckpt"
    with monkeypatch.context() as m:
        kill_at(m, ppo.algorithms.ppo, "objective_terms", 16 * 3 + 5)  # inside update 4's epochs, checkpoint after 2
        with pytest.raises(Killed):
            train_group(specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=2)
    assert ckpt.exists()
    messages = []
    resumed = train_group(specs(), log=messages.append, checkpoint=ckpt, checkpoint_every=2)
    assert any("resumed from" in m for m in messages)
    assert_same_records(group, resumed)


def test_reward_scaling_changes_the_learner_not_the_recorded_returns():
    cfg = RunConfig(total_steps=256, horizon=128, ppo=PPOSettings(epochs=1, minibatch_size=64))
    on_off = (cfg, dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, reward_norm=True)))
    raw, scaled = (train_group([RunSpec("r", "Hopper-v5", c, 3)],
                               log=lambda _: None)[0] for c in on_off)
    first = raw.updates["global_step"].iloc[0]
    # The first rollout is the same (same seed, same policy): the episode log keeps the raw env returns ...
    pd.testing.assert_frame_equal(raw.episodes[raw.episodes.global_step <= first],
                                  scaled.episodes[scaled.episodes.global_step <= first], check_exact=True)
    # ... while the value targets are in scaled units (Hopper's rewards are about 1 per step: returns ~ 10-20)
    assert scaled.updates["value_loss"].iloc[0] < raw.updates["value_loss"].iloc[0]
