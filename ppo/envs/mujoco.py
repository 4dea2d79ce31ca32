"""Gymnasium's seven MuJoCo v5 tasks stepped as one batch: the same trajectories, bit for bit, with fewer
Python crossings.

``LockstepEnvs`` steps N ``gym.make`` environments in a Python loop; each step goes through two wrappers,
the task's ``step`` and a dozen small numpy calls on 1-element scalars. Here the group shares one
``MjModel`` and keeps N ``MjData``: the loop over environments only sets the controls and calls
``mj_step`` (``nstep = frame_skip``), and the observations, rewards, terminations and time limits are
computed for the whole group in numpy, with the same floating-point operations as gymnasium's v5 classes
(their default arguments, as ``gym.make(id)`` builds them). Resets run per environment with gymnasium's
own generator and draws, in the same order.

Gymnasium stays the definition: every parameter is read from a ``gym.make`` instance of the task, and
tests/envs/test_mujoco_batch.py steps both side by side and requires identical results. The gymnasium family
(ppo/envs/gym.py) uses them for the tasks ``supported`` names, gymnasium's own environments for the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import gymnasium as gym
import mujoco
import numpy as np
import torch
from gymnasium.utils import seeding

from .lockstep import LockstepEnvs

# The formulas below are those of this gymnasium release; another one falls back to its own classes
# until tests/envs/test_mujoco_batch.py has been run against it.
VERIFIED_GYMNASIUM = ("1.4.0",)


def pow2(x: np.ndarray) -> np.ndarray:
    """``x ** 2`` as gymnasium computes it on a numpy float64 *scalar*: C ``pow(x, 2.0)``, which differs
    from ``x * x`` (what ``array ** 2`` computes) in the last bit for about 1 value in 1,000."""
    return np.float_power(x, 2.0)


def row_norm(vecs: np.ndarray) -> np.ndarray:
    """``np.linalg.norm`` of each row: it is ``sqrt(v.dot(v))``, and the dot product goes through BLAS,
    whose summation order (and FMA use) a batched formula would not reproduce."""
    return np.sqrt(np.array([v.dot(v) for v in vecs]))


def ctrl_cost(weight: float, actions: np.ndarray) -> np.ndarray:
    # np.sum over a row of a C-contiguous array adds in the same order as over the 1-d action
    return weight * np.sum(np.square(actions), axis=1)


# --- observations: (env, fields) -> [k, obs_dim]; fields holds MjData arrays stacked over k envs ----------

def positions_velocities(skip: int, clip_velocity: bool):
    def observe(env, f):
        skipped = skip * env._exclude_current_positions_from_observation
        velocity = np.clip(f["qvel"], -10, 10) if clip_velocity else f["qvel"]
        return np.concatenate([f["qpos"][:, skipped:], velocity], axis=1)
    return observe


def pendulum_obs(env, f):
    return np.concatenate([f["qpos"], f["qvel"]], axis=1)


def double_pendulum_obs(env, f):
    angles = np.ascontiguousarray(f["qpos"][:, 1:])
    return np.concatenate([f["qpos"][:, :1], np.sin(angles), np.cos(angles), np.clip(f["qvel"], -10, 10),
                           np.clip(f["qfrc_constraint"], -10, 10)[:, :1]], axis=1)


def fingertip_to_target(env, f):
    body = env.model.body
    return f["xpos"][:, body("fingertip").id] - f["xpos"][:, body("target").id]


def reacher_obs(env, f):
    theta = np.ascontiguousarray(f["qpos"][:, :2])
    return np.concatenate([np.cos(theta), np.sin(theta), f["qpos"][:, 2:], f["qvel"][:, :2],
                           fingertip_to_target(env, f)[:, :2]], axis=1)


# --- rewards and terminations: (env, before, fields, obs, actions) -> (rewards [k], terminated [k]) ------

def x_velocity(env, before, f):
    return (f["qpos"][:, 0] - before[:, 0]) / env.dt


def hopper_healthy(env, f):
    qpos = f["qpos"]
    state = np.concatenate([qpos, f["qvel"]], axis=1)[:, 2:]
    (min_state, max_state), (min_z, max_z) = env._healthy_state_range, env._healthy_z_range
    min_angle, max_angle = env._healthy_angle_range
    return (np.all((min_state < state) & (state < max_state), axis=1) & (min_z < qpos[:, 1]) & (qpos[:, 1] < max_z)
            & (min_angle < qpos[:, 2]) & (qpos[:, 2] < max_angle))


def walker_healthy(env, f):
    qpos = f["qpos"]
    (min_z, max_z), (min_angle, max_angle) = env._healthy_z_range, env._healthy_angle_range
    return (min_z < qpos[:, 1]) & (qpos[:, 1] < max_z) & (min_angle < qpos[:, 2]) & (qpos[:, 2] < max_angle)


def walking_reward(healthy_fn):
    def outcome(env, before, f, obs, actions):
        healthy = healthy_fn(env, f)
        forward = env._forward_reward_weight * x_velocity(env, before, f)
        reward = (forward + healthy * env._healthy_reward) - ctrl_cost(env._ctrl_cost_weight, actions)
        return reward, ~healthy & env._terminate_when_unhealthy
    return outcome


def running_reward(env, before, f, obs, actions):
    reward = env._forward_reward_weight * x_velocity(env, before, f) - ctrl_cost(env._ctrl_cost_weight, actions)
    return reward, np.zeros(len(reward), dtype=bool)


def reacher_reward(env, before, f, obs, actions):
    reward_dist = -row_norm(fingertip_to_target(env, f)) * env._reward_dist_weight
    reward_ctrl = -np.square(actions).sum(axis=1) * env._reward_control_weight
    return reward_dist + reward_ctrl, np.zeros(len(reward_dist), dtype=bool)


def pendulum_reward(env, before, f, obs, actions):
    terminated = ~np.all(np.isfinite(obs), axis=1) | (np.abs(obs[:, 1]) > 0.2)
    return (~terminated).astype(np.float64), terminated


def double_pendulum_reward(env, before, f, obs, actions):
    x, y = f["site_xpos"][:, 0, 0], f["site_xpos"][:, 0, 2]
    v1, v2 = f["qvel"][:, 1], f["qvel"][:, 2]
    terminated = y <= 1
    dist_penalty = 0.01 * pow2(x) + pow2(y - 2)
    vel_penalty = 0.001 * pow2(v1) + 0.005 * pow2(v2)
    return env._healthy_reward * (~terminated) - dist_penalty - vel_penalty, terminated


# --- resets: (env, rng) -> (qpos, qvel), the draws of the task's reset_model in their order --------------

def uniform_reset(env, rng):
    s = env._reset_noise_scale
    return (env.init_qpos + rng.uniform(low=-s, high=s, size=env.model.nq),
            env.init_qvel + rng.uniform(low=-s, high=s, size=env.model.nv))


def cheetah_reset(env, rng):
    s = env._reset_noise_scale
    return (env.init_qpos + rng.uniform(low=-s, high=s, size=env.model.nq),
            env.init_qvel + s * rng.standard_normal(env.model.nv))


def double_pendulum_reset(env, rng):
    s = env._reset_noise_scale
    return (env.init_qpos + rng.uniform(low=-s, high=s, size=env.model.nq),
            env.init_qvel + rng.standard_normal(env.model.nv) * s)


def reacher_reset(env, rng):
    qpos = rng.uniform(low=-0.1, high=0.1, size=env.model.nq) + env.init_qpos
    while True:  # a goal inside the reachable disc, by rejection
        goal = rng.uniform(low=-0.2, high=0.2, size=2)
        if np.linalg.norm(goal) < 0.2:
            break
    qpos[-2:] = goal
    qvel = env.init_qvel + rng.uniform(low=-0.005, high=0.005, size=env.model.nv)
    qvel[-2:] = 0
    return qpos, qvel


@dataclass(frozen=True)
class TaskDef:
    """One v5 task as gymnasium's class defines it; the parameters are read off its instance."""

    entry_point: str
    observe: Callable
    outcome: Callable
    reset: Callable
    fields: tuple[str, ...] = ("qpos", "qvel")  # MjData arrays the observation and reward read


TASKS = {
    "Hopper-v5": TaskDef("gymnasium.envs.mujoco.hopper_v5:HopperEnv", positions_velocities(1, clip_velocity=True),
                         walking_reward(hopper_healthy), uniform_reset),
    "Walker2d-v5": TaskDef("gymnasium.envs.mujoco.walker2d_v5:Walker2dEnv",
                           positions_velocities(1, clip_velocity=True), walking_reward(walker_healthy), uniform_reset),
    "HalfCheetah-v5": TaskDef("gymnasium.envs.mujoco.half_cheetah_v5:HalfCheetahEnv",
                              positions_velocities(1, clip_velocity=False), running_reward, cheetah_reset),
    "Swimmer-v5": TaskDef("gymnasium.envs.mujoco.swimmer_v5:SwimmerEnv", positions_velocities(2, clip_velocity=False),
                          running_reward, uniform_reset),
    "Reacher-v5": TaskDef("gymnasium.envs.mujoco.reacher_v5:ReacherEnv", reacher_obs, reacher_reward, reacher_reset,
                          ("qpos", "qvel", "xpos")),
    "InvertedPendulum-v5": TaskDef("gymnasium.envs.mujoco.inverted_pendulum_v5:InvertedPendulumEnv", pendulum_obs,
                                   pendulum_reward, uniform_reset),
    "InvertedDoublePendulum-v5": TaskDef(
        "gymnasium.envs.mujoco.inverted_double_pendulum_v5:InvertedDoublePendulumEnv", double_pendulum_obs,
        double_pendulum_reward, double_pendulum_reset, ("qpos", "qvel", "site_xpos", "qfrc_constraint")),
}


def supported(task: str) -> bool:
    """A task this module reproduces: one of the seven, registered as this module knows it (no registry
    kwargs, gymnasium's own class), under a gymnasium release the tests were run with."""
    if task not in TASKS or task not in gym.registry or gym.__version__ not in VERIFIED_GYMNASIUM:
        return False
    spec = gym.spec(task)
    return spec.entry_point == TASKS[task].entry_point and not spec.kwargs


def make_lockstep(task: str, seeds: list[int]):
    """The group's environments: batched for the seven MuJoCo v5 tasks, gymnasium's own otherwise."""
    return BatchedMujocoEnvs(task, seeds) if supported(task) else LockstepEnvs(task, seeds)


class BatchedMujocoEnvs(LockstepEnvs):
    """``LockstepEnvs`` for a supported MuJoCo v5 task: same interface, same results, same checkpoint.

    A subclass so that ``LockstepEnvs.step`` (the mask check) stays the one entry point of a group's
    stepping; it replaces the gymnasium environments, so it does not call ``LockstepEnvs.__init__``.
    """

    def __init__(self, task: str, seeds: list[int]):
        if not supported(task):
            raise ValueError(f"{task}: not one of the MuJoCo v5 tasks BatchedMujocoEnvs reproduces")
        self.task = TASKS[task]
        wrapped = gym.make(task, disable_env_checker=True)
        self.env = wrapped.unwrapped  # the definition: model, parameters, frame skip, dt
        self.max_steps = wrapped.spec.max_episode_steps
        self.model = self.env.model
        self.datas = [mujoco.MjData(self.model) for _ in seeds]
        # views into each MjData, made once: reading them later costs no call into the bindings
        self.views = {name: [getattr(d, name) for d in self.datas] for name in ("ctrl", *self.task.fields)}
        space = self.env.action_space
        self.low, self.high = space.low.astype(np.float64), space.high.astype(np.float64)
        self.act_dim = space.shape[0]
        self.obs_dim = self.env.observation_space.shape[0]
        n = len(seeds)
        self.rngs = [seeding.np_random(int(s))[0] for s in seeds]
        self.elapsed = np.zeros(n, dtype=np.int64)
        self.obs = np.zeros((n, self.obs_dim))
        self.reset(list(range(n)))
        self.episode_return = np.zeros(n)
        self.episode_length = np.zeros(n, dtype=np.int64)

    def gather(self, idx: list[int]) -> dict:
        # np.array copies a list of equal arrays into one block about 4x faster than np.stack
        return {name: np.array([self.views[name][i] for i in idx]) for name in self.task.fields}

    def reset(self, idx: list[int]) -> None:
        """gymnasium's reset without a seed (the generators go on): mj_resetData, the task's draws,
        set_state (which ends in mj_forward), then the observation; the time limit restarts."""
        for i in idx:
            qpos, qvel = self.task.reset(self.env, self.rngs[i])
            data = self.datas[i]
            mujoco.mj_resetData(self.model, data)
            data.qpos[:] = qpos
            data.qvel[:] = qvel
            mujoco.mj_forward(self.model, data)
        self.elapsed[idx] = 0
        self.obs[idx] = self.task.observe(self.env, self.gather(idx))

    def _step(self, actions: np.ndarray, active: np.ndarray | None):
        """The group's step (see ``LockstepEnvs.step``): controls and mj_step per environment, the rest
        batched."""
        n = len(self.datas)
        actions = np.asarray(actions)
        if actions.shape[1:] != (self.act_dim,):
            raise ValueError(f"Action dimension mismatch. Expected {(self.act_dim,)}, found {actions.shape[1:]}")
        if active is None and len(actions) == n:
            return self._step_all(actions)
        idx = np.arange(n) if active is None else np.flatnonzero(active)
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        if len(idx) == 0:
            return rewards, terminated, truncated, {}, []
        acts, envs = actions[idx], idx.tolist()
        before = np.array([self.views["qpos"][i] for i in envs])
        ctrls, datas, model, skip = self.views["ctrl"], self.datas, self.model, self.env.frame_skip
        # gymnasium's mj_rnePostConstraint after each step only fills cacc/cfrc_*: no v5 default reads them
        for i, a in zip(envs, acts):
            ctrls[i][:] = a
            mujoco.mj_step(model, datas[i], nstep=skip)
        fields = self.gather(envs)
        obs = self.task.observe(self.env, fields)
        rew, term = self.task.outcome(self.env, before, fields, obs, acts)
        self.elapsed[idx] += 1
        trunc = self.elapsed[idx] >= self.max_steps
        rewards[idx], terminated[idx], truncated[idx] = rew, term, trunc & ~term
        self.episode_return[idx] += rew
        self.episode_length[idx] += 1
        self.obs[idx] = obs
        return (rewards, terminated, truncated, *self._end_episodes(idx[term | trunc]))

    def _step_all(self, actions: np.ndarray):
        """``_step`` with every environment active, as a rollout steps them: the same operations on the same
        values, on whole arrays instead of through an index (no fancy indexing, no index lists), which on a
        group's small arrays cost about as much as the arithmetic."""
        acts = np.ascontiguousarray(actions)  # as actions[idx]: C-contiguous rows, so ctrl_cost sums alike
        before = np.array(self.views["qpos"])
        ctrls, datas, model, skip = self.views["ctrl"], self.datas, self.model, self.env.frame_skip
        for ctrl, data, a in zip(ctrls, datas, acts):
            ctrl[:] = a
            mujoco.mj_step(model, data, nstep=skip)
        fields = {name: np.array(self.views[name]) for name in self.task.fields}
        obs = self.task.observe(self.env, fields)
        rew, term = self.task.outcome(self.env, before, fields, obs, acts)
        rewards, terminated = np.array(rew, dtype=np.float64), np.array(term, dtype=bool)
        self.elapsed += 1
        trunc = self.elapsed >= self.max_steps
        truncated = trunc & ~terminated
        self.episode_return += rewards
        self.episode_length += 1
        self.obs[:] = obs
        return (rewards, terminated, truncated, *self._end_episodes(np.flatnonzero(terminated | trunc)))

    def _end_episodes(self, ended: np.ndarray) -> tuple[dict, list]:
        """Final observations and (env, return, length) of the episodes that just ``ended``, which reset."""
        if not len(ended):
            return {}, []
        final_obs = {int(i): self.obs[i].copy() for i in ended}
        finished = [(int(i), float(self.episode_return[i]), int(self.episode_length[i])) for i in ended]
        self.episode_return[ended], self.episode_length[ended] = 0.0, 0
        self.reset(ended.tolist())
        return final_obs, finished

    def state(self) -> dict:
        """The same dictionary as ``LockstepEnvs.state``: either class loads the other's checkpoint."""
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        physics = []
        for data in self.datas:
            buf = np.empty(mujoco.mj_stateSize(self.model, spec))
            mujoco.mj_getState(self.model, data, buf, spec)
            physics.append(torch.from_numpy(buf))
        return {"physics": physics, "elapsed": [int(e) for e in self.elapsed],
                "rngs": [rng.bit_generator.state for rng in self.rngs], "obs": torch.from_numpy(self.obs.copy()),
                "episode_return": torch.from_numpy(self.episode_return.copy()),
                "episode_length": torch.from_numpy(self.episode_length.copy())}

    def load_state(self, state: dict) -> None:
        for i, (physics, rng) in enumerate(zip(state["physics"], state["rngs"])):
            mujoco.mj_setState(self.model, self.datas[i], physics.numpy(), mujoco.mjtState.mjSTATE_INTEGRATION)
            self.rngs[i].bit_generator.state = rng
        self.elapsed[:] = state["elapsed"]
        self.obs[:] = state["obs"].numpy()
        self.episode_return[:] = state["episode_return"].numpy()
        self.episode_length[:] = state["episode_length"].numpy()

    def close(self) -> None:
        self.env.close()
