"""What an environment family is, declared once beside its code, as an algorithm declares its SPEC: which tasks
it owns and how it checks one, how it makes a group's lock-step environments, what the networks see, what the
learner is told of a step (its training signal), what a run records of it, the packages its numerics depend on, and what a step costs.

Each module ``ppo/envs/<family>.py`` ends with ``FAMILY = EnvFamily(...)``, and ppo/envs/__init__.py lists
them (``family_of``). The study (task checks, which networks and action spaces fit), the rollout (a group's
environments, observation handling), the driver (the manifest's environment record and version) and the
workflow (a job's expected time) read the declaration; nothing else asks which family a task is.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

RunConfig = Any  # ppo.config.run_config.RunConfig
VERSION = re.compile(r"-v(\d+)$")  # every family's task ids end in their version


class GroupEnvs(Protocol):
    """A group's environments, stepped together (actor i belongs to run i // num_envs), with exact checkpoints."""

    obs: np.ndarray  # the observations to act on, one row per actor
    discrete: bool  # integer actions [N] (``num_actions`` of them), else float actions [N, act_dim]

    def step(self, actions: np.ndarray, active: np.ndarray | None = None) -> tuple:
        """(observations, rewards, terminated, truncated, ...) after one step of every (active) actor; an
        ended episode is reset at once."""

    def state(self) -> dict:
        """Every environment's state, such that load_state resumes bit for bit."""

    def load_state(self, state: dict) -> None: ...

    def close(self) -> None: ...


def raw_signal(envs: GroupEnvs, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray) -> tuple:
    """The learner's signal of a step as the environments report it: rewards, terminations, time limits."""
    return rewards, terminated, truncated


@dataclass(frozen=True)
class EnvFamily:
    name: str
    summary: str
    owns: Callable[[str], bool]  # task id -> whether it is this family's (malformed ids too: check says why)
    check: Callable[[str, str], None]  # (task, source): a ConfigError naming the source if the task is refused
    make: Callable[[str, list[int], RunConfig], GroupEnvs]  # (task, one seed per actor, config)
    observation: Literal["vector", "pixels"]  # what the networks take (RunConfig.observation must match)
    discrete: Callable[[str], bool]  # whether the task's actions are a discrete set
    record: Callable[[str, RunConfig], dict]  # the manifest's env_protocol: how the environments were made
    version: Callable[[str], str]  # the manifest's env_version
    packages: tuple[str, ...]  # distributions whose version changes its numerics (every manifest records them)
    # A job's single-core seconds per agent step and run, expected (for the order jobs start in; speeds: the
    # pipeline config's measured simulator steps/s per task) and the slowest measured (for cluster time limits).
    seconds_per_step: Callable[[str, int, dict], float]
    limit_seconds_per_step: Callable[[int], float]
    # (envs, rewards, terminated, truncated) of a step -> the learner's: an Atari protocol clips rewards and
    # ends the value horizon at a lost life; the recorded episodes stay the environments' own (raw, whole games)
    learner_signal: Callable[..., tuple] = raw_signal


def task_version(task: str) -> str:
    match = VERSION.search(task)
    return f"v{match.group(1)}" if match else "unversioned"



def task_name(task: str) -> str:
    """'Hopper-v5' -> 'Hopper', 'ALE/Pong-v5' -> 'Pong'."""
    return VERSION.sub("", task).rsplit("/", 1)[-1]

