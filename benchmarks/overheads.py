#!/usr/bin/env python
"""Where a PPO iteration's time goes besides the simulator, for one group of runs, in one process.

    python benchmarks/overheads.py --task Hopper-v5 --runs 33 --repeats 3 --groups 1 2 4 8 16 33 \
        --out results/benchmarks/overheads_Hopper.csv

Measures (paper preset, torch threads = 1, median of ``--repeats``; every figure per environment step
unless its unit says otherwise):
  rollout.sim          time inside LockstepEnvs.step (MuJoCo and gymnasium's task code) in a real rollout
  rollout.rest         the rest of that same rollout: normaliser, the two networks, sampling, bookkeeping
  rollout.rest_no_sim  the same rollout code with the simulator replaced by a stub that returns at once:
                       what the rest costs when MuJoCo has not just evicted the networks from the caches
  update               one PPO update (10 epochs x 32 minibatches), the rollout's batch held fixed
  network.G            forward and backward of the policy and value networks on one minibatch of 64,
                       per run, for a group of G runs (``--groups``): how far batching runs helps
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from throughput import paper_config, show_and_save  # benchmarks/throughput.py

from ppo.algorithms.ppo import PPO
from ppo.algorithms.rollout import group_context


def paper_group(task: str, runs: int) -> PPO:
    cfg = paper_config(1_000_000)
    return PPO(group_context(task, [cfg] * runs, list(range(runs))))


def rollout_split(algo: PPO) -> tuple[float, float]:
    """(seconds in envs.step, seconds in the rest) of one real rollout."""
    envs, inner, inside = algo.ctx.envs, algo.ctx.envs.step, [0.0]

    def timed_step(*args):
        start = time.perf_counter()
        out = inner(*args)
        inside[0] += time.perf_counter() - start
        return out

    envs.step = timed_step
    try:
        start = time.perf_counter()
        algo.collect()
        total = time.perf_counter() - start
    finally:
        del envs.step  # the instance attribute shadowed the method
    return inside[0], total - inside[0]


def rollout_without_sim(algo: PPO) -> float:
    """Seconds of one rollout whose environments return at once (no reward, no episode end)."""
    envs = algo.ctx.envs
    n = len(envs.obs)
    envs.step = lambda actions: (np.zeros(n), np.zeros(n, bool), np.zeros(n, bool), {}, [])
    try:
        start = time.perf_counter()
        algo.collect()
        return time.perf_counter() - start
    finally:
        del envs.step


def update_seconds(algo: PPO, iteration: int) -> float:
    """One PPO iteration with the rollout replaced by an already collected batch."""
    batch = algo.collect()
    algo.collect = lambda agent=None: batch
    try:
        start = time.perf_counter()
        algo.iterate(iteration)
        return time.perf_counter() - start
    finally:
        del algo.collect


def network_seconds(task: str, runs: int, repeats: int) -> float:
    """Forward + backward of the paper's policy and value networks on one minibatch per run, per run."""
    group = paper_group(task, runs)
    group.ctx.envs.close()
    agent = group.agent
    x = torch.randn(runs, group.ctx.cfg.ppo.minibatch_size, group.ctx.envs.obs_dim)

    def step():
        policy, value = agent.evaluate(x)
        agent.params.zero_grad_()
        (policy.mean.square().sum() + value.square().sum()).backward()

    calls = max(20, 600 // runs)
    times = []
    for _ in range(repeats):
        step()
        start = time.perf_counter()
        for _ in range(calls):
            step()
        times.append((time.perf_counter() - start) / calls / runs)
    return statistics.median(times)


def measure(task: str, runs: int, repeats: int, groups: list[int]) -> list[dict]:
    algo = paper_group(task, runs)
    steps = runs * algo.batch_size  # environment steps of one rollout, all runs
    per_step = {"rollout.sim": [], "rollout.rest": [], "rollout.rest_no_sim": [], "update": []}
    for i in range(repeats):
        sim, rest = rollout_split(algo)
        per_step["rollout.sim"].append(sim / steps)
        per_step["rollout.rest"].append(rest / steps)
        per_step["rollout.rest_no_sim"].append(rollout_without_sim(algo) / steps)
        per_step["update"].append(update_seconds(algo, i) / steps)
    algo.ctx.envs.close()
    rows = [{"task": task, "measure": k, "runs": runs, "microseconds": 1e6 * statistics.median(v),
             "unit": "per env step"} for k, v in per_step.items()]
    rows += [{"task": task, "measure": f"network.{g}", "runs": g,
              "unit": f"per run and minibatch of {algo.ctx.cfg.ppo.minibatch_size}",
              "microseconds": 1e6 * network_seconds(task, g, repeats)} for g in groups]
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", "--tasks", dest="tasks", nargs="+", default=["Hopper-v5"])
    p.add_argument("--runs", type=int, default=33, help="runs in the group (Table 1: 33 per task)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4, 8, 16, 33])
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    table = pd.DataFrame([row for task in args.tasks for row in measure(task, args.runs, args.repeats, args.groups)])
    table["microseconds"] = table["microseconds"].round(1)
    show_and_save(table, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
