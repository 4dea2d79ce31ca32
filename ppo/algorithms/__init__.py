"""The algorithms a group can train: every module here that declares ``SPEC`` (ppo/algorithms/spec.py).

The driver (ppo/train.py) owns seeds, environments, episode records, divergence, checkpoints and files; an
algorithm owns its networks, optimizers and update (the :class:`~ppo.algorithms.spec.Algorithm` protocol).
"""
from __future__ import annotations

import functools
import importlib
import pkgutil

from .spec import AlgorithmSpec, Line

NOT_ALGORITHMS = {"base", "spec"}  # shared code, no SPEC


@functools.cache
def specs() -> dict[str, AlgorithmSpec]:
    """name -> spec of every algorithm, in report order. Imported on first use, not with this package:
    the algorithms' modules import ppo.config, whose validation reads these specs."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        if module.name in NOT_ALGORITHMS:
            continue
        spec = getattr(importlib.import_module(f"{__name__}.{module.name}"), "SPEC", None)
        if not isinstance(spec, AlgorithmSpec) or spec.name != module.name:
            raise ImportError(f"ppo/algorithms/{module.name}.py must end with SPEC = AlgorithmSpec(name="
                              f"{module.name!r}, ...)")
        found.append(spec)
    return {s.name: s for s in sorted(found, key=lambda s: (s.order, s.name))}


def algorithm_spec(name: str) -> AlgorithmSpec:
    try:
        return specs()[name]
    except KeyError:
        raise ValueError(f"algorithm must be one of {tuple(specs())}, got {name!r}") from None


def algorithm_class(name: str):
    """What builds the algorithm ``name`` from a GroupContext."""
    return algorithm_spec(name).build


def lines() -> dict[str, tuple[AlgorithmSpec, Line]]:
    """Every line key the records may carry (the manifest's ``algorithm``) -> its algorithm and line, in
    report order."""
    return {line.key: (spec, line) for spec in specs().values() for line in spec.lines}
