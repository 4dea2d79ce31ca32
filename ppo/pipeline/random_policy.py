"""Score of the uniformly random policy on a task, the zero point of Table 1's normalization.

The paper does not publish the random scores behind its Table 1, so the pipeline measures them:
python -m ppo.pipeline.random_policy --task Hopper-v5 --episodes 100 --seed 0 --out results/random/Hopper-v5.parquet
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd

from ..envs.gym import check_task
from ..training import records


def random_episodes(task: str, episodes: int, seed: int) -> pd.DataFrame:
    env = gym.make(task, disable_env_checker=True)
    env.action_space.seed(seed)
    rows = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        ret, length, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            ret += float(reward)
            length += 1
            done = terminated or truncated
        rows.append((ret, length))
        obs, _ = env.reset()
    env.close()
    return pd.DataFrame(rows, columns=["episode_return", "episode_length"]).astype({"episode_length": np.int64})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--task", required=True)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    check_task(args.task)
    df = random_episodes(args.task, args.episodes, args.seed)
    records.write_parquet(df, args.out)
    print(f"{args.task}: random policy mean return {df.episode_return.mean():.2f} over {len(df)} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
