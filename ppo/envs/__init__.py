"""Environment families, each declared by its module's ``FAMILY`` (ppo/envs/family.py): Atari under a protocol,
and gymnasium's vector-observation tasks (the seven MuJoCo v5 tasks batched). Adding one is its module and its
entry in FAMILIES."""
from __future__ import annotations

from . import atari, gym
from .family import EnvFamily

FAMILIES: tuple[EnvFamily, ...] = (atari.FAMILY, gym.FAMILY)  # the first that owns a task is its family


def family_of(task: str) -> EnvFamily:
    """The family a task id belongs to (gymnasium's, the last, takes every id: its check refuses the unknown)."""
    return next(family for family in FAMILIES if family.owns(task))
