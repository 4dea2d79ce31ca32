#!/usr/bin/env python
"""Gymnasium's lock-step loop, the batched MuJoCo path and MuJoCo's own floor, side by side in one process.

    python benchmarks/batched_stepping.py --tasks Hopper-v5 Walker2d-v5 InvertedDoublePendulum-v5 Swimmer-v5 \
        HalfCheetah-v5 Reacher-v5 InvertedPendulum-v5 --envs 33 --steps 33000 --repeats 3 \
        --out results/benchmarks/batched_stepping.csv

Per task, environment steps/s on one core, median of ``--repeats``, the three measures interleaved:
  lockstep  ppo.envs.LockstepEnvs: N gymnasium environments in a Python loop (what training steps today)
  batched   ppo.mujoco_batch.BatchedMujocoEnvs: the same trajectories bit for bit (tests/test_mujoco_batch.py)
  floor     mj_step(nstep=frame_skip) on N MjData with the controls set, nothing else: no observation,
            reward, time limit or reset (a fallen Hopper stays on the ground), so not the same states
All three get the same presampled random actions. Ratios are against ``lockstep`` of the same repeat set.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pandas as pd

from ppo.envs import LockstepEnvs
from ppo.mujoco_batch import BatchedMujocoEnvs
from throughput import show_and_save, timed_steps  # benchmarks/throughput.py


def random_actions(task: str, n: int, steps: int) -> np.ndarray:
    space = gym.make(task, disable_env_checker=True).action_space
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    return np.random.default_rng(0).uniform(low, high, size=(max(1, steps // n), n, space.shape[0]))


def floor_steps_per_second(task: str, actions: np.ndarray) -> float:
    """What MuJoCo alone costs for the group: set the controls, step frame_skip times."""
    env = gym.make(task, disable_env_checker=True).unwrapped
    model, skip = env.model, env.frame_skip
    datas = [mujoco.MjData(model) for _ in range(actions.shape[1])]
    for data in datas:
        mujoco.mj_resetData(model, data)
        mujoco.mj_forward(model, data)
    ctrls = [data.ctrl for data in datas]
    start = time.perf_counter()
    for row in actions:
        for ctrl, data, a in zip(ctrls, datas, row):
            ctrl[:] = a
            mujoco.mj_step(model, data, nstep=skip)
    return actions.shape[0] * actions.shape[1] / (time.perf_counter() - start)


WAYS = {
    "lockstep": lambda task, actions: timed_steps(LockstepEnvs(task, list(range(actions.shape[1]))), actions),
    "batched": lambda task, actions: timed_steps(BatchedMujocoEnvs(task, list(range(actions.shape[1]))), actions),
    "floor": floor_steps_per_second,
}


def measure_task(task: str, n: int, steps: int, repeats: int) -> list[dict]:
    actions = random_actions(task, n, steps)
    samples = {name: [] for name in WAYS}
    for _ in range(repeats):
        for name, way in WAYS.items():
            samples[name].append(way(task, actions))
    base = statistics.median(samples["lockstep"])
    return [{"task": task, "way": name, "envs": n, "steps_per_s": round(statistics.median(values)),
             "min": round(min(values)), "max": round(max(values)),
             "ratio_vs_lockstep": round(statistics.median(values) / base, 3), "repeats": repeats}
            for name, values in samples.items()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=["Hopper-v5"])
    p.add_argument("--envs", type=int, default=33, help="environments of one group (33 = a Table 1 task)")
    p.add_argument("--steps", type=int, default=33_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    rows = [row for task in args.tasks for row in measure_task(task, args.envs, args.steps, args.repeats)]
    show_and_save(pd.DataFrame(rows), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
