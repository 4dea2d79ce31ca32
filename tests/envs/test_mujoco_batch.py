"""BatchedMujocoEnvs against gymnasium, side by side, bit for bit: the seven MuJoCo v5 tasks under random
and out-of-range actions, resets after terminations and time limits, the ``active`` mask, and checkpoints
taken by either class and loaded by the other."""
import dataclasses

import numpy as np
import pytest
from killing import Killed, kill_at
from same_records import assert_same_records

import ppo.algorithms.rollout
import ppo.envs.gym
import ppo.envs.lockstep
from ppo.config.run_config import RunConfig
from ppo.config.settings import PPOSettings
from ppo.envs.lockstep import LockstepEnvs
from ppo.envs.mujoco import TASKS, BatchedMujocoEnvs, pow2
from ppo.envs.gym import make_lockstep
from ppo.training.driver import RunSpec, train_group

SEEDS = [0, 1, 2, 3, 123456789, 4294967295]


def step_both(ref, bat, actions, active=None):
    """One lock-step of both; every output must be identical (np.array_equal on the float64 values)."""
    expected, got = ref.step(actions, active), bat.step(actions, active)
    for name, a, b in zip(("rewards", "terminated", "truncated"), expected[:3], got[:3]):
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert expected[3].keys() == got[3].keys(), "final_obs"
    for i in expected[3]:
        assert np.array_equal(expected[3][i], got[3][i]), f"final_obs of env {i}"
    assert expected[4] == got[4], "finished episodes"
    assert np.array_equal(ref.obs, bat.obs), "obs"
    assert np.array_equal(ref.episode_return, bat.episode_return)
    assert np.array_equal(ref.episode_length, bat.episode_length)
    return expected


def assert_same_state(a: dict, b: dict):
    assert a.keys() == b.keys()
    for x, y in zip(a["physics"], b["physics"]):  # MuJoCo's integration state, warm start and time included
        assert np.array_equal(x.numpy(), y.numpy())
    assert a["elapsed"] == b["elapsed"] and a["rngs"] == b["rngs"]
    for key in ("obs", "episode_return", "episode_length"):
        assert np.array_equal(a[key].numpy(), b[key].numpy()), key


@pytest.mark.parametrize("task", sorted(TASKS))
def test_same_trajectories_as_gymnasium(task):
    ref, bat = LockstepEnvs(task, SEEDS), BatchedMujocoEnvs(task, SEEDS)
    assert (bat.obs_dim, bat.act_dim) == (ref.obs_dim, ref.act_dim)
    assert np.array_equal(bat.low, ref.low) and np.array_equal(bat.high, ref.high)
    assert np.array_equal(ref.obs, bat.obs)
    rng = np.random.default_rng(7)
    ends = {"terminated": 0, "truncated": 0}
    for t in range(400):
        # in range, then 3x out of range (MuJoCo clamps the control, the control cost sees the action)
        scale = 1.0 if t < 250 else 3.0
        actions = rng.uniform(ref.low, ref.high, size=(len(SEEDS), ref.act_dim)) * scale
        if t == 300:
            actions = actions.astype(np.float32)  # the control cost is then summed in float32
        _, term, trunc, _, _ = step_both(ref, bat, actions)
        ends["terminated"] += term.sum()
        ends["truncated"] += trunc.sum()
        if t == 320:  # the time limit: both counters put near the end (TimeLimit only compares them)
            state = ref.state()
            state["elapsed"] = [bat.max_steps - 1 - (i % 3) for i in range(len(SEEDS))]
            ref.load_state(state)
            bat.load_state(state)
    assert_same_state(ref.state(), bat.state())
    assert ends["truncated"] > 0
    if task not in ("HalfCheetah-v5", "Swimmer-v5", "Reacher-v5"):  # those never terminate
        assert ends["terminated"] > 0


@pytest.mark.parametrize("task", ["Hopper-v5", "InvertedDoublePendulum-v5", "Reacher-v5"])
def test_active_mask_and_checkpoints_across_the_two_classes(task):
    ref, bat = LockstepEnvs(task, SEEDS), BatchedMujocoEnvs(task, SEEDS)
    n = len(SEEDS)

    def run(steps, seed):
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            active = rng.random(n) < 0.6
            if rng.random() < 0.3:
                active = None
            step_both(ref, bat, rng.uniform(ref.low, ref.high, size=(n, ref.act_dim)), active)

    run(60, 1)
    step_both(ref, bat, np.zeros((n, ref.act_dim)), np.zeros(n, bool))  # nobody steps
    # mid-episode: a checkpoint of LockstepEnvs loads into fresh BatchedMujocoEnvs with other seeds ...
    saved = ref.state()
    assert_same_state(saved, bat.state())
    run(40, 2)
    after = ref.state()
    bat = BatchedMujocoEnvs(task, [s + 1000 for s in SEEDS])
    bat.load_state(saved)
    ref.load_state(saved)
    run(40, 2)  # the same 40 steps again, both from the checkpoint
    assert_same_state(after, ref.state())
    # ... and a checkpoint of BatchedMujocoEnvs into LockstepEnvs
    saved = bat.state()
    ref = LockstepEnvs(task, [s + 2000 for s in SEEDS])
    ref.load_state(saved)
    run(40, 3)
    assert_same_state(ref.state(), bat.state())


def test_gymnasium_scalar_square_is_c_pow():
    """InvertedDoublePendulum squares numpy scalars: ``pow2`` must be that operation, not ``x * x``."""
    x = np.random.default_rng(0).standard_normal(20000) * 10.0
    scalar = np.array([np.float64(v) ** 2 for v in x])
    assert np.array_equal(pow2(x), scalar)
    assert not np.array_equal(x * x, scalar)  # what pow2 is for


def test_fallback_to_gymnasium_for_other_tasks():
    assert type(make_lockstep("Hopper-v5", [0])) is BatchedMujocoEnvs
    for task in ("Hopper-v4", "Ant-v5", "Pusher-v5"):
        assert type(make_lockstep(task, [0])) is LockstepEnvs
    with pytest.raises(ValueError, match="active"):
        BatchedMujocoEnvs("Hopper-v5", [0, 1]).step(np.zeros((2, 3)), np.ones(3, bool))
    with pytest.raises(ValueError, match="dimension"):
        BatchedMujocoEnvs("Hopper-v5", [0, 1]).step(np.zeros((2, 4)))


TINY = RunConfig(total_steps=768, horizon=128, ppo=PPOSettings(epochs=2, minibatch_size=32))


@pytest.mark.parametrize("task, time_limit", [("Hopper-v5", "terminal"), ("Reacher-v5", "bootstrap")])
def test_training_records_are_those_of_gymnasium(monkeypatch, task, time_limit):
    specs = [RunSpec(s, task, dataclasses.replace(TINY, time_limit=time_limit), i) for i, s in enumerate("ab")]
    batched = train_group(specs, log=lambda _: None)
    monkeypatch.setattr(ppo.envs.gym, "make_lockstep", LockstepEnvs)
    assert_same_records(train_group(specs, log=lambda _: None), batched)
    assert len(batched[0].episodes) > 3  # episodes ended (Hopper falls, Reacher's time limit)


def test_checkpoint_of_gymnasium_environments_resumes_batched(tmp_path, monkeypatch):
    """A group checkpointed by LockstepEnvs (as the running grid's are) goes on with BatchedMujocoEnvs."""
    specs = [RunSpec("a", "Hopper-v5", TINY, 0), RunSpec("b", "Hopper-v5", TINY, 1)]
    uninterrupted = train_group(specs, log=lambda _: None)
    ckpt = tmp_path / "group.ckpt"
    with monkeypatch.context() as m:
        m.setattr(ppo.envs.gym, "make_lockstep", LockstepEnvs)
        kill_at(m, ppo.envs.lockstep.LockstepEnvs, "step", 128 * 4 + 17)  # inside the 5th rollout
        with pytest.raises(Killed):
            train_group(specs, log=lambda _: None, checkpoint=ckpt, checkpoint_every=1)
    messages = []
    resumed = train_group(specs, log=messages.append, checkpoint=ckpt, checkpoint_every=1)
    assert any("resumed from" in m for m in messages)
    assert_same_records(uninterrupted, resumed)
