#!/usr/bin/env python
"""glibc's malloc settings against its defaults for one training run, measured side by side in one invocation.

    python benchmarks/malloc_env.py --task ALE/Breakout-v5 --variant atari_ppo --steps 8192 --repeats 5

glibc reads its MALLOC_* variables when a process starts, so each measure is a fresh process
(benchmarks/throughput.py's ours_steps_per_second: one run, one thread), the settings interleaved within each repeat.
The Atari update allocates tensors of 29 MB (a minibatch's frames as float) to 115 MB (the full batch's) many times an
iteration; by default glibc hands out blocks that large with mmap and gives them back with munmap, so every
allocation faults its pages in afresh. The settings below keep them in the heap instead. Prints per setting the
median steps/s over the whole call and at steady state (the last iteration), its ratio to the defaults (median of the
paired ratios), and whether the run's records are identical to the defaults' (an allocator must not move a float).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

GIB, MIB = 1 << 30, 1 << 20
SETTINGS = {
    "glibc defaults": {},
    # mmap only above 32 MiB (glibc's ceiling for this threshold on 64-bit); freed heap kept up to 4 GiB
    "mmap above 32 MiB, trim above 4 GiB": {"MALLOC_MMAP_THRESHOLD_": str(32 * MIB), "MALLOC_TRIM_THRESHOLD_": str(4 * GIB)},
    # no mmap at all: every block from the heap, which is kept (the grid's jobs: a few hundred MB each)
    "no mmap, trim above 4 GiB": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(4 * GIB)},
}


def child(task: str, variant: str, steps: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch

    from throughput import ours_steps_per_second

    torch.set_num_threads(1)
    print(json.dumps(ours_steps_per_second(task, 1, steps, variant)))


def measure(task: str, variant: str, steps: int, env: dict) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, __file__, "--child", "--task", task, "--variant", variant,
                          "--steps", str(steps)], env={**clean, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="ALE/Breakout-v5")
    p.add_argument("--variant", default="atari_ppo")
    p.add_argument("--steps", type=int, default=8192)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.task, args.variant, args.steps)
        return 0
    results: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for repeat in range(args.repeats):
        order = list(SETTINGS) if repeat % 2 == 0 else list(reversed(SETTINGS))  # neither always first
        for name in order:
            results[name].append(measure(args.task, args.variant, args.steps, SETTINGS[name]))
    base = results["glibc defaults"]
    print(f"{args.task} {args.variant}, {args.steps} agent steps, one run on one thread, {args.repeats} repeats, "
          f"processor: {cpu_name()}")
    print(f"{'setting':40s} {'steps/s':>9s} {'steady':>9s} {'÷ defaults':>11s} {'steady ÷':>9s}  records")
    for name, runs in results.items():
        ratio = statistics.median(r["sps"] / b["sps"] for r, b in zip(runs, base))
        steady = statistics.median(r["steady_sps"] / b["steady_sps"] for r, b in zip(runs, base))
        same = all(r["records"] == base[0]["records"] for r in runs)
        print(f"{name:40s} {statistics.median(r['sps'] for r in runs):9.1f} "
              f"{statistics.median(r['steady_sps'] for r in runs):9.1f} {ratio:11.3f} {steady:9.3f}  "
              f"{'identical' if same else 'DIFFER'}")
    return 0


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
