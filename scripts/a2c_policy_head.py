"""A2C on Atari with its policy head initialised at two scales, side by side in one process.

    python scripts/a2c_policy_head.py --task ALE/BeamRider-v5 --steps 600000 --scales 0.01 1.0 --window 100000

baselines' A2C of 2017 initialised its policy head at orthogonal gain 1; PPO's (and this suite's default) is 0.01
(docs/paper-scale.md, "A2C's policy head"). Each scale trains the `atari_a2c` variant, seed 0, for ``--steps`` agent
steps of its 10M-step schedule (the step size anneals as in the full run), with only ``policy_init_scale`` changed.
Printed per window of agent steps: the mean raw score of the episodes that ended in it, and the means over its
updates of the policy's entropy, of the KL between the policies before and after each update, and of the gradient
norm. Nothing is written.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ppo.config.experiments import load_variant  # noqa: E402
from ppo.training.driver import RunSpec, train_group  # noqa: E402


def windows(result, window: int) -> pd.DataFrame:
    """Per window of ``window`` agent steps: episodes' mean score, updates' mean entropy, KL and gradient norm."""
    ends = lambda steps: (steps - 1) // window  # noqa: E731 - window k holds steps in (k·w, (k+1)·w]
    score = result.episodes.groupby(ends(result.episodes["global_step"]))["episode_return"].mean()
    updates = result.updates.groupby(ends(result.updates["global_step"]))[["entropy", "kl", "grad_norm"]].mean()
    return updates.join(score.rename("score"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="ALE/BeamRider-v5")
    p.add_argument("--steps", type=int, default=600_000)
    p.add_argument("--scales", type=float, nargs="+", default=[0.01, 1.0])
    p.add_argument("--window", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    tables = {}
    for scale in args.scales:
        variant = load_variant("atari_a2c", policy_init_scale=scale)
        cfg = variant.config
        started = time.perf_counter()
        result = train_group([RunSpec(f"scale{scale:g}", args.task, cfg, args.seed)], log=lambda _: None,
                             max_iterations=-(-args.steps // (cfg.num_envs * cfg.horizon)))[0]
        print(f"policy_init_scale {scale:g}: {time.perf_counter() - started:.0f} s", flush=True)
        tables[scale] = windows(result, args.window)
    joined = pd.concat(tables, axis=1, names=["policy_init_scale", "measure"])
    joined.index = [f"{k * args.window / 1e6:.1f}-{(k + 1) * args.window / 1e6:.1f}M" for k in joined.index]
    print(f"{args.task}, atari_a2c seed {args.seed}; per window of {args.window:,} agent steps")
    print(joined.swaplevel(axis=1).sort_index(axis=1).to_string(float_format=lambda x: f"{x:.4g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
