"""The gymnasium family: vector-observation tasks (MuJoCo, classic control, Box2D), their checks, and a group's
environments (the seven MuJoCo v5 tasks batched, gymnasium's own for the others)."""
from __future__ import annotations

import functools

import gymnasium as gym

from ..config.errors import ConfigError, show
from .family import VERSION, EnvFamily, task_version
from .lockstep import LockstepEnvs
from .mujoco import BatchedMujocoEnvs, supported

# The gymnasium suites of this family, by the module that defines them (Atari is its own family,
# ppo/envs/atari.py): MuJoCo's continuous control, and the vector-observation tasks of the PPO tutorials (classic control:
# CartPole, Acrobot...; Box2D: LunarLander...). Discrete actions get a categorical policy, continuous ones
# a Gaussian (ppo/algorithms/base.py).
SUITES = {"gymnasium.envs.mujoco": "MuJoCo", "gymnasium.envs.classic_control": "classic control",
          "gymnasium.envs.box2d": "Box2D"}
EXAMPLES = "gymnasium's MuJoCo, classic-control and Box2D tasks (e.g. 'Hopper-v5', 'CartPole-v1', 'LunarLander-v3')"


def task_suite(task: str) -> str | None:
    """'MuJoCo', 'classic control', 'Box2D' for a registered task of those suites, else None."""
    if task not in gym.registry:
        return None
    entry = str(gym.registry[task].entry_point)
    return next((suite for module, suite in SUITES.items() if entry.startswith(module + ".")), None)


def check_task(task: str, source: str = "task") -> None:
    """Refuse an id gymnasium does not know, one without an explicit version, one outside SUITES, and one
    whose spaces the MLP policies cannot take (image observations, or actions neither discrete nor a box)."""
    if not VERSION.search(task):
        raise ConfigError(f"{source}: task id {show(task)} has no version suffix (e.g. 'Hopper-v5')")
    if task not in gym.registry:
        raise ConfigError(f"{source}: unknown task id {show(task)} (not registered in gymnasium {gym.__version__})")
    suite = task_suite(task)
    if suite is None:
        raise ConfigError(f"{source}: task {show(task)} is not a task this project trains; it trains {EXAMPLES} "
                          "and Atari games ('ALE/<Game>-v5')")
    if suite != "MuJoCo":  # MuJoCo's tasks are all continuous control with vector observations
        obs, act = task_spaces(task, source)
        if len(obs.shape) != 1:
            raise ConfigError(f"{source}: task {show(task)} has observations of shape {obs.shape}; outside Atari this "
                              "project trains vector observations only (an MLP policy)")
        if not (isinstance(act, gym.spaces.Discrete) and act.start == 0
                or isinstance(act, gym.spaces.Box) and len(act.shape) == 1):
            raise ConfigError(f"{source}: task {show(task)} has actions {act}; the policies take a discrete set "
                              "numbered from 0 (categorical) or a vector of reals (Gaussian)")


@functools.lru_cache(maxsize=None)
def _spaces(task: str):
    env = gym.make(task, disable_env_checker=True)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def task_spaces(task: str, source: str = "task") -> tuple[gym.Space, gym.Space]:
    """(observation space, action space) of a registered task, made once per process; a suite whose extra
    is not installed (Box2D) is one ConfigError naming what to install."""
    try:
        return _spaces(task)
    except gym.error.DependencyNotInstalled as err:
        extra = {"Box2D": "box2d", "classic control": "classic-control"}.get(task_suite(task), "all")
        missing = str(err).split(" is not installed")[0].split()[-1] if " is not installed" in str(err) else "a package"
        raise ConfigError(f"{source}: task {show(task)} needs gymnasium's {extra} extra ({missing} is not installed); "
                          f"install it with: pip install 'gymnasium[{extra}]'") from None


def discrete_actions(task: str) -> bool:
    """True for a task whose actions are a discrete set (CartPole-v1, Acrobot-v1, LunarLander-v3)."""
    return task_suite(task) not in (None, "MuJoCo") and isinstance(task_spaces(task)[1], gym.spaces.Discrete)


def make_lockstep(task: str, seeds: list[int]):
    """The group's environments: batched for the seven MuJoCo v5 tasks, gymnasium's own otherwise."""
    return BatchedMujocoEnvs(task, seeds) if supported(task) else LockstepEnvs(task, seeds)


def env_record(task: str, config) -> dict:
    return {"id": task, "made_with": "gymnasium.make(id, disable_env_checker=True)",
            "time_limit_handling": config.time_limit, "action_clip": config.action_clip}


def seconds_per_step(task: str, runs: int, speeds: dict) -> float:
    """The simulator's measured steps/s (pipeline config; unknown tasks count as the slowest), ~3x for learning."""
    return 3 * runs / speeds.get(task, min(speeds.values(), default=10_000))


FAMILY = EnvFamily(
    name="gymnasium", summary=f"{EXAMPLES}; the seven MuJoCo v5 tasks stepped as one batch",
    owns=lambda task: True,  # every id no other family owns: check_task says why it is refused
    check=check_task,
    make=lambda task, seeds, config: make_lockstep(task, seeds),  # looked up at each call: tests replace it
    observation="vector", discrete=discrete_actions, record=env_record, version=task_version,
    packages=("gymnasium", "mujoco", "box2d"), seconds_per_step=seconds_per_step,
    # docs/performance.md: 1.0 ms per step for a run alone, 0.39 ms per run and step in a group of 33
    limit_seconds_per_step=lambda runs: 0.63e-3 + 0.37e-3 * runs)
