#!/usr/bin/env python
"""How often a nominal 95% interval of Table 1's mean over tasks holds the true mean, by seeds per cell: the
simulation behind analysis.stats.BOOTSTRAP_FROM; with --rho, how often the interval of Spearman's ρ between Table 1
and the paper holds the true ρ, and how the permutation test of ρ decides: the simulation behind
analysis.table1.RHO_SPREAD.

Each draw gives every task of a setting ``n`` seeds around the setting's published per-task mean with its published
per-task standard deviation (seeds 0-2 of published/table1/paper, normalised as Table 1), shaped normal, skewed
(lognormal) or bimodal (30% of runs failing far below), then computes three intervals of the mean over tasks:
rliable's percentile bootstrap stratified over tasks (analysis.stats.stratified_bootstrap_ci), the t interval
stratified over tasks (analysis.stats.stratified_t_interval) and the studentized stratified bootstrap
(analysis.stats.stratified_bootstrap_t). Prints the fraction of draws whose interval holds the true mean, and the
studentized interval's width over the t interval's in the median draw and at the 90th percentile of draws.

    .venv/bin/python scripts/interval_coverage.py --draws 500 --seeds 3 4 5 10

With --rho the truth is every published seed of Table 1 (raw scores, each (setting, task) cell's mean and standard
deviation); each draw gives every cell ``n`` seeds in a shape as above and computes ρ as the reports do
(analysis.table1.resampled_table1: the best setting per task chosen again in every resample) with three intervals
from the same resamples: the percentile interval, the basic (reverse percentile) interval and the bias-corrected
percentile interval (Efron's BC). The true ρ is that of the cells' means. Prints each interval's coverage, its median
width, how often its lower end lies above 0, how often the permutation test of analysis.table1.agreement_p finds
agreement (p < 0.05), and the mean of ρ − the true ρ; twice: against the paper's values, and against ten shuffles of
them over the settings whose true ρ is nearest 0 (how often "agreement" is found where there is none).

    .venv/bin/python scripts/interval_coverage.py --rho --draws 500 --seeds 3 5 10

With --best, how the two rules that call a setting below the best err: each setting's own 95% test against the best
setting of the same runs (Table 1's vs_best, analysis.table1.best_rule), and Holm's family-wise 5% over all 55 pairs
(analysis.table1.pairwise_differences' distinguishable_family, the pairs of the best). Two worlds of normal seeds at
every published (setting, task) cell's standard deviation: "equal", every setting's true mean on a task set to ε =
0.2's (no setting is below any other), and "published", the cells' published means. Prints how often a table calls
any setting below the best, how many it calls on average, and how often it calls ε = 0.2 below the best; for ε = 0.2 a
third rule beside them ("anchor"): Holm's test of ε = 0.2 against each of the 10 other settings (paper_checks'
anchor_vs_best since 2026-12-06, analysis.table1.anchor_below).

    .venv/bin/python scripts/interval_coverage.py --best --draws 200 --seeds 3 5 10 --resamples 2000

With --claim, how often Figure 3's claim check (analysis.figure3.claim_table, claim_outcome) finds PPO below the best
other algorithm on a task, and the claim not reproduced, where every algorithm's true mean on a task is PPO's
(each (algorithm, task) cell keeps its published standard deviation; normal seeds): the best other algorithm is
picked from the same runs, so the single Welch test against it (diff_ci_high below 0) errs more often than 2.5%.
Beside it, the rule claim_table applies since 2026-11-30: Holm's test of PPO against each other algorithm.

    .venv/bin/python scripts/interval_coverage.py --claim --draws 1000 --seeds 3 5 10

Its result on 2026-11-30 (Intel Xeon; Figure 3's spreads as published that morning; ±0.007 on tasks, ±0.007 on
figures at 1,000 draws), the fraction of tasks with PPO below and of figures with the claim not reproduced:
    seeds  task below, best other  not reproduced  task below, Holm over the others  not reproduced, Holm
        3                   0.051           0.048                             0.018                 0.004
        5                   0.056           0.048                             0.018                 0.005
       10                   0.059           0.059                             0.014                 0.003

With --per-task, Figure 3's per-task rows of PPO against one baseline (analysis.seeds_needed.PER_TASK_RULE): where the
two are equal on all 7 tasks (normal seeds, the baseline's standard deviation 1 or 5 times PPO's), how often a row
calls them apart on some task by single Welch tests at 95% and by Holm's test over the tasks.

    .venv/bin/python scripts/interval_coverage.py --per-task --draws 2000 --seeds 3 5 10

Its result on 2026-12-06 (Intel Xeon; ±0.01 at 2,000 draws): single tests 0.215-0.323 of rows, Holm 0.025-0.071 (Welch's
test itself errs above its level at few seeds where one side's spread is 5 times the other's: 0.056-0.071 there,
0.025-0.038 at equal spreads).

Its result on 2026-12-06 (Intel Xeon; the published world: every published seed as of that morning, 7 to 8 per
cell; ±0.035 at 200 draws), fractions of tables and mean settings called below ("anchor": ε = 0.2's own Holm test):
    world      seeds  any below, each  mean, each  ε = 0.2, each  any below, family  mean, family  ε = 0.2, family  ε = 0.2, anchor
    equal          3            0.470       1.055          0.085              0.030         0.030            0.005            0.010
    equal          5            0.500       1.090          0.115              0.020         0.025            0.010            0.020
    equal         10            0.575       1.480          0.110              0.020         0.025            0.000            0.005
    published      3            1.000       3.735          0.060              0.975         1.445            0.000            0.000
    published      5            1.000       4.710          0.110              1.000         2.225            0.005            0.030
    published     10            1.000       5.465          0.110              1.000         3.320            0.000            0.010
The run of 2026-11-30 (seeds 0-5 published) gave the same to within the draws' error: equal world, each 0.455-0.610,
family 0.015-0.025, ε = 0.2 each 0.090-0.125.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from analysis.io import load_random, load_study
from analysis.scores import final_scores
from analysis.stats import stratified_bootstrap_ci, stratified_bootstrap_t, stratified_t_interval
from analysis.table1 import (agreement_p, anchor_below, load_published_table1, normalize_scores, pairwise_differences,
                             paper_rows, resampled_table1, spearman, table1)

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


def rho_intervals(rho: np.ndarray, confidence: float = 0.95) -> dict[str, tuple[float, float]]:
    """The percentile, basic and BC intervals of ρ from ``rho`` (row 0 the data's ρ, the rest its resamples)."""
    point, resamples = rho[0], rho[1:]
    alpha = (1 - confidence) / 2
    low, high = np.quantile(resamples, [alpha, 1 - alpha])
    # BC: the data's ρ sits at quantile p0 of its resamples; shift both ends by twice its normal score
    p0 = float(np.clip((resamples < point).mean() + 0.5 * (resamples == point).mean(), 0.5 / resamples.size,
                       1 - 0.5 / resamples.size))
    z0, z = scipy.stats.norm.ppf(p0), scipy.stats.norm.ppf(1 - alpha)
    bc = np.quantile(resamples, scipy.stats.norm.cdf([2 * z0 - z, 2 * z0 + z]))
    return {"percentile": (float(low), float(high)),
            "basic": (float(max(-1.0, 2 * point - high)), float(min(1.0, 2 * point - low))),
            "BC": (float(bc[0]), float(bc[1]))}


def simulated_scores(means: pd.DataFrame, sds: pd.DataFrame, n: int, shape: str,
                     rng: np.random.Generator) -> pd.DataFrame:
    """One simulated Table 1 of raw scores: ``n`` seeds of every (variant, task) cell of ``means``/``sds``."""
    variants, tasks = list(means.index), list(means.columns)
    noise = standard_draws(rng, shape, (len(variants), len(tasks) * n)).reshape(len(variants), len(tasks), n)
    values = means.to_numpy(float)[:, :, None] + sds.to_numpy(float)[:, :, None] * noise
    return pd.DataFrame({"variant": np.repeat(variants, len(tasks) * n),
                         "task": np.tile(np.repeat(tasks, n), len(variants)),
                         "seed": np.tile(np.arange(n), len(variants) * len(tasks)), "score": values.ravel()})


def rho_coverage(means: pd.DataFrame, sds: pd.DataFrame, random: pd.Series, worlds: list[np.ndarray], n: int,
                 shape: str, draws: int, resamples: int, permutations: int, rng: np.random.Generator) -> dict:
    """Over ``draws`` simulated Table 1s of ``n`` seeds per cell (``means``/``sds``: [variant, task] of raw scores),
    draw k against the paper's values ``worlds[k % len(worlds)]``: how often each interval of :func:`rho_intervals`
    holds that world's true ρ (the ρ of the cells' means), its median width, how often its lower end lies above 0,
    and how often the permutation test (analysis.table1.agreement_p) finds agreement at p < 0.05."""
    true_table = true_column(means, random)
    truths = [float(spearman(true_table, paper)) for paper in worlds]
    methods = ("percentile", "basic", "BC")
    held, widths, above = ({m: [] for m in methods} for _ in range(3))
    points, agreed = [], []
    for k in range(draws):
        paper, truth = worlds[k % len(worlds)], truths[k % len(worlds)]
        table = resampled_table1(simulated_scores(means, sds, n, shape, rng), random, resamples, seed=k)[1]
        rho = spearman(table, paper[None])
        points.append(rho[0] - truth)
        agreed.append(agreement_p(table[0], paper, permutations, seed=k) < 0.05)
        for method, (low, high) in rho_intervals(rho).items():
            held[method].append(low <= truth <= high)
            widths[method].append(high - low)
            above[method].append(low > 0)
    row = {"seeds": n, "shape": shape, "true rho": float(np.mean(truths)), "rho - true": float(np.mean(points))}
    for method in methods:
        row |= {f"{method}": float(np.mean(held[method])), f"{method} width": float(np.median(widths[method])),
                f"{method} above 0": float(np.mean(above[method]))}
    return row | {"permutation p < 0.05": float(np.mean(agreed))}


def true_column(means: pd.DataFrame, random: pd.Series) -> np.ndarray:
    """Table 1's column (analysis.table1.resampled_table1's row 0) of the cells' true means, in ``means``' order."""
    cells = pd.DataFrame([{"variant": v, "task": t, "seed": 0, "score": means.loc[v, t]}
                          for v in means.index for t in means.columns])
    variants, table = resampled_table1(cells, random, 0)
    return pd.Series(table[0], index=variants).reindex(means.index).to_numpy(float)


def rho_main(args) -> int:
    """The --rho simulation: the truth is every published seed of Table 1; the worlds are the paper's values and
    ten shuffles of them whose true ρ is nearest 0."""
    episodes, _, manifests = load_study(ROOT / "published/table1/paper/runs")
    scores = final_scores(episodes)
    random = load_random(sorted((ROOT / "published/random").glob("*-v5.parquet")))
    t1 = table1(scores, random, paper_rows(manifests), load_published_table1(ROOT / "reference/ppo2017_table1.csv"),
                n_resamples=200)
    cells = scores.groupby(["variant", "task"])["score"]
    means, sds = cells.mean().unstack(), cells.std().unstack()
    paper = t1.set_index("variant")["published"].reindex(means.index).to_numpy(float)
    if np.isnan(paper).any():
        raise SystemExit("every Table 1 setting needs the paper's value for the --rho simulation")
    rng = np.random.default_rng(0)
    true_table = true_column(means, random)
    shuffles = sorted((rng.permutation(paper) for _ in range(2000)), key=lambda v: abs(float(spearman(true_table, v))))
    rows = []
    for against, worlds in (("paper", [paper]), ("shuffled, true ρ near 0", shuffles[:10])):
        for n in args.seeds:
            for shape in SHAPES:
                rows.append({"against": against} | rho_coverage(means, sds, random, worlds, n, shape, args.draws,
                                                                args.resamples, args.permutations, rng))
                print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def below_the_best(scores: pd.DataFrame, random: pd.Series, resamples: int, seed: int) -> tuple[set, set, set]:
    """The settings a Table 1 of ``scores`` calls below its best: by each setting's own test against the best (vs_best),
    by Holm's family-wise test over all pairs (the pairs of the best that are distinguishable_family), and ε = 0.2
    alone by Holm's test of it against each other setting (paper_checks' anchor_vs_best, analysis.table1.anchor_below).
    """
    scores = scores.assign(variant_label=scores["variant"], status="completed",
                           run_id=scores["task"] + "/" + scores["variant"] + "/seed" + scores["seed"].astype(str))
    t1 = table1(scores, random, n_resamples=resamples, seed=seed)
    best = t1["variant"].iloc[0]
    pairs = pairwise_differences(scores, random, n_resamples=resamples, seed=seed)
    family = pairs[pairs["distinguishable_family"] & (pairs["higher"] == best)]
    anchor = {"clip_0.2"} if anchor_below(scores, random, n_resamples=resamples, seed=seed)[0] else set()
    return set(t1.loc[t1["vs_best"] == "below", "variant"]), set(family["lower"]), anchor


def best_main(args) -> int:
    """The --best simulation: the false and true "below the best" of each rule in the equal and the published world."""
    scores = final_scores(load_study(ROOT / "published/table1/paper/runs")[0])
    random = load_random(sorted((ROOT / "published/random").glob("*-v5.parquet")))
    cells = scores.groupby(["variant", "task"])["score"]
    means, sds = cells.mean().unstack(), cells.std().unstack()
    equal = means.copy()
    equal.loc[:, :] = means.loc["clip_0.2"].to_numpy()[None, :]
    rng = np.random.default_rng(0)
    rows = []
    for world, truth in (("equal", equal), ("published", means)):
        for n in args.seeds:
            found = {"each": [], "family": [], "anchor": []}
            for k in range(args.draws):
                sets = below_the_best(simulated_scores(truth, sds, n, "normal", rng), random, args.resamples, k)
                for rule, below in zip(found, sets):
                    found[rule].append(below)
            row = {"world": world, "seeds": n}
            for rule, sets in found.items():
                if rule != "anchor":
                    row |= {f"any below, {rule}": np.mean([bool(x) for x in sets]),
                            f"mean below, {rule}": np.mean([len(x) for x in sets])}
                row |= {f"ε = 0.2 below, {rule}": np.mean(["clip_0.2" in x for x in sets])}
            rows.append(row)
            print(row, flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def claim_main(args) -> int:
    """The --claim simulation: Figure 3's per-task "below the best" and claim outcome where all algorithms are equal."""
    from analysis.figure3 import claim_outcome, claim_table
    scores = pd.concat([final_scores(load_study(ROOT / f"published/{study}/paper/runs")[0]) for study in
                        ("figure3", "table1")])
    scores = scores[scores["variant"].isin(["clip_0.2", "a2c", "a2c_trust_region", "trpo", "vpg_adaptive", "cem"])]
    cells = scores.groupby(["variant", "task"])["score"]
    sds = cells.std().unstack()
    equal = sds.copy()
    equal.loc[:, :] = cells.mean().unstack().loc["clip_0.2"].to_numpy()[None, :]
    rng = np.random.default_rng(0)
    rows = []
    for n in args.seeds:
        below, below_holm, not_reproduced, not_reproduced_holm = [], [], [], []
        for _ in range(args.draws):
            claim = claim_table(simulated_scores(equal, sds, n, "normal", rng), n_resamples=10)
            single = claim["diff_ci_high"] < 0  # the single Welch test against the best other, as before 2026-11-30
            below.append(single.mean())
            not_reproduced.append(single.sum() > 1)  # claim_outcome's "below the best on two tasks or more"
            below_holm.append((claim["verdict"] == "below the best").mean())
            not_reproduced_holm.append(claim_outcome(claim) == "not reproduced")
        rows.append({"seeds": n, "task below, best other": np.mean(below), "not reproduced": np.mean(not_reproduced),
                     "task below, Holm over the others": np.mean(below_holm),
                     "not reproduced, Holm": np.mean(not_reproduced_holm)})
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def per_task_main(args) -> int:
    """The --per-task simulation: how often PPO against one baseline is called apart on some task of 7 where the two
    are equal on every task, by single Welch tests and by Holm's over the tasks (analysis.seeds_needed.PER_TASK_RULE)."""
    from analysis.stats import holm, stratified_difference_test
    rng = np.random.default_rng(0)
    rows = []
    for n in args.seeds:
        for ratio in (1.0, 5.0):
            p = np.array([[stratified_difference_test([rng.normal(0, 1, n)], [rng.normal(0, ratio, n)])[1]
                           for _ in range(7)] for _ in range(args.draws)])
            rows.append({"seeds": n, "sd ratio": ratio, "any task, single tests": (p < 0.05).any(axis=1).mean(),
                         "any task, Holm over the tasks": np.mean([holm(row).any() for row in p])})
            print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5, 10])
    parser.add_argument("--variants", nargs="+", default=["clip_0.1", "no_clip", "kl_fixed_0.3"])
    parser.add_argument("--rho", action="store_true", help="the coverage of Spearman's ρ's interval instead")
    parser.add_argument("--permutations", type=int, default=10_000, help="--rho: the permutation test's draws")
    parser.add_argument("--best", action="store_true", help="how the rules that call a setting below the best err")
    parser.add_argument("--claim", action="store_true", help="how Figure 3's claim check errs where all are equal")
    parser.add_argument("--per-task", action="store_true",
                        help="how Figure 3's per-task rows of PPO against one baseline err where the two are equal")
    args = parser.parse_args(argv)
    if args.rho:
        return rho_main(args)
    if args.best:
        return best_main(args)
    if args.claim:
        return claim_main(args)
    if args.per_task:
        return per_task_main(args)
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
