"""Many gymnasium environments stepped together (one or more per run), with exact checkpoints."""
from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import torch
from gymnasium.utils import seeding


class LockstepEnvs:
    """N gymnasium environments stepped together with auto-reset in the same step.

    A plain loop over ``gym.make`` environments: the task definitions (and their TimeLimit) are
    gymnasium's own; on episode end the final observation is kept for time-limit bootstrapping and the
    environment is reset at once, so ``obs`` is always the next observation to act on. Actions are a float
    array [N, act_dim] for a box (``low``, ``high``), an integer array [N] for a discrete set (``discrete``,
    ``num_actions``).

    A checkpoint (``state``) holds a MuJoCo environment's simulator state. Any other task (classic control,
    Box2D) is saved as its episode in progress: the environment's generator state when the episode was reset
    and the actions taken since. ``load_state`` replays them, which gives the same state bit for bit because
    these tasks are deterministic given their generator and actions (their state lives in Python objects,
    and Box2D's world is a C++ object that cannot be read out), and checks that the replay ends on the
    saved observation (tests/envs/test_classic_control.py).
    """

    discrete = False  # BatchedMujocoEnvs (MuJoCo, continuous) inherits this without calling __init__

    def __init__(self, task: str, seeds: list[int]):
        self.envs = [gym.make(task, disable_env_checker=True) for _ in seeds]
        space = self.envs[0].action_space
        if isinstance(space, gym.spaces.Discrete):
            self.discrete, self.num_actions, self.act_dim = True, int(space.n), 1
        else:
            self.low, self.high = space.low.astype(np.float64), space.high.astype(np.float64)
            self.act_dim = space.shape[0]
        self.obs_dim = self.envs[0].observation_space.shape[0]
        sim = self.envs[0].unwrapped
        self.replayed = not (hasattr(sim, "data") and hasattr(sim, "model"))  # not MuJoCo: saved as replays
        # Replayed tasks: each environment's generator state at its episode's reset (for the first episode the
        # one reset(seed=s) makes: gymnasium seeds with seeding.np_random) and the actions taken since.
        self.episode_rngs = [seeding.np_random(int(s))[0].bit_generator.state for s in seeds] if self.replayed else []
        self.episode_actions: list[list] = [[] for _ in seeds]
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
        """gymnasium's own stepping, one ``env.step`` per environment (ppo.envs.mujoco overrides this)."""
        n = len(self.envs)
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        final_obs, finished = {}, []
        for i, env in enumerate(self.envs):
            if active is not None and not active[i]:
                continue
            action = int(actions[i]) if self.discrete else actions[i]
            obs, rew, term, trunc, _ = env.step(action)
            if self.replayed:
                self.episode_actions[i].append(action if self.discrete else np.array(action, dtype=np.float64))
            rewards[i] = rew
            self.episode_return[i] += rew
            self.episode_length[i] += 1
            if term or trunc:
                terminated[i], truncated[i] = term, trunc and not term
                final_obs[i] = obs
                finished.append((i, float(self.episode_return[i]), int(self.episode_length[i])))
                self.episode_return[i], self.episode_length[i] = 0.0, 0
                if self.replayed:
                    self.episode_rngs[i], self.episode_actions[i] = env.unwrapped.np_random.bit_generator.state, []
                obs, _ = env.reset()
            self.obs[i] = obs
        return rewards, terminated, truncated, final_obs, finished

    def state(self) -> dict:
        """Everything needed to continue bit-identically: MuJoCo integration state, time-limit counters and
        reset RNGs, or (other tasks) each episode's start and actions; the current observations and the
        episodes in progress."""
        progress = {"obs": torch.from_numpy(self.obs.copy()),
                    "episode_return": torch.from_numpy(self.episode_return.copy()),
                    "episode_length": torch.from_numpy(self.episode_length.copy())}
        if self.replayed:
            actions = [torch.tensor(a, dtype=torch.int64) if self.discrete
                       else torch.from_numpy(np.array(a, dtype=np.float64).reshape(len(a), self.act_dim))
                       for a in self.episode_actions]
            return {"episode_rngs": list(self.episode_rngs), "episode_actions": actions, **progress}
        physics, elapsed, rngs = [], [], []
        for env in self.envs:
            sim = env.unwrapped
            buf = np.empty(mujoco.mj_stateSize(sim.model, mujoco.mjtState.mjSTATE_INTEGRATION))
            mujoco.mj_getState(sim.model, sim.data, buf, mujoco.mjtState.mjSTATE_INTEGRATION)
            physics.append(torch.from_numpy(buf))
            elapsed.append(int(env._elapsed_steps))
            rngs.append(sim.np_random.bit_generator.state)
        return {"physics": physics, "elapsed": elapsed, "rngs": rngs, **progress}

    def load_state(self, state: dict) -> None:
        if self.replayed:
            self._replay(state)
        else:
            for env, physics, elapsed, rng in zip(self.envs, state["physics"], state["elapsed"], state["rngs"],
                                                  strict=True):
                sim = env.unwrapped
                mujoco.mj_setState(sim.model, sim.data, physics.numpy(), mujoco.mjtState.mjSTATE_INTEGRATION)
                env._elapsed_steps = elapsed
                sim.np_random.bit_generator.state = rng
        self.obs[:] = state["obs"].numpy()
        self.episode_return[:] = state["episode_return"].numpy()
        self.episode_length[:] = state["episode_length"].numpy()

    def _replay(self, state: dict) -> None:
        """Each environment's episode in progress again: reset from the saved generator state, the saved actions."""
        for i, (env, rng, actions) in enumerate(zip(self.envs, state["episode_rngs"], state["episode_actions"],
                                                    strict=True)):
            env.unwrapped.np_random.bit_generator.state = rng
            obs, _ = env.reset()
            replayed = [int(a) for a in actions] if self.discrete else [a.numpy().copy() for a in actions]
            for action in replayed:
                obs, *_ = env.step(action)
            if not np.array_equal(np.asarray(obs, dtype=np.float64), state["obs"][i].numpy()):
                raise ValueError(f"{env.spec.id}, environment {i}: replaying its episode in progress ({len(replayed)} "
                                 "steps) did not end on the saved observation")
            self.episode_rngs[i], self.episode_actions[i] = rng, replayed

    def close(self) -> None:
        for env in self.envs:
            env.close()

