#!/usr/bin/env python
"""Training throughput beside the raw simulator and Stable-Baselines3, measured in one invocation.

    python benchmarks/throughput.py --task Hopper-v5 --groups 1 11 33 --steps 8192 --repeats 3 \
        --sb3 --out results/benchmarks/throughput_Hopper-v5.csv
    python benchmarks/throughput.py --task Hopper-v5 --groups 1 --variants clip_0.2 a2c trpo cem
    python benchmarks/throughput.py --task ALE/Breakout-v5 --groups 1 --steps 8192 --variants atari_ppo atari_a2c


For one task it measures, each `--repeats` times (median reported):
  raw      gymnasium env stepped with presampled random actions (same construction as training; for an
           Atari task the 8 environments of ppo.atari.AtariLockstepEnvs under the paper2017 protocol)
  ours-N   PPO paper preset, a group of N runs in one process, each run `--steps` env steps
           (with --variants: each variant file's algorithm and settings, e.g. `trpo-N`, side by side)
  sb3      Stable-Baselines3 PPO with the paper's hyperparameters (optional: pip install '.[bench]')
All on one core (torch threads = 1). Steps/s counts environment steps summed over the group's runs.
Ratios: ours/raw (how close training gets to pure simulation) and ours/sb3.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import torch

from ppo.atari import AtariLockstepEnvs, is_atari, load_protocol
from ppo.config import build_config, load_preset, load_variant
from ppo.train import RunSpec, train_group


def raw_steps_per_second(task: str, steps: int) -> float:
    if is_atari(task):
        return raw_atari_steps_per_second(task, steps)
    env = gym.make(task, disable_env_checker=True)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def raw_atari_steps_per_second(task: str, steps: int, num_envs: int = 8) -> float:
    """Agent steps/s (4 frames each) of the lock-step environments the Atari runs train on."""
    envs = AtariLockstepEnvs(task, list(range(num_envs)), load_protocol("paper2017"))
    actions = np.random.default_rng(0).integers(envs.num_actions, size=(steps // num_envs, num_envs))
    start = time.perf_counter()
    for row in actions:
        envs.step(row)
    elapsed = time.perf_counter() - start
    envs.close()
    return actions.size / elapsed


def ours_steps_per_second(task: str, n_runs: int, steps: int, variant: str | None = None) -> float:
    if variant is None:
        preset = load_preset("ppo_mujoco_paper")
        cfg = build_config({**preset.config, "total_steps": steps}, "benchmark")
    else:
        cfg = load_variant(variant, total_steps=steps).config
    specs = [RunSpec(f"bench{i}", task, cfg, i) for i in range(n_runs)]
    start = time.perf_counter()
    train_group(specs, log=lambda _: None)
    return n_runs * steps / (time.perf_counter() - start)


def sb3_steps_per_second(task: str, steps: int) -> float:
    from stable_baselines3 import PPO  # optional dependency

    env = gym.make(task)
    model = PPO("MlpPolicy", env, n_steps=2048, batch_size=64, n_epochs=10, learning_rate=3e-4, gamma=0.99,
                gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, vf_coef=1.0, max_grad_norm=1e9,
                policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": torch.nn.Tanh},
                device="cpu", seed=0, verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return steps / (time.perf_counter() - start)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Hopper-v5")
    p.add_argument("--groups", type=int, nargs="+", default=[1, 11, 33])
    p.add_argument("--steps", type=int, default=8192, help="env steps per run (multiple of 2048)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--variants", nargs="+", default=None,
                   help="experiments/variants files to measure instead of the PPO preset (any algorithm)")
    p.add_argument("--sb3", action="store_true", help="also measure Stable-Baselines3 PPO")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)

    measures = {"raw": lambda: raw_steps_per_second(args.task, max(args.steps, 20_000))}
    for n in args.groups:
        for variant in args.variants or [None]:
            name = f"{variant or 'ours'}-{n}"
            measures[name] = lambda n=n, v=variant: ours_steps_per_second(args.task, n, args.steps, v)
    if args.sb3:
        measures["sb3"] = lambda: sb3_steps_per_second(args.task, args.steps)
    samples: dict[str, list[float]] = {k: [] for k in measures}
    for _ in range(args.repeats):  # interleaved, so drift in machine load hits every measure alike
        for name, measure in measures.items():
            samples[name].append(measure())

    raw = statistics.median(samples["raw"])
    sb3 = statistics.median(samples["sb3"]) if "sb3" in samples else np.nan
    rows = []
    for name, values in samples.items():
        med = statistics.median(values)
        rows.append({"task": args.task, "measure": name, "steps_per_s": round(med),
                     "min": round(min(values)), "max": round(max(values)), "repeats": len(values),
                     "ratio_vs_raw": round(med / raw, 3), "ratio_vs_sb3": round(med / sb3, 2) if sb3 == sb3 else None,
                     "torch_threads": 1, "per_core": True})
    df = pd.DataFrame(rows)
    print(df.to_string(index=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
