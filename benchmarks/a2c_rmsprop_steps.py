#!/usr/bin/env python
"""How far one A2C update moves the Atari network under TensorFlow 1's RMSProp (baselines' A2C, `rmsprop_tf`)
and under torch's RMSprop (`rmsprop`), side by side from the same initial network and the same first batch.

    python benchmarks/a2c_rmsprop_steps.py --task ALE/Pong-v5 --updates 200

A measurement of numerics, not of speed. Trains `atari_a2c` (16 actors × 5 steps per update, gradients clipped to
a global norm of 0.5) once per optimizer for --updates updates, the same seed, and prints per stretch of updates the
median over updates of the mean |Δθ| per parameter divided by that update's step size, for both optimizers, and their
ratio torch ÷ TF. Where the clipped gradients are far smaller than √ε per element, TF's step is about
lr·g/√ε and torch's about lr·sign(g) (ppo.nn.optim.TFStyleRMSprop; tests/nn/test_optim.py works a case by hand).
After the first update the two runs see different batches (their policies differ): the ratio compares step sizes
along each optimizer's own trajectory, not one batch.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ppo.algorithms.rollout import group_context  # noqa: E402
from ppo.config.experiments import load_variant  # noqa: E402
from ppo.config.registry import algorithm_spec  # noqa: E402


def step_sizes(task: str, optimizer: str, updates: int, seed: int) -> list[float]:
    """Per update: mean |Δθ| over the parameters ÷ the update's learning rate."""
    cfg = load_variant("atari_a2c", total_steps=updates * 80).config
    cfg = dataclasses.replace(cfg, a2c=dataclasses.replace(cfg.a2c, optimizer=optimizer))
    ctx = group_context(task, [cfg], [seed])
    algo = algorithm_spec(cfg.algorithm).build(ctx)
    sizes = []
    for iteration in range(updates):
        before = algo.flat.detach().clone()
        algo.iterate(iteration)
        sizes.append((algo.flat.detach() - before).abs().mean().item() / algo.learning_rate(iteration))
    ctx.envs.close()
    return sizes


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="ALE/Pong-v5")
    p.add_argument("--updates", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stretch", type=int, default=50, help="updates per printed row")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    tf_style = step_sizes(args.task, "rmsprop_tf", args.updates, args.seed)
    torch_style = step_sizes(args.task, "rmsprop", args.updates, args.seed)
    print(f"{args.task}, atari_a2c, seed {args.seed}: median over updates of mean |Δθ| ÷ lr")
    print(f"{'updates':>12} {'TF-style':>10} {'torch':>10} {'torch ÷ TF':>11}")
    rows = [(0, 1)] + [(a, min(a + args.stretch, args.updates)) for a in range(1, args.updates, args.stretch)]
    for a, b in rows:
        tf_med, torch_med = statistics.median(tf_style[a:b]), statistics.median(torch_style[a:b])
        print(f"{f'{a + 1}-{b}':>12} {tf_med:10.4f} {torch_med:10.4f} {torch_med / tf_med:11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
