"""Task ids and lock-step stepping of many gymnasium environments (one or more per run)."""
from __future__ import annotations

import re

import gymnasium as gym
import mujoco
import numpy as np
import torch

from .config import ConfigError, show

_VERSION = re.compile(r"-v(\d+)$")


def check_task(task: str, source: str = "task") -> None:
    """Refuse an id gymnasium does not know, one without an explicit version, and one that is not a MuJoCo
    task: the driver's policies and checkpoints are for MuJoCo's continuous actions and simulator state."""
    if not _VERSION.search(task):
        raise ConfigError(f"{source}: task id {show(task)} has no version suffix (e.g. 'Hopper-v5')")
    if task not in gym.registry:
        raise ConfigError(f"{source}: unknown task id {show(task)} (not registered in gymnasium {gym.__version__})")
    if not str(gym.registry[task].entry_point).startswith("gymnasium.envs.mujoco"):
        raise ConfigError(f"{source}: task {show(task)} is not a MuJoCo task; this project trains gymnasium's MuJoCo "
                          "tasks (e.g. 'Hopper-v5') and Atari games ('ALE/<Game>-v5')")


def task_version(task: str) -> str:
    match = _VERSION.search(task)
    return f"v{match.group(1)}" if match else "unversioned"


def task_name(task: str) -> str:
    """'Hopper-v5' -> 'Hopper', 'ALE/Pong-v5' -> 'Pong'."""
    return _VERSION.sub("", task).rsplit("/", 1)[-1]


class LockstepEnvs:
    """N gymnasium environments stepped together with auto-reset in the same step.

    A plain loop over ``gym.make`` environments: the task definitions (and their TimeLimit) are
    gymnasium's own; on episode end the final observation is kept for time-limit bootstrapping and the
    environment is reset at once, so ``obs`` is always the next observation to act on.
    """

    def __init__(self, task: str, seeds: list[int]):
        self.envs = [gym.make(task, disable_env_checker=True) for _ in seeds]
        space = self.envs[0].action_space
        self.low, self.high = space.low.astype(np.float64), space.high.astype(np.float64)
        self.act_dim = space.shape[0]
        self.obs_dim = self.envs[0].observation_space.shape[0]
        n = len(seeds)
        self.obs = np.stack([env.reset(seed=int(s))[0] for env, s in zip(self.envs, seeds)]).astype(np.float64)
        for env, s in zip(self.envs, seeds):
            env.action_space.seed(int(s))
        self.episode_return = np.zeros(n)
        self.episode_length = np.zeros(n, dtype=np.int64)

    def step(self, actions: np.ndarray, active: np.ndarray | None = None):
        """Step every env, or only those where the boolean mask ``active`` is true (the others keep their
        observation, episode counters and simulator state, and report reward 0, not ended). Returns
        (rewards, terminated, truncated, final_obs, finished) where ``final_obs`` maps env index -> last
        observation of an episode that just ended and ``finished`` lists (env index, return, length) of
        those episodes."""
        n = len(self.episode_return)
        if active is not None and np.shape(active) != (n,):
            raise ValueError(f"active must be a mask over the {n} environments, got shape {np.shape(active)}")
        return self._step(actions, active)

    def _step(self, actions: np.ndarray, active: np.ndarray | None):
        """gymnasium's own stepping, one ``env.step`` per environment (ppo.mujoco_batch overrides this)."""
        n = len(self.envs)
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        final_obs, finished = {}, []
        for i, env in enumerate(self.envs):
            if active is not None and not active[i]:
                continue
            obs, rew, term, trunc, _ = env.step(actions[i])
            rewards[i] = rew
            self.episode_return[i] += rew
            self.episode_length[i] += 1
            if term or trunc:
                terminated[i], truncated[i] = term, trunc and not term
                final_obs[i] = obs
                finished.append((i, float(self.episode_return[i]), int(self.episode_length[i])))
                self.episode_return[i], self.episode_length[i] = 0.0, 0
                obs, _ = env.reset()
            self.obs[i] = obs
        return rewards, terminated, truncated, final_obs, finished

    def state(self) -> dict:
        """Everything needed to continue bit-identically: MuJoCo integration state, time-limit counters,
        reset RNGs, the current observations and the episodes in progress."""
        physics, elapsed, rngs = [], [], []
        for env in self.envs:
            sim = env.unwrapped
            if not hasattr(sim, "data") or not hasattr(sim, "model"):
                raise TypeError(f"{sim.spec.id}: checkpointing supports MuJoCo environments only")
            buf = np.empty(mujoco.mj_stateSize(sim.model, mujoco.mjtState.mjSTATE_INTEGRATION))
            mujoco.mj_getState(sim.model, sim.data, buf, mujoco.mjtState.mjSTATE_INTEGRATION)
            physics.append(torch.from_numpy(buf))
            elapsed.append(int(env._elapsed_steps))
            rngs.append(sim.np_random.bit_generator.state)
        return {"physics": physics, "elapsed": elapsed, "rngs": rngs, "obs": torch.from_numpy(self.obs.copy()),
                "episode_return": torch.from_numpy(self.episode_return.copy()),
                "episode_length": torch.from_numpy(self.episode_length.copy())}

    def load_state(self, state: dict) -> None:
        for env, physics, elapsed, rng in zip(self.envs, state["physics"], state["elapsed"], state["rngs"]):
            sim = env.unwrapped
            mujoco.mj_setState(sim.model, sim.data, physics.numpy(), mujoco.mjtState.mjSTATE_INTEGRATION)
            env._elapsed_steps = elapsed
            sim.np_random.bit_generator.state = rng
        self.obs[:] = state["obs"].numpy()
        self.episode_return[:] = state["episode_return"].numpy()
        self.episode_length[:] = state["episode_length"].numpy()

    def close(self) -> None:
        for env in self.envs:
            env.close()
