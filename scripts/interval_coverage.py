#!/usr/bin/env python
"""How often a nominal 95% interval of Table 1's mean over tasks holds the true mean, by seeds per cell: the
simulation behind analysis.stats.BOOTSTRAP_FROM.

Each draw gives every task of a setting ``n`` seeds around the setting's published per-task mean with its published
per-task standard deviation (seeds 0-2 of published/table1/paper, normalised as Table 1), shaped normal, skewed
(lognormal) or bimodal (30% of runs failing far below), then computes three intervals of the mean over tasks:
rliable's percentile bootstrap stratified over tasks (analysis.stats.stratified_bootstrap_ci), the t interval
stratified over tasks (analysis.stats.stratified_t_interval) and the studentized stratified bootstrap
(analysis.stats.stratified_bootstrap_t). Prints the fraction of draws whose interval holds the true mean, and the
studentized interval's width over the t interval's in the median draw and at the 90th percentile of draws.

    .venv/bin/python scripts/interval_coverage.py --draws 500 --seeds 3 4 5 10
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.io import load_random, load_study
from analysis.scores import final_scores
from analysis.stats import stratified_bootstrap_ci, stratified_bootstrap_t, stratified_t_interval
from analysis.table1 import normalize_scores

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ("normal", "skewed", "bimodal")


def standard_draws(rng: np.random.Generator, shape: str, size: tuple[int, int]) -> np.ndarray:
    """Values of mean 0 and standard deviation 1 in the given shape."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "skewed":
        z = rng.lognormal(0.0, 1.0, size)
        return (z - np.exp(0.5)) / np.sqrt((np.e - 1) * np.e)
    failed = rng.random(size) < 0.3
    return np.where(failed, -np.sqrt(0.7 / 0.3), np.sqrt(0.3 / 0.7))


def coverage(means: np.ndarray, sds: np.ndarray, n: int, shape: str, draws: int, resamples: int,
             rng: np.random.Generator) -> tuple[float, ...]:
    """(percentile, t, studentized) coverage of the mean over tasks, and the studentized interval's width over the t
    interval's: its median and 90th percentile over the draws."""
    truth = float(means.mean())
    held = np.zeros(3)
    ratios = []
    for k in range(draws):
        values = means[:, None] + sds[:, None] * standard_draws(rng, shape, (means.size, n))
        strata = list(values)
        intervals = (stratified_bootstrap_ci({str(t): v for t, v in enumerate(strata)}, n_resamples=resamples, seed=k),
                     stratified_t_interval(strata),
                     stratified_bootstrap_t(strata, [1.0] * len(strata), len(strata), resamples, seed=k))
        held += [i.low <= truth <= i.high for i in intervals]
        t_width = intervals[1].high - intervals[1].low
        if t_width > 0:  # both are 0 when no task's seeds differ
            ratios.append((intervals[2].high - intervals[2].low) / t_width)
    return (*(float(h) for h in held / draws), float(np.median(ratios)), float(np.quantile(ratios, 0.9)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5, 10])
    parser.add_argument("--variants", nargs="+", default=["clip_0.1", "no_clip", "kl_fixed_0.3"])
    args = parser.parse_args(argv)
    scores = final_scores(load_study(ROOT / "published/table1/paper/runs")[0])
    scores = scores[scores["seed"] < 3]
    random = load_random(sorted((ROOT / "published/random").glob("*-v5.parquet")))
    cells = normalize_scores(scores, random).groupby(["variant", "task"])["normalized"].agg(["mean", "std"])
    rng = np.random.default_rng(0)
    rows = []
    for variant in args.variants:
        means, sds = (cells.loc[variant][c].to_numpy(float) for c in ("mean", "std"))
        for n in args.seeds:
            for shape in SHAPES:
                pct, t, boot_t, width, width90 = coverage(means, sds, n, shape, args.draws, args.resamples, rng)
                rows.append({"variant": variant, "seeds": n, "shape": shape, "percentile": pct, "t": t,
                             "bootstrap-t": boot_t, "width ratio": width, "width ratio, 90th": width90})
                print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
