"""The algorithms a group can train: every module here that declares ``SPEC`` (ppo/config/registry.py), and
the code they share (``SHARED``: the rollout, GAE, the surrogate objectives, schedules, the actor-critic base).

Importing this package registers every algorithm in ppo.config.registry; the package ``ppo`` does so first,
so that a config is always validated against all of them. The driver (ppo/training/driver.py) owns seeds,
environments, episode records, divergence, checkpoints and files; an algorithm owns its networks, optimizers
and update (the :class:`~ppo.config.registry.Algorithm` protocol).
"""
from __future__ import annotations

import importlib
import pkgutil

from ..config.registry import AlgorithmSpec, register

SHARED = {"base", "rollout", "gae", "objective", "schedule"}  # no SPEC

for _module in pkgutil.iter_modules(__path__):
    if _module.name in SHARED:
        continue
    _spec = getattr(importlib.import_module(f"{__name__}.{_module.name}"), "SPEC", None)
    if not isinstance(_spec, AlgorithmSpec) or _spec.name != _module.name:
        raise ImportError(f"ppo/algorithms/{_module.name}.py must end with SPEC = AlgorithmSpec(name="
                          f"{_module.name!r}, ...)")
    register(_spec)
