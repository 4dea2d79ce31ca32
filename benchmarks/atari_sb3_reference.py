#!/usr/bin/env python
"""Stable-Baselines3 PPO on one Atari game at the paper's Table 5 settings, as an external reference run
beside ours at the same budget (learning, not speed; throughput.py measures speed).

    python benchmarks/atari_sb3_reference.py --game Breakout --steps 1000000 --seed 0 \
        --out results/benchmarks/sb3_atari/Breakout_1M_seed0.parquet \
        --ours results/atari/breakout_1M/runs/ALE/Breakout-v5/atari_ppo/seed0

SB3 runs its own Atari stack (``make_atari_env`` + ``AtariWrapper`` + ``VecFrameStack(4)``) on
``ALE/<Game>-v5`` with frameskip 1 and no sticky actions: up to 30 no-ops, frame skip 4 with max-pooling,
84x84 grayscale, a lost life ends the learner's episode, FIRE on reset, rewards clipped to their sign, the
same 108k-frame cap. Its ``Monitor`` sits below those wrappers, so the recorded returns are raw full games,
as ours are. Hyperparameters are Table 5's, as the preset ``ppo_atari_paper`` has them: 8 actors, horizon
128, 3 epochs, minibatch 256, Adam 2.5e-4·α, clip 0.1·α, c1 = 1, c2 = 0.01, gradient-norm clip 0.5.
Differences that remain: SB3's CnnPolicy is the Nature CNN (ours defaults to Mnih et al. 2016's smaller
network; variant ``atari_ppo_nature_cnn`` is the like-for-like one), and SB3 zero-fills a new episode's frame
stack. The table printed compares the mean of the last 100 finished games at fractions of the budget.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import ale_py
import gymnasium as gym
import pandas as pd
import torch

from sb3_episodes import episode_recorder, silent  # noqa: E402 (benchmarks/ is the script's folder)

gym.register_envs(ale_py)


def train_sb3(game: str, steps: int, seed: int) -> tuple[pd.DataFrame, float]:
    """Train SB3 PPO; returns its finished games (global_step, episode_return, episode_length) and steps/s."""
    from stable_baselines3 import PPO  # optional dependency: pip install '.[bench]'
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    env = make_atari_env(f"ALE/{game}-v5", n_envs=8, seed=seed,
                         env_kwargs={"frameskip": 1, "repeat_action_probability": 0.0,
                                     "max_num_frames_per_episode": 108_000})
    env = VecFrameStack(env, n_stack=4)

    def anneal(start: float):
        return lambda progress_remaining: start * progress_remaining  # α: 1 -> 0 over the run

    episodes = episode_recorder()
    model = silent(PPO("CnnPolicy", env, n_steps=128, batch_size=256, n_epochs=3, learning_rate=anneal(2.5e-4),
                       clip_range=anneal(0.1), ent_coef=0.01, vf_coef=1.0, max_grad_norm=0.5, gamma=0.99,
                       gae_lambda=0.95, device="cpu", seed=seed, verbose=0))
    start = time.perf_counter()
    model.learn(total_timesteps=steps, callback=episodes)
    rate = model.num_timesteps / (time.perf_counter() - start)
    env.close()
    return episodes.frame(), rate


def last_100_at(episodes: pd.DataFrame, step: float) -> float:
    """Mean return of the last 100 games finished by ``step`` (the paper's score, taken part-way)."""
    return float(episodes[episodes["global_step"] <= step]["episode_return"].tail(100).mean())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="Breakout")
    p.add_argument("--steps", type=int, default=1_000_000, help="agent steps (4 frames each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="parquet of SB3's finished games (reused if present)")
    p.add_argument("--ours", type=Path, default=None, help="our run's folder, to compare at the same budget")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # one core, as our training jobs

    if args.out.exists():
        sb3 = pd.read_parquet(args.out)
        print(f"{args.out}: reused ({len(sb3)} games)")
    else:
        sb3, rate = train_sb3(args.game, args.steps, args.seed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        sb3.to_parquet(args.out)
        print(f"SB3 PPO: {rate:.0f} agent steps/s on one core, {len(sb3)} games")
    columns = {"sb3": sb3}
    if args.ours is not None:
        columns["ours"] = pd.read_parquet(args.ours / "episodes.parquet")
    fractions = [0.1, 0.25, 0.5, 0.75, 1.0]
    table = pd.DataFrame({name: [last_100_at(eps, f * args.steps) for f in fractions] for name, eps in columns.items()},
                         index=pd.Index([int(f * args.steps) for f in fractions], name="agent_steps"))
    for name, eps in columns.items():
        table.loc["mean over all games", name] = eps["episode_return"].mean()  # Table 2's first metric
    print(f"{args.game}, seed {args.seed}: mean raw game return of the last 100 games finished by each step")
    print(table.round(2).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
