"""Our estimators and updates against Stable-Baselines3's, a well-kept independent implementation, on the same
numbers: the λ-returns and advantages of a rollout (SB3's RolloutBuffer), and the A2C and PPO updates on the Atari
network (SB3's A2C.train and PPO.train on its NatureCNN policy, the weights copied from ours). The hand-checked
tests (test_gae.py, test_a2c.py, test_objective.py) check each formula on a toy; these check that a whole update,
on the network the Atari checks train, is the one another library computes from the same batch.

What is compared, and why these tolerances: SB3 sums in another order (its convolutions run in another memory
layout, A2C's batch is shuffled) in float32. Each parameter's change over the update is compared elementwise, to
1e-3 of the tensor's largest change plus a few ulps of the parameter. A wrong coefficient (the last test), the
gradient clip or RMSprop's decay (tried by hand) moves it by far more. Not seen this way: RMSprop's ε, which its
mean square, starting at 1 in TensorFlow's form, hides in the first steps (test_a2c.py checks it by hand).
"""
from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
import pytest
import torch
from stable_baselines3 import A2C as SB3A2C
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common import buffers as sb3_buffers
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.logger import configure
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import DummyVecEnv

from ppo.algorithms.gae import gae
from ppo.algorithms.rollout import Batch, group_context
from ppo.config.experiments import load_variant
from ppo.nn.categorical import Categorical
from ppo.config.registry import specs
from ppo.config.run_config import build_config

# ---------------------------------------------------------------- λ-returns and advantages


@pytest.mark.parametrize("lam", [1.0, 0.95])  # A2C's n-step returns (λ = 1) and PPO's GAE
def test_gae_equals_sb3_rollout_buffer(lam):
    T, N, gamma = 7, 5, 0.99
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T, N)).astype(np.float32)
    last_values = rng.normal(size=N).astype(np.float32)
    dones = rng.random((T, N)) < 0.25  # episodes end inside the rollout and at its last step
    dones[-1, 0], dones[2, 1] = True, True

    next_values = np.concatenate([values[1:], last_values[None]])
    ends = dones.astype(np.float64)  # every end terminal: time_limit "terminal", as the Atari presets
    adv, returns = gae(rewards.astype(np.float64), values.astype(np.float64), next_values.astype(np.float64),
                       ends, ends, gamma, lam)

    space = gymnasium.spaces.Box(-1.0, 1.0, (1,))
    buffer = RolloutBuffer(T, space, space, device="cpu", gae_lambda=lam, gamma=gamma, n_envs=N)
    buffer.rewards[:] = rewards
    buffer.values[:] = values
    buffer.episode_starts[1:] = dones[:-1]  # SB3 marks the step after an end; ours marks the end itself
    buffer.compute_returns_and_advantage(torch.from_numpy(last_values), dones[-1])

    np.testing.assert_allclose(adv, buffer.advantages, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(returns, buffer.returns, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the updates on the Nature CNN

TASK = "ALE/Pong-v5"


class FramesOnly(gymnasium.Env):
    """The spaces of a Pong frame stack, for SB3 to build its policy; it is never stepped."""

    observation_space = gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    action_space = gymnasium.spaces.Discrete(6)


def ours(variant: str, section: str, changes: dict):
    """One run of ``variant`` with ``changes`` to its algorithm's section; the environments only give the spaces."""
    config = load_variant(variant).config.to_dict()
    config[section] |= changes
    ctx = group_context(TASK, [build_config(config, f"{variant} + {changes}")], [0])
    ctx.envs.close()  # the update only: batches come from the test
    return specs()[config["algorithm"]].build(ctx)


def copy_weights(algo, model) -> None:
    """SB3's policy set to our run 0's weights."""
    policy, v = model.policy, algo.agent.params.views
    with torch.no_grad():
        for i, conv in enumerate(sb3_convs(model)):
            conv.weight.copy_(v[f"conv{i}.w"][0])
            conv.bias.copy_(v[f"conv{i}.b"][0])
        for module, name in [(policy.features_extractor.linear[0], "fc"), (policy.action_net, "policy"),
                             (policy.value_net, "value")]:
            module.weight.copy_(v[f"{name}.w"][0].T)  # ours: x @ w; torch.nn.Linear: x @ weight.T
            module.bias.copy_(v[f"{name}.b"][0, 0])
    model.set_logger(configure(None, []))  # train() records its statistics; learn() would set this up


def sb3_convs(model) -> list[torch.nn.Conv2d]:
    return [layer for layer in model.policy.features_extractor.cnn if isinstance(layer, torch.nn.Conv2d)]


def sb3_parameters(model) -> list[torch.Tensor]:
    policy = model.policy
    linears = [policy.features_extractor.linear[0], policy.action_net, policy.value_net]
    return ([t.detach().clone() for c in sb3_convs(model) for t in (c.weight, c.bias)]
            + [t.detach().clone() for m in linears for t in (m.weight.T, m.bias)])


def our_parameters(algo) -> list[torch.Tensor]:
    """Run 0's tensors in sb3_parameters' order and shapes."""
    v = algo.agent.params.views
    names = [f"conv{i}.{p}" for i in range(3) for p in "wb"] + [f"{n}.{p}" for n in ("fc", "policy", "value") for p in "wb"]
    return [v[n][0].detach().clone().reshape(-1) if n.endswith(".b") else v[n][0].detach().clone() for n in names]


def random_batch(rng: np.random.Generator, B: int):
    """Frames, actions, advantages and λ-returns of one batch of B samples (values = returns − advantages), and
    the log-probabilities of a rollout policy π_old 30 % or so away from the network's near-uniform start, so that
    PPO's ratio is clipped from its first step."""
    frames = rng.integers(0, 256, (B, 4, 84, 84), dtype=np.uint8)
    actions = rng.integers(0, 6, B)
    advantages = rng.normal(size=B).astype(np.float32)
    returns = rng.normal(size=B).astype(np.float32)
    old_log_probs = torch.log_softmax(torch.from_numpy(0.3 * rng.normal(size=(B, 6))).float(), -1)
    return frames, actions, advantages, returns, old_log_probs


def fill(model, frames, actions, advantages, returns, old_log_probs) -> None:
    """SB3's rollout buffer holding our batch as its rollout would leave it, sample i of ours at SB3's flat index i
    (SB3 flattens [T, N] env-major: i = n·T + t)."""
    buffer = model.rollout_buffer
    T, N = buffer.buffer_size, buffer.n_envs

    def steps_by_envs(x: np.ndarray) -> np.ndarray:
        return x.reshape(N, T, *x.shape[1:]).swapaxes(0, 1)

    buffer.reset()
    buffer.observations[:] = steps_by_envs(frames)
    buffer.actions[:] = steps_by_envs(actions)[..., None]
    buffer.advantages[:] = steps_by_envs(advantages)
    buffer.returns[:] = steps_by_envs(returns)
    buffer.values[:] = steps_by_envs(returns - advantages)
    buffer.log_probs[:] = steps_by_envs(old_log_probs[np.arange(len(actions)), actions].numpy())
    buffer.full, buffer.pos = True, T


def assert_same_changes(our_changes, sb3_changes) -> None:
    """Each change within 1e-3 of the tensor's largest change, plus 4 units in the last place of the parameter
    (a change is a difference of two float32 parameters, which one rounding of the step moves by an ulp)."""
    ulp = torch.finfo(torch.float32).eps
    for step, (mine, theirs) in enumerate(zip(our_changes, sb3_changes, strict=True)):
        for i, ((a, magnitude), b) in enumerate(zip(mine, theirs, strict=True)):
            scale = b.abs().max().item()
            assert scale > 0, f"update {step}, tensor {i}: SB3 did not move it"
            excess = (a - b).abs() - (1e-3 * scale + 4 * ulp * magnitude)
            assert excess.max() <= 0, (f"update {step}, tensor {i}: ours and SB3's changes differ by up to "
                                       f"{(a - b).abs().max().item():.3g}, largest change {scale:.3g}")


def changes_per_update(algo, model, update, updates: int) -> tuple[list, list]:
    """Each parameter's change in each of ``updates`` updates on the same random batches, ours and SB3's;
    ``update(algo, frames, actions, advantages, returns, old_log_probs)`` makes ours."""
    copy_weights(algo, model)
    rng = np.random.default_rng(1)
    ours_before, sb3_before = our_parameters(algo), sb3_parameters(model)
    for a, b in zip(ours_before, sb3_before, strict=True):
        assert torch.equal(a, b)
    our_changes, sb3_changes = [], []
    for _ in range(updates):
        batch = random_batch(rng, algo.batch_size)
        fill(model, *batch)
        update(algo, *batch)
        model.train()
        ours_after, sb3_after = our_parameters(algo), sb3_parameters(model)
        our_changes.append([(a - b, a.abs()) for a, b in zip(ours_after, ours_before)])
        sb3_changes.append([a - b for a, b in zip(sb3_after, sb3_before)])
        ours_before, sb3_before = ours_after, sb3_after
    return our_changes, sb3_changes


# ---- A2C: with TensorFlow's RMSprop (the preset's) two steps, the second on the first's optimizer state; with
# torch's, one: its mean square starts at 0, so its first step moves every weight by about 10·lr, after which the two
# implementations' next changes differ by 2e-3 of the largest (measured), as ReLUs near zero flip one way in one
# and not in the other. TensorFlow's drift apart from the fourth step.


def a2c_changes(optimizer: str, sb3_changes: dict | None = None, updates: int = 2) -> tuple[list, list]:
    """``atari_a2c_nature_cnn`` at a constant step size with ``optimizer``; SB3's A2C with its settings
    (``sb3_changes`` over them)."""
    algo = ours("atari_a2c_nature_cnn", "a2c", {"optimizer": optimizer, "lr_schedule": "constant"})
    s, cfg = dataclasses.replace(algo.settings, **(sb3_changes or {})), algo.ctx.cfg
    model = SB3A2C("CnnPolicy", DummyVecEnv([FramesOnly] * cfg.num_envs), learning_rate=s.learning_rate,
                   n_steps=cfg.horizon, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda, ent_coef=s.ent_coef,
                   vf_coef=s.vf_coef, max_grad_norm=s.max_grad_norm, normalize_advantage=False, device="cpu",
                   policy_kwargs={"optimizer_class": RMSpropTFLike if optimizer == "rmsprop_tf" else torch.optim.RMSprop,
                                  "optimizer_kwargs": {"alpha": s.rmsprop_alpha, "eps": s.optimizer_eps,
                                                       "weight_decay": 0}})
    algo.optimizer.param_groups[0]["lr"] = algo.settings.learning_rate  # as iterate() sets it

    def update(algo, frames, actions, advantages, returns, old_log_probs):  # A2C's π_old: the policy before the step
        algo.update(torch.from_numpy(frames)[None], torch.from_numpy(actions).float().view(1, -1, 1),
                    torch.from_numpy(advantages)[None], torch.from_numpy(returns)[None])

    return changes_per_update(algo, model, update, updates)


@pytest.mark.parametrize("optimizer, updates", [("rmsprop_tf", 2), ("rmsprop", 1)])  # the preset's, torch's
def test_a2c_update_equals_sb3_a2c_on_the_nature_cnn(optimizer, updates):
    assert_same_changes(*a2c_changes(optimizer, updates=updates))


def test_the_comparison_sees_a_wrong_value_coefficient():
    # baselines' a2c changed its value loss from ½(V − R)² to (V − R)² in 2018: the factor 2 a port can miss
    with pytest.raises(AssertionError, match="changes differ"):
        assert_same_changes(*a2c_changes("rmsprop_tf", sb3_changes={"vf_coef": 0.5}))


# ---- PPO: one epoch of Table 5's minibatches of 256 (4 Adam steps, each on its own samples, the ratio clipped from
# the first), at an iteration where the step size and ε have annealed, SB3 drawing our minibatches. More steps
# are not comparable this way: changing our own run's weights by one ulp moves the changes of 3 epochs by up to
# 5 % (8 full-batch Adam steps on these random frames: 0.6 %), ReLUs near zero flipping


def ppo_changes(monkeypatch, sb3_changes: dict | None = None) -> tuple[list, list]:
    """``atari_ppo_nature_cnn`` for one epoch; SB3's PPO with its settings (``sb3_changes`` over SB3's arguments)."""
    algo = ours("atari_ppo_nature_cnn", "ppo", {"epochs": 1})
    cfg, s = algo.ctx.cfg, algo.ctx.cfg.ppo
    assert (s.lr_schedule, s.clip_schedule, cfg.adv_norm, s.vf_clip, s.target_kl) == (
        "linear", "linear", "minibatch", None, None), "the settings this test gives SB3"
    iteration = algo.num_iterations // 4
    arguments = dict(learning_rate=lambda p: s.learning_rate * p, n_steps=cfg.horizon, batch_size=s.minibatch_size,
                     n_epochs=s.epochs, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda,
                     clip_range=lambda p: s.objective.clip_epsilon * p, ent_coef=s.objective.ent_coef,
                     vf_coef=s.vf_coef, max_grad_norm=s.max_grad_norm, normalize_advantage=True, device="cpu",
                     policy_kwargs={"optimizer_class": torch.optim.Adam, "optimizer_kwargs": {"eps": s.adam_eps}})
    model = SB3PPO("CnnPolicy", DummyVecEnv([FramesOnly] * cfg.num_envs), **(arguments | (sb3_changes or {})))
    model._current_progress_remaining = 1 - iteration / algo.num_iterations  # SB3's schedules take the share left

    # SB3 shuffles with numpy's global generator; it draws ours instead, from a copy of our run's stream
    stream = torch.Generator()
    stream.set_state(algo.ctx.sample_gens[0].get_state())
    monkeypatch.setattr(sb3_buffers.np.random, "permutation", lambda n: torch.randperm(n, generator=stream).numpy())

    def update(algo, frames, actions, advantages, returns, old_log_probs):
        batch = Batch(obs=torch.from_numpy(frames)[None], actions=torch.from_numpy(actions).float().view(1, -1, 1),
                      advantages=torch.from_numpy(advantages)[None], returns=torch.from_numpy(returns).double()[None],
                      values=(returns - advantages)[None], explained_variance=np.zeros(1), rollout_seconds=0.0,
                      policy=Categorical.of_log_probs(old_log_probs[None]))  # as the rollout keeps it on Atari
        algo.collect = lambda: batch  # iterate() as the grid runs it, on this batch
        algo.iterate(iteration)

    return changes_per_update(algo, model, update, updates=1)


def test_ppo_update_equals_sb3_ppo_on_the_nature_cnn(monkeypatch):
    assert_same_changes(*ppo_changes(monkeypatch))


def test_the_comparison_sees_an_unannealed_clipping_range(monkeypatch):
    with pytest.raises(AssertionError, match="changes differ"):
        assert_same_changes(*ppo_changes(monkeypatch, sb3_changes={"clip_range": 0.1}))
