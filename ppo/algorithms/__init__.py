"""The algorithms a group can train. Each is a class built from a GroupContext (ppo/rollout.py) with

    num_iterations        iterations to run (None: until every run has spent its step budget)
    iterate(i) -> stats   one iteration for every run of the group: {name: tensor or array of shape [G]}
    finite() -> [G] bool  whether each run's parameters are all finite (else it diverged)
    state_dict() / load_state_dict(state)   everything to resume bit-identically (tensors, plain data)
    run_model(g)          what model.pt keeps of run g

The driver (ppo/train.py) owns seeds, environments, episode records, divergence, checkpoints and files.
"""
from __future__ import annotations

import importlib


def algorithm_class(name: str):
    """The class for config.algorithm ``name`` (module ppo.algorithms.<name>, attribute ALGORITHM)."""
    return importlib.import_module(f"{__name__}.{name}").ALGORITHM
