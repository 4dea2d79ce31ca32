"""One variant trained with one setting at several values, side by side in one process, over the first agent steps
of its full schedule.

    python scripts/side_by_side.py --variant atari_a2c --compare network cnn_mnih2016 cnn_nature --task ALE/Pong-v5 \
        --steps 400000 --window 100000
    python scripts/side_by_side.py --variant atari_a2c --compare policy_init_scale 0.01 1.0 --task ALE/BeamRider-v5 \
        --steps 600000

Each value trains ``--variant`` (seed ``--seed``) with only ``--compare``'s field changed (a dotted field names a
nested setting: a2c.learning_rate), for ``--steps`` agent steps of its full-budget schedule (the step size anneals as
in a full run). Printed per window of agent steps: the mean raw score of the episodes that ended in it, and the means
over its updates of the policy's entropy, of the KL between the policies before and after each update (how far one
update moves the policy: the step as the policy sees it, whatever the parameters' scale), and of the gradient norm;
and each value's training time. Nothing is written. Used for the A2C policy head's scale and for the network under
A2C's SGD-like steps (docs/paper-scale.md, "A2C's policy head" and "Open: A2C").
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ppo.config.experiments import load_variant  # noqa: E402
from ppo.training.driver import RunSpec, train_group  # noqa: E402

MEASURES = ["entropy", "kl", "grad_norm"]


def setting(field: str, value: str) -> dict:
    """``a2c.learning_rate``, ``7e-4`` -> {"a2c": {"learning_rate": 7e-4}}: a value as YAML reads it (so numbers are
    numbers and names stay text), nested along the dotted field, as load_variant's overrides take it."""
    parsed = yaml.safe_load(value)
    for key in reversed(field.split(".")):
        parsed = {key: parsed}
    return parsed


def windows(episodes: pd.DataFrame, updates: pd.DataFrame, window: int) -> pd.DataFrame:
    """Per window of ``window`` agent steps (window k holds steps in (k·w, (k+1)·w]): the updates' mean entropy, KL
    and gradient norm, and the mean score of the episodes that ended in it."""
    def ends(steps):
        return (steps - 1) // window
    measured = updates.groupby(ends(updates["global_step"]))[MEASURES].mean()
    score = episodes.groupby(ends(episodes["global_step"]))["episode_return"].mean()
    return measured.join(score.rename("score"), how="outer")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", default="atari_a2c")
    p.add_argument("--compare", nargs="+", required=True, metavar=("FIELD", "VALUE"),
                   help="a run-config field and two or more values")
    p.add_argument("--task", default="ALE/BeamRider-v5")
    p.add_argument("--steps", type=int, default=600_000)
    p.add_argument("--window", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if len(args.compare) < 3:
        p.error("--compare takes a field and at least two values")
    field, values = args.compare[0], args.compare[1:]
    torch.set_num_threads(1)
    tables = {}
    for value in values:
        cfg = load_variant(args.variant, **setting(field, value)).config
        started = time.perf_counter()
        result = train_group([RunSpec(f"{field}={value}", args.task, cfg, args.seed)], log=lambda _: None,
                             max_iterations=-(-args.steps // (cfg.num_envs * cfg.horizon)))[0]
        print(f"{field} = {value}: {time.perf_counter() - started:.0f} s", flush=True)
        tables[value] = windows(result.episodes, result.updates, args.window)
    joined = pd.concat(tables, axis=1, names=[field, "measure"])
    joined.index = [f"{k * args.window:,}-{(k + 1) * args.window:,}" for k in joined.index]  # agent steps
    print(f"{args.task}, {args.variant} seed {args.seed}; per window of {args.window:,} agent steps")
    print(joined.swaplevel(axis=1).sort_index(axis=1).to_string(float_format=lambda x: f"{x:.4g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
