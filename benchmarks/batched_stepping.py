#!/usr/bin/env python
"""Gymnasium's lock-step loop, the batched MuJoCo path and MuJoCo's own floor, side by side in one process.

    python benchmarks/batched_stepping.py --tasks Hopper-v5 Walker2d-v5 InvertedDoublePendulum-v5 Swimmer-v5 \
        HalfCheetah-v5 Reacher-v5 InvertedPendulum-v5 --envs 33 --steps 33000 --repeats 3 \
        --out results/benchmarks/batched_stepping.csv

Per task, environment steps/s on one core, median of ``--repeats``, the three measures interleaved:
  lockstep  ppo.envs.lockstep.LockstepEnvs: N gymnasium environments in a Python loop (what training steps today)
  batched   ppo.envs.mujoco.BatchedMujocoEnvs: the same trajectories bit for bit (tests/envs/test_mujoco_batch.py)
  floor     mj_step(nstep=frame_skip) on N MjData with the controls set, nothing else: no observation,
            reward, time limit or reset (a fallen Hopper stays on the ground), so not the same states
All three get the same presampled random actions. Ratios are against ``lockstep`` of the same repeat set.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import pandas as pd
from throughput import group_actions, mj_step_steps_per_second, show_and_save, timed_steps  # benchmarks/throughput.py

from ppo.envs.lockstep import LockstepEnvs
from ppo.envs.mujoco import BatchedMujocoEnvs

WAYS = {
    "lockstep": lambda task, actions: timed_steps(LockstepEnvs(task, list(range(actions.shape[1]))), actions),
    "batched": lambda task, actions: timed_steps(BatchedMujocoEnvs(task, list(range(actions.shape[1]))), actions),
    "floor": mj_step_steps_per_second,
}


def measure_task(task: str, n: int, steps: int, repeats: int) -> list[dict]:
    actions = group_actions(task, n, steps)
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
