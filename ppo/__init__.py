"""PPO and its baselines, in layers that import only those below them:

    ppo.config.run_config     run configs, settings, experiment files, protocols, schema, the algorithm registry (no torch code)
    ppo.nn         networks, distributions, optimizers and normalisers of a group of runs
    ppo.envs.gym       environment families: gymnasium tasks, batched MuJoCo, Atari
    ppo.algorithms the rollout, GAE, objectives and one module per algorithm
    ppo.training   the driver (a group of runs as a function of configs and seeds), records, layout, verify
    ppo.pipeline   studies, jobs, publishing, carrying, tracking, progress (what the Snakemake workflow calls)
    ppo.rlhf       the language-model study's library

Importing the package registers every algorithm (ppo.algorithms), so that any config is validated against all.
"""
from . import algorithms  # noqa: F401  (registers each algorithm's SPEC in ppo.config.registry)
