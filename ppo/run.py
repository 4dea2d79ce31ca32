"""Train one group of a study:  python -m ppo.run --study table1 --scale reduced --group Hopper-0 --out results/table1/reduced/runs

The group is looked up in the study (ppo.study), so the command line carries names, not settings.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from .config import ConfigError
from .study import load_study
from .train import RunSpec, train_group


def run_dir(out: Path, run) -> Path:
    return out / run.task / run.variant.name / f"seed{run.seed}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--study", required=True)
    p.add_argument("--scale", required=True)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--group-size", type=int, default=0)
    p.add_argument("--group", required=True, help="group id from the study's plan, e.g. Hopper-0")
    p.add_argument("--out", required=True, type=Path, help="runs directory")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        study = load_study(args.study, args.scale, args.seeds)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    groups = {g.group_id: g for g in study.groups(args.group_size)}
    if args.group not in groups:
        print(f"error: no group {args.group!r} in study {args.study} ({sorted(groups)})", file=sys.stderr)
        return 2
    specs = [
        RunSpec(run.run_id, run.task, run.variant.config, run.seed, run_dir(args.out, run), meta={
            "study": study.name, "scale": study.scale, "scale_label": study.label, "reduced": study.reduced,
            "variant": run.variant.name, "variant_label": run.variant.label, "paper_row": run.variant.paper_row,
            "preset": run.variant.preset.name, "overrides": run.variant.overrides,
            "config_digest": run.config_digest,
        })
        for run in groups[args.group].runs
    ]
    print(f"group {args.group}: {len(specs)} runs of {specs[0].task}, {study.total_steps} steps each", flush=True)
    train_group(specs, log=lambda msg: print(msg, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
