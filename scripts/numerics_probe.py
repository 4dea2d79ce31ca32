#!/usr/bin/env python
"""Which operation makes a run's floats depend on the processor (docs/reproducibility.md).

    .venv/bin/python scripts/numerics_probe.py            # the rollout's matrix products, summed several ways
    .venv/bin/python scripts/numerics_probe.py --mkl-cbwr # the golden runs again under MKL_CBWR=COMPATIBLE

The golden run clip_0.2 (PPO, Hopper-v5, seed 0; tests/golden/regenerate.py) ends its first episode after 39
steps with the initial policy, before any update, so its return depends only on MuJoCo, numpy and the policy's
forward pass. The probe retrains it with the forward pass's one-row matrix products (torch.baddbmm, which torch
hands to MKL) replaced by float32 sums in a known order: sequential with and without fused multiply-add (FMA),
with the bias added first or last, in 2, 4 or 8 interleaved partial sums; and the exact product rounded once.
Each first-episode return is printed beside the goldens' of every platform: a variant that reproduces a
platform's return bit for bit is how that platform's MKL sums, and shows that nothing else in the rollout
(MuJoCo, numpy, libm) differs there. With --mkl-cbwr each golden is trained under MKL's conditional
numerical reproducibility mode COMPATIBLE too, and the first cell that differs from each platform's golden shown.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
import torch  # noqa: E402

from golden import regenerate as gold  # noqa: E402

GOLDEN = gold.BY_NAME["clip_0.2"]
torch_baddbmm = torch.baddbmm


def float32_sum(kind: str):
    """baddbmm(b, x, w) for one-row x, summed in float32 in the order ``kind`` names; others as torch does."""
    def product(b, x, w, *args, **kwargs):
        if args or kwargs or x.shape[1] != 1:
            return torch_baddbmm(b, x, w, *args, **kwargs)
        X, W = x.detach().double().numpy()[:, 0], w.detach().double().numpy()
        bias = b.detach().numpy()[:, 0]
        out = np.empty((X.shape[0], 1, W.shape[2]), np.float32)
        for g in range(X.shape[0]):
            terms = X[g][:, None] * W[g]  # exact in float64: float32 × float32 has 48 significant bits
            if kind == "exact, rounded once":
                out[g, 0] = np.float32(terms.sum(0)) + bias[g]
                continue
            lanes = int(kind.split()[0]) if kind[0].isdigit() else 1
            partial = [bias[g].copy() if "bias first" in kind else np.zeros_like(bias[g]) for _ in range(lanes)]
            for k, term in enumerate(terms):
                acc = partial[k % lanes]
                # FMA: one rounding of acc + x·w; without: the product rounded to float32, then the sum
                partial[k % lanes] = (np.float32(acc + term) if "no FMA" not in kind
                                      else np.float32(acc + np.float32(term)))
            total = partial[0]
            for p in partial[1:]:
                total = np.float32(total + p)
            out[g, 0] = total if "bias first" in kind else np.float32(total + bias[g])
        return torch.from_numpy(out)
    return product


KINDS = ("sequential, no FMA", "sequential, FMA", "sequential, no FMA, bias first", "sequential, FMA, bias first",
         "2 partial sums, FMA", "4 partial sums, FMA", "8 partial sums, FMA", "exact, rounded once")


def first_return() -> float:
    return float(gold.train(GOLDEN)["episodes"]["episode_return"].iloc[0])


def golden_returns() -> dict[str, float]:
    out = {}
    for platform in gold.platforms(GOLDEN):
        rows = gold.read_rows(gold.golden_folder(GOLDEN, platform) / "episodes.csv")
        out[platform] = float(rows[1][rows[0].index("episode_return")])
    return out


def summation_orders() -> None:
    goldens = golden_returns()
    here = gold.platform_key()
    print(f"this machine: {here} ({gold.records.numerics_platform()['model_name']}); goldens: "
          + ", ".join(f"{p} {r!r}" for p, r in goldens.items()))
    rows = [("torch as installed (MKL)", first_return())]
    for kind in KINDS:
        torch.baddbmm = float32_sum(kind)
        try:
            rows.append((kind, first_return()))
        finally:
            torch.baddbmm = torch_baddbmm
    for kind, value in rows:
        same = [p for p, r in goldens.items() if r == value]
        print(f"  {kind:34s} {value!r:22s} {'= golden of ' + ', '.join(same) if same else ''}")


def under_cbwr() -> None:
    env = {**os.environ, "MKL_CBWR": "COMPATIBLE"}
    code = ("import sys, json; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/tests']; "
            "from golden import regenerate as gold; from test_golden_records import first_difference\n"
            "for g in gold.GOLDENS:\n"
            "    rows = {n: gold.canonical_rows(t) for n, t in gold.train(g).items()}\n"
            "    for p in gold.platforms(g):\n"
            "        d = [first_difference(gold.read_rows(gold.golden_folder(g, p) / f'{n}.csv'), rows[n]) for n in rows]\n"
            "        print(json.dumps([g.name, p, [x for x in d if x][:1]]), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code, str(REPO)], env=env, capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        sys.exit(done.stderr[-2000:])
    for line in done.stdout.splitlines():
        name, platform, diff = json.loads(line)
        print(f"  MKL_CBWR=COMPATIBLE {name:26s} vs {platform:24s} {'identical' if not diff else diff[0][:110]}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mkl-cbwr", action="store_true", help="also train every golden under MKL_CBWR=COMPATIBLE")
    args = p.parse_args()
    summation_orders()
    if args.mkl_cbwr:
        under_cbwr()
