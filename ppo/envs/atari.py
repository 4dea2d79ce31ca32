"""Atari environments under a named protocol, and lock-step stepping of many of them.

A *protocol* (``experiments/protocols/<name>.yaml``) fixes every environment setting that changes Atari
scores (sticky actions, action set, no-op starts, frame skip, episode cap, life-loss signal, reward clipping),
with a source for each. Task ids are the version-free ``ALE/<Game>-v5``; legacy ids whose *name* fixes some
of those settings (``PongNoFrameskip-v4``) are refused, so a run's settings come from one place only.

The environments are gymnasium's and ale-py's own: ``gym.make("ALE/<Game>-v5", frameskip=1, ...)`` then
``AtariPreprocessing`` (no-op starts, frame skip with a max over the last two frames, resize, grayscale) and
``FrameStackObservation``. ``AtariLockstepEnvs`` resets them through these wrappers but takes each step as they
would, on the emulator directly (``AtariLockstepEnvs._advance``: the same frames, rewards and episode ends,
checked against the wrappers in tests/envs/test_atari_env.py), without their per-step overhead. Two protocol
settings shape only what the learner is told (``learner_signal``): the life-loss signal
(``AtariLockstepEnvs.life_lost``) and reward clipping; the rewards and returns the environments report are raw.
"""
from __future__ import annotations

import difflib
import re

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import torch
from ale_py.registration import rom_id_to_name
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

from ..config.errors import ConfigError, show
from ..config.protocols import AtariProtocol, load_protocol
from .family import EnvFamily, task_version

gym.register_envs(ale_py)  # gymnasium 1.x no longer registers the ALE ids by itself
ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # as AtariEnv does, but before the first banner

GAMES = frozenset(rom_id_to_name(rom) for rom in ale_py.roms.get_all_rom_ids())  # "Pong", "MsPacman", ...
_V5_ID = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")
# Pre-gymnasium-1 naming: <Game>[-ram][NoFrameskip|Deterministic]-v<N>, e.g. PongNoFrameskip-v4, Pong-ram-v0.
_LEGACY_ID = re.compile(r"^(?:ALE/)?(?P<game>[A-Za-z0-9]+?)(?P<ram>-ram)?(?P<skip>NoFrameskip|Deterministic)?"
                        r"(?:-v(?P<version>\d+))?$")


def is_atari(task: str) -> bool:
    """True for ``ALE/...`` ids and for legacy Atari ids (``PongNoFrameskip-v4``), so that the latter reach
    ``check_atari_task``'s refusal rather than MuJoCo code."""
    if task.startswith("ALE/"):
        return True
    match = _LEGACY_ID.match(task)
    return bool(match and match["game"] in GAMES)


def check_atari_task(task: str, source: str = "task") -> None:
    """Accept only ``ALE/<Game>-v5`` ids known to gymnasium; refuse every other Atari naming with the reason."""
    legacy = _LEGACY_ID.match(task)
    if legacy and legacy["ram"]:
        raise ConfigError(f"{source}: {show(task)} is a RAM-observation variant; this project learns from pixels "
                          f"(use 'ALE/{legacy['game']}-v5')")
    v5 = _V5_ID.match(task)
    if v5 is None and legacy and legacy["game"] in GAMES:
        if legacy["skip"] or (legacy["version"] and not task.startswith("ALE/")):
            raise ConfigError(
                f"{source}: {show(task)} is a legacy id whose name fixes protocol settings (NoFrameskip: frame skip 1, "
                f"Deterministic: 4, none: random 2-4; v0: sticky actions 0.25, v4: none) outside the protocol; "
                f"use 'ALE/{legacy['game']}-v5' with an Atari protocol (experiments/protocols/)")
        raise ConfigError(f"{source}: {show(task)} lacks the 'ALE/' namespace or the '-v5' version; "
                          f"use 'ALE/{legacy['game']}-v5'")
    if v5 is None:
        raise ConfigError(f"{source}: {show(task)} is not an Atari id of the form 'ALE/<Game>-v5' (e.g. 'ALE/Pong-v5')")
    if task not in gym.registry and v5["game"] in GAMES:
        raise ConfigError(f"{source}: {show(task)}: ale-py ships this ROM but registers no single-player v5 env for it")
    if task not in gym.registry:
        close = difflib.get_close_matches(v5["game"], sorted(GAMES), n=3)
        raise ConfigError(f"{source}: unknown Atari game {v5['game']!r} (not registered by ale-py "
                          f"{ale_py.__version__}){'; did you mean ' + str(close) if close else ''}")


def make_atari_env(task: str, protocol: AtariProtocol) -> gym.Env:
    """One environment as ``protocol`` defines it: observations uint8 [frame_stack, size, size], raw rewards."""
    check_atari_task(task)
    p = protocol
    # frameskip=1: AtariPreprocessing does the skipping (and the max-pool, which ALE's own skip cannot).
    env = gym.make(task, frameskip=1, repeat_action_probability=p.repeat_action_probability,
                   full_action_space=p.full_action_space, max_num_frames_per_episode=p.max_episode_frames,
                   disable_env_checker=True)
    if env.spec.max_episode_steps is not None:  # a TimeLimit would cap episodes a second time, in agent steps
        raise RuntimeError(f"{task}: gymnasium added a TimeLimit of {env.spec.max_episode_steps} steps; "
                           "the protocol's cap is ALE's max_num_frames_per_episode")
    env = AtariPreprocessing(env, noop_max=p.noop_max, frame_skip=p.frame_skip, screen_size=p.screen_size,
                             terminal_on_life_loss=False, grayscale_obs=p.grayscale, scale_obs=False)
    return FrameStackObservation(env, p.frame_stack)


class AtariLockstepEnvs:
    """N Atari environments stepped together with auto-reset in the same step (the Atari ``LockstepEnvs``).

    Rewards, returns and lengths are raw and span the whole game (all lives). ``life_lost`` tells the learner
    where a life ended, for protocols with a life-loss signal; the emulator is not reset there.
    """

    discrete = True  # an action is an index into the action set

    def __init__(self, task: str, seeds: list[int], protocol: AtariProtocol):
        self.task, self.protocol = task, protocol
        self.envs = [make_atari_env(task, protocol) for _ in seeds]
        self.num_actions = int(self.envs[0].action_space.n)
        self.obs_shape = tuple(self.envs[0].observation_space.shape)
        # What _advance steps: each emulator, AtariPreprocessing's two max-pool frames, and the action set
        # that AtariEnv maps action indices with
        self.ales = [env.unwrapped.ale for env in self.envs]
        self.pools = [_preprocessing(env).obs_buffer for env in self.envs]
        ale = self.ales[0]
        self.action_set = ale.getLegalActionSet() if protocol.full_action_space else ale.getMinimalActionSet()
        n = len(seeds)
        self.obs = np.zeros((n, *self.obs_shape), dtype=np.uint8)
        self.lives = np.zeros(n, dtype=np.int64)
        self.episode_return = np.zeros(n)
        self.episode_length = np.zeros(n, dtype=np.int64)
        self.life_lost = np.zeros(n, dtype=bool)
        self.fire = protocol.fire_reset and "FIRE" in self.envs[0].unwrapped.get_action_meanings()
        for i, seed in enumerate(seeds):
            # reset(seed) seeds both ALE's RNG (sticky actions) and the env's np_random (no-op count)
            self._reset(i, seed=int(seed))

    def _reset(self, i: int, seed: int | None = None) -> None:
        """A new game in environment i, through the wrappers (no-op starts, the first frame stacked)."""
        self.obs[i] = self.envs[i].reset(seed=seed)[0]
        self.lives[i] = self.ales[i].lives()
        self._fire(i)

    def _advance(self, i: int, action: int) -> tuple[float, bool, bool, int]:
        """One agent step of environment i: what AtariEnv.step, AtariPreprocessing.step and
        FrameStackObservation.step compute together (terminal_on_life_loss off), with the emulator directly,
        so none of their per-step overhead (an RGB screen fetched every frame, info dicts, copies of the
        stack). The new frame goes into ``obs[i]``, the oldest drops out. Returns (raw reward, terminated,
        truncated, lives)."""
        ale, pool, p = self.ales[i], self.pools[i], self.protocol
        ale_action = self.action_set[action]
        reward, terminated, truncated = 0.0, False, False
        for t in range(p.frame_skip):
            reward += ale.act(ale_action, 1.0)
            terminated, truncated = ale.game_over(with_truncation=False), ale.game_truncated()
            if terminated or truncated:  # the pool keeps the frames it has (as AtariPreprocessing)
                break
            if t >= p.frame_skip - 2:  # the last two frames: pool[1] the second-to-last, pool[0] the last
                screen = pool[p.frame_skip - 1 - t]
                if p.grayscale:
                    ale.getScreenGrayscale(screen)
                else:
                    ale.getScreenRGB(screen)
        if p.frame_skip > 1:
            np.maximum(pool[0], pool[1], out=pool[0])
        stack = self.obs[i]
        stack[:-1] = stack[1:]
        stack[-1] = cv2.resize(pool[0], (p.screen_size, p.screen_size), interpolation=cv2.INTER_AREA)
        return reward, terminated, truncated, ale.lives()

    def _fire(self, i: int) -> None:
        """baselines' FireResetEnv: games that wait for FIRE get FIRE, then action 2, from the environment at
        each start of a learner episode (a reset; a lost life when the learner sees lives). The steps'
        rewards count in the recorded score, not for the learner; they are not agent steps."""
        if not self.fire:
            return
        for action in (1, 2):
            reward, terminated, truncated, self.lives[i] = self._advance(i, action)
            self.episode_return[i] += reward
            if terminated or truncated:  # as baselines: start over (not seen in practice)
                self.obs[i] = self.envs[i].reset()[0]
                self.lives[i] = self.ales[i].lives()

    def step(self, actions: np.ndarray, active: np.ndarray | None = None):
        """Step every env, or only those where the boolean mask ``active`` is true (the others keep their
        observation, episode counters and emulator state, and report reward 0, not ended, no life lost).
        Returns (rewards, terminated, truncated, final_obs, finished): raw rewards; ``final_obs`` maps env
        index -> last observation of an episode that just ended; ``finished`` lists (env index, raw game
        return, length in agent steps) of those episodes. Sets ``life_lost`` for this step."""
        n = len(self.envs)
        if active is not None and np.shape(active) != (n,):
            raise ValueError(f"active must be a mask over the {n} environments, got shape {np.shape(active)}")
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        self.life_lost[:] = False
        final_obs, finished = {}, []
        for i in range(n):
            if active is not None and not active[i]:
                continue
            rew, term, trunc, lives = self._advance(i, int(actions[i]))
            rewards[i] = rew
            self.episode_return[i] += rew
            self.episode_length[i] += 1
            # lives > 0: some games (Qbert) show 0 lives a few frames before game over, which then counts
            self.life_lost[i] = term or 0 < lives < self.lives[i]
            self.lives[i] = lives
            if term or trunc:
                terminated[i], truncated[i] = term, trunc and not term
                final_obs[i] = self.obs[i].copy()
                finished.append((i, float(self.episode_return[i]), int(self.episode_length[i])))
                self.episode_return[i], self.episode_length[i] = 0.0, 0
                self._reset(i)
            elif self.life_lost[i] and self.protocol.life_loss_signal:
                self._fire(i)
        return rewards, terminated, truncated, final_obs, finished

    def state(self) -> dict:
        """Everything needed to continue bit-identically, as tensors and plain containers (loadable with
        ``torch.load(weights_only=True)``): each emulator's state with its RNG (sticky actions), the no-op
        RNG, AtariPreprocessing's two max-pool frame buffers, the current observations (= the frame stacks),
        lives and the episodes in progress."""
        ale, rngs, pool = [], [], []
        for env, frames in zip(self.envs, self.pools):
            serialized = env.unwrapped.ale.cloneState(include_rng=True).serialize()
            ale.append(torch.from_numpy(np.frombuffer(serialized, dtype=np.uint8).copy()))
            rngs.append(env.unwrapped.np_random.bit_generator.state)
            pool.append(torch.from_numpy(np.stack(frames)))
        return {"task": self.task, "protocol": self.protocol.to_dict(), "ale": ale, "rngs": rngs, "pool": pool,
                "obs": torch.from_numpy(self.obs.copy()), "lives": torch.from_numpy(self.lives.copy()),
                "episode_return": torch.from_numpy(self.episode_return.copy()),
                "episode_length": torch.from_numpy(self.episode_length.copy())}

    def load_state(self, state: dict) -> None:
        if state["task"] != self.task or state["protocol"] != self.protocol.to_dict():
            raise ValueError(f"state of {state['task']} under protocol {state['protocol']['name']!r} cannot be "
                             f"loaded into {self.task} under {self.protocol.name!r}")
        if len(state["ale"]) != len(self.envs):
            raise ValueError(f"state holds {len(state['ale'])} environments, this stepper {len(self.envs)}")
        self.obs[:] = state["obs"].numpy()
        for i, env in enumerate(self.envs):
            env.unwrapped.ale.restoreState(ale_py.ALEState(state["ale"][i].numpy().tobytes()))
            env.unwrapped.np_random.bit_generator.state = state["rngs"][i]
            for buffer, saved in zip(self.pools[i], state["pool"][i].numpy()):
                buffer[:] = saved
            # FrameStackObservation's own queue needs nothing: obs holds the stack, and a reset refills the queue
        self.lives[:] = state["lives"].numpy()
        self.episode_return[:] = state["episode_return"].numpy()
        self.episode_length[:] = state["episode_length"].numpy()

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _preprocessing(env: gym.Env) -> AtariPreprocessing:
    while not isinstance(env, AtariPreprocessing):
        env = env.env
    return env


def learner_signal(envs: AtariLockstepEnvs, rewards: np.ndarray, terminated: np.ndarray,
                   truncated: np.ndarray) -> tuple:
    """What the learner is told of a step under the protocol: rewards clipped to their sign (``reward_clip``),
    and a lost life ending the value horizon like a game over (``life_loss_signal``); a time limit is then
    a truncation only where nothing terminated."""
    protocol = envs.protocol
    if protocol.reward_clip:
        rewards = np.sign(rewards)
    if protocol.life_loss_signal:
        terminated = terminated | envs.life_lost
    return rewards, terminated, truncated & ~terminated


def env_record(task: str, config) -> dict:
    """How the run's environments were made and what the learner saw of them, for the manifest."""
    # "ppo.atari": the module's name when Atari runs were first recorded; the value stays, so that their
    # records and checkpoints (whose fingerprint holds this record) stay comparable
    return {"id": task, "made_with": "ppo.atari.make_atari_env", "protocol": config.env_protocol,
            **load_protocol(config.env_protocol).to_dict(), "time_limit_handling": config.time_limit}


# PPO on one core, Mnih 2016 network, measured alone (docs/performance.md); A2C is faster per step. The
# network, not the emulator, bounds an Atari run.
SECONDS_PER_STEP = 5e-3

FAMILY = EnvFamily(
    name="atari", summary="ALE games ('ALE/<Game>-v5') under a named protocol (experiments/protocols/)",
    owns=is_atari, check=check_atari_task,
    make=lambda task, seeds, config: AtariLockstepEnvs(task, seeds, load_protocol(config.env_protocol)),
    observation="pixels", discrete=lambda task: True, record=env_record, version=task_version,
    packages=("ale-py", "opencv-python-headless"),
    seconds_per_step=lambda task, runs, speeds: SECONDS_PER_STEP * runs,
    limit_seconds_per_step=lambda runs: SECONDS_PER_STEP * runs, learner_signal=learner_signal)
