#!/usr/bin/env python
"""Does the default run's conclusion hold from one set of seeds to another?

Trains nothing: reads a finished run of the default study with twice its seeds (``./repro --config
seeds=6`` trains seeds 3-5 beside the default's 0-2), builds Table 1 (the report's own function, with its
t intervals stratified over tasks) on each half of the seeds separately, and compares them: Spearman's ρ of
the two rankings, and for each half which settings are below the best one (the report's rule,
analysis.table1.BEST_RULE: Welch's 95% interval of the difference wholly below 0 and at least TIE_MARGIN)
and which are not distinguishable from it.

    python benchmarks/default_stability.py --runs results/classic/reduced/runs \
        --random results/random/CartPole-v1.parquet results/random/Acrobot-v1.parquet --halves 0,1,2 3,4,5
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from scipy.stats import spearmanr

from analysis.io import load_random, load_study
from analysis.scores import final_scores
from analysis.table1 import TIE_MARGIN, clearly_below, table1


def verdicts(table: pd.DataFrame) -> tuple[str, set[str]]:
    """(best setting, settings clearly below it: the report's rule, analysis.table1.clearly_below)."""
    best, _, below = clearly_below(table)
    return best, set(below)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, required=True)
    p.add_argument("--random", type=Path, nargs="+", required=True)
    p.add_argument("--halves", nargs=2, required=True, help="two comma-separated seed lists")
    p.add_argument("--n-resamples", type=int, default=10_000)
    args = p.parse_args(argv)
    episodes, _, _ = load_study(args.runs)
    scores = final_scores(episodes)
    random_scores = load_random(args.random)
    tables = []
    for half in args.halves:
        seeds = [int(s) for s in half.split(",")]
        part = scores[scores["seed"].isin(seeds)]
        missing = part.groupby(["task", "variant"]).size().pipe(lambda n: n[n != len(seeds)])
        if not missing.empty:
            raise SystemExit(f"seeds {seeds}: runs missing for {list(missing.index)[:3]}...")
        tables.append(table1(part, random_scores, n_resamples=args.n_resamples).set_index("variant"))
    a, b = tables
    common = a.index.intersection(b.index)
    rho = spearmanr(a.loc[common, "ours"], b.loc[common, "ours"]).statistic
    print(f"{'setting':<28} " + "  ".join(f"seeds {h:<7} [95% CI]      " for h in args.halves))
    for v in a.sort_values("ours", ascending=False).index:
        cells = [f"{t.loc[v, 'ours']:.2f} [{t.loc[v, 'ci_low']:.2f}, {t.loc[v, 'ci_high']:.2f}]        " for t in tables]
        print(f"{a.loc[v, 'variant_label']:<28} " + "  ".join(cells))
    print(f"Spearman's rho between the halves' rankings: {rho:.2f} (differences under {TIE_MARGIN} are ties)")
    for half, t in zip(args.halves, tables):
        best, below = verdicts(t.reset_index())
        print(f"seeds {half}: best {best}; clearly below it: {sorted(below)}")
    (best_a, below_a), (best_b, below_b) = (verdicts(t.reset_index()) for t in tables)
    print(f"clearly-below sets {'agree' if below_a == below_b else 'differ'}: "
          f"both {sorted(below_a & below_b)}, only one half {sorted(below_a ^ below_b)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
