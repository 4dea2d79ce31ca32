#!/usr/bin/env python
"""How to step the N MuJoCo environments of a group: the ways side by side, random actions, one process.

    python benchmarks/env_stepping.py --tasks Hopper-v5 HalfCheetah-v5 --envs 33 --steps 40000 --repeats 3 \
        --out results/benchmarks/env_stepping.csv

Measures (environment steps/s on one core, median of ``--repeats``, interleaved):
  single        one gymnasium env, a plain ``env.step`` loop: the simulator alone (throughput.py's ``raw``)
  lockstep      ppo.envs.lockstep.LockstepEnvs with N envs (throughput.py's ``raw-N``): what training steps (plain loop, same-step auto-reset,
                final observations kept for time-limit bootstrapping)
  sync_vector   gymnasium.vector.SyncVectorEnv with N envs, same-step auto-reset
  envpool       EnvPool with N envs on one thread, if installed (pip install envpool). Its MuJoCo tasks are
                its own C++ ports of the gym/gymnasium definitions (same ids), not gymnasium's code: shown for
                scale only; the project keeps gymnasium's task definitions.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
from throughput import (raw_group_steps_per_second, raw_steps_per_second, show_and_save,  # benchmarks/throughput.py
                        timed_steps)


def actions_for(space: gym.spaces.Box, rows: int, n: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(space.low, space.high, size=(rows, n, space.shape[0]))


def sync_vector(task: str, n: int, steps: int) -> float:
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(task, disable_env_checker=True)] * n,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=list(range(n)))
    return timed_steps(envs, actions_for(envs.single_action_space, steps // n, n))


def envpool_steps(task: str, n: int, steps: int) -> float:
    import envpool  # optional, for scale only

    envs = envpool.make_gymnasium(task, num_envs=n, num_threads=1, batch_size=n, seed=0)
    envs.reset()
    return timed_steps(envs, actions_for(envs.action_space, steps // n, n))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=["Hopper-v5"])
    p.add_argument("--envs", type=int, default=33, help="environments of one group (33 = a Table 1 task)")
    p.add_argument("--steps", type=int, default=40_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    ways = {"single": lambda task, n, steps: raw_steps_per_second(task, steps),
            "lockstep": raw_group_steps_per_second, "sync_vector": sync_vector}
    try:
        import envpool  # noqa: F401
        ways["envpool"] = envpool_steps
    except ImportError:
        print("envpool not installed: its column is left out")
    rows = []
    for task in args.tasks:
        samples = {name: [] for name in ways}
        for _ in range(args.repeats):
            for name, way in ways.items():
                samples[name].append(way(task, args.envs, args.steps))
        base = statistics.median(samples["single"])
        for name, values in samples.items():
            med = statistics.median(values)
            rows.append({"task": task, "way": name, "envs": 1 if name == "single" else args.envs,
                         "steps_per_s": round(med), "min": round(min(values)), "max": round(max(values)),
                         "ratio_vs_single": round(med / base, 3), "repeats": args.repeats})
    show_and_save(pd.DataFrame(rows), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
