#!/usr/bin/env python
"""Stable-Baselines3 PPO with the paper's MuJoCo hyperparameters on gymnasium's v5 tasks: an external
reference for the paper-scale Table 1's clip 0.2 row, trained on the same tasks and budget.

    python benchmarks/mujoco_sb3_reference.py --tasks Hopper-v5 Walker2d-v5 HalfCheetah-v5 --seeds 0 1 2 \
        --steps 1000000 --workers 2 --out-dir results/sb3_reference

Each (task, seed) trains in its own process on one core and writes ``<out-dir>/<task>/seed<k>/`` with
``episodes.parquet`` (global_step, episode_return, episode_length: the columns our runs write) and
``manifest.json`` (settings, packages, host, commit). ``python -m ppo.pipeline.publish --sb3 DIR`` publishes them.

Settings as Table 3 and our preset ``ppo_mujoco_paper`` have them: 1 actor, horizon 2048, 10 epochs,
minibatch 64, Adam 3e-4 (ε 1e-5), γ 0.99, λ 0.95, clip 0.2, no entropy bonus, separate 64-64 tanh policy
and value networks, state-independent log-std starting at 0, observations normalised by a running mean and
std and clipped to ±5 (``VecNormalize``, rewards not normalised), no gradient clipping. What SB3 does
differently and cannot be switched off: advantages normalised per minibatch (ours per batch),
orthogonal initialisation (ours normc), the observation statistics updated at every step (ours once per
batch), and a time-limit truncation bootstrapped with V(final obs) (ours treats it as terminal, like ppo1).
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SETTINGS = {"n_steps": 2048, "batch_size": 64, "n_epochs": 10, "learning_rate": 3e-4, "gamma": 0.99,
            "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5,
            "max_grad_norm": float("inf"), "normalize_advantage": True}
POLICY = {"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": "Tanh", "log_std_init": 0.0,
          "optimizer_kwargs": {"eps": 1e-5}}
OBS_CLIP = 5.0


def train(task: str, seed: int, steps: int, out_dir: Path) -> str:
    """One SB3 run; its finished episodes and a manifest go to ``out_dir``."""
    import gymnasium as gym
    import torch
    from sb3_episodes import episode_recorder, silent
    from stable_baselines3 import PPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from ppo.training import records

    torch.set_num_threads(1)
    env = VecNormalize(DummyVecEnv([lambda: Monitor(gym.make(task))]), norm_obs=True, norm_reward=False,
                       clip_obs=OBS_CLIP, gamma=SETTINGS["gamma"])
    env.seed(seed)

    policy = {**POLICY, "activation_fn": getattr(torch.nn, POLICY["activation_fn"])}
    model = silent(PPO("MlpPolicy", env, policy_kwargs=policy, device="cpu", seed=seed, verbose=0, **SETTINGS))
    episodes = episode_recorder()
    start = time.perf_counter()
    model.learn(total_timesteps=steps, callback=episodes)
    wall = time.perf_counter() - start
    folder = out_dir / task / f"seed{seed}"
    frame = episodes.frame()
    records.write_parquet(frame, folder / "episodes.parquet")
    from importlib import metadata
    records.write_json({
        "task": task, "seed": seed, "total_steps": steps, "algorithm": "stable_baselines3.PPO",
        "settings": SETTINGS, "policy_kwargs": POLICY, "vec_normalize": {"norm_obs": True, "norm_reward": False,
                                                                        "clip_obs": OBS_CLIP},
        "n_episodes": len(frame), "wall_seconds": wall, "steps_per_second": model.num_timesteps / wall,
        "packages": {**records.package_versions(), "stable-baselines3": metadata.version("stable-baselines3")},
        "git": records.git_state(), "host": records.host_info(), "script": "benchmarks/mujoco_sb3_reference.py",
    }, folder / "manifest.json")
    return f"{task} seed {seed}: {len(frame)} episodes, last 100 mean {frame['episode_return'].tail(100).mean():.1f}, " \
           f"{model.num_timesteps / wall:.0f} steps/s"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=["Hopper-v5", "Walker2d-v5", "HalfCheetah-v5"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=1, help="runs at once, one core each")
    p.add_argument("--out-dir", type=Path, default=Path("results/sb3_reference"))
    p.add_argument("--skip-in", type=Path, action="append", default=[],
                   help="leave out the runs this folder holds too (published/sb3_reference); repeatable")
    p.add_argument("--count", action="store_true", help="print how many runs are left to train, train none")
    args = p.parse_args(argv)
    done = [args.out_dir, *args.skip_in]
    jobs = [(t, s) for t in args.tasks for s in args.seeds  # finished runs are kept
            if not any((folder / t / f"seed{s}" / "manifest.json").exists() for folder in done)]
    if args.count or not jobs:
        print(len(jobs) if args.count else "every requested run has finished", flush=True)
        return 0
    with ProcessPoolExecutor(args.workers) as pool:
        for line in pool.map(train, *zip(*jobs), [args.steps] * len(jobs), [args.out_dir] * len(jobs)):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
