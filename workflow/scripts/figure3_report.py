#!/usr/bin/env python
"""Build the Figure 3 report: PPO (clipping, ε = 0.2) beside the paper's baselines on the MuJoCo tasks.

Usage (from the repository root, or from a Snakemake ``shell:`` rule):

    python workflow/scripts/figure3_report.py --runs results/figure3/<scale>/runs \
        --random results/random/Hopper-v5.parquet results/random/Walker2d-v5.parquet \
        --reference-dir reference --out-dir results/figure3/<scale>/report \
        --budget-note "REDUCED BUDGET: 60k steps per run"

Writes into --out-dir:
  figure3_curves.png            learning curves, one panel per task, every seed and the mean per algorithm;
  figure3_final_scores.csv/.md  final score (mean of the last 100 training episodes) per task and
                                algorithm, mean over seeds with a 95% t interval, beside every
                                published row of that algorithm and task (one row per pair);
  figure3_aggregate.csv/.md     normalised score per algorithm (Table 1's normalisation; best = the
                                best algorithm per task), mean with a t interval stratified over tasks,
                                each algorithm against PPO by Welch's interval, IQM with a stratified
                                bootstrap interval;
  figure3_intervals.png         the same as interval estimates (Agarwal et al. 2021's figure);
  figure3_claim.csv/.md         per task, PPO against the best other algorithm (Welch's interval);
  figure3_throughput.csv/.md    env steps per wall-clock second per task and algorithm, beside PPO's
                                (--variant) and as a ratio to it, with the median over tasks;
  figure3_seeds_needed.csv/.md  each conclusion (the claim, PPO against each baseline per task and over
                                the tasks) from seeds 0-2 up to the seeds every cell has, and the number of
                                seeds from which it stops changing (analysis.seeds_needed).
Every run's manifest must name its ``algorithm``; a study may hold any subset of the algorithms.
Every interval uses --n-resamples and --seed, so the report is reproducible.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.figure3 import (
    ALGORITHMS,
    CLAIM,
    CLAIM_RULE,
    PAPER_STEPS,
    UPDATE_COLUMNS,
    aggregate_table,
    best_per_task,
    budget_line,
    claim_table,
    final_score_table,
    plot_figure3,
    run_algorithms,
    throughput,
)
from analysis.aggregate import interval_method, plot_interval_estimates
from analysis.io import load_scored_study, report_main, report_parser
from analysis.references import load_references
from analysis.report_tables import write_table
from analysis.seeds import seed_counts
from analysis.seeds_needed import figure3_needed, ladder_gap, write_needed
from analysis.stats import BOOTSTRAP_T_METHOD, T_METHOD
from analysis.table1 import normalize_scores
from analysis.protocol import difference_notes, paper_values


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options; see the module docstring for an example."""
    return report_parser("figure3", __doc__.split("\n\n")[0],
                         "folder with mujoco_reference_scores.csv and ppo2017_hyperparameters.csv",
                         "the PPO variant throughput ratios divide by").parse_args(argv)


FINAL_NOTE = (
    "Reference rows: every row of reference/mujoco_reference_scores.csv for the same task whose algo starts "
    f"with the algorithm's name ({', '.join(a for a, p in ALGORITHMS.items() if p)}); "
    f"{', '.join(a for a, p in ALGORITHMS.items() if not p)} have none. "
    "ref_metric is read from each row's note alone: 'max-over-training eval' and 'single-run final-agent eval' "
    "are not comparable with our last-100 training score, and 'metric not stated' means the note does not say. "
    "Our interval: 95% Student t interval of the mean over the n_seeds seeds (n − 1 degrees of freedom)."
)
FINAL_DIGITS = {
    **{c: 1 for c in ("our_mean", "our_ci_low", "our_ci_high", "ref_mean", "ref_std")},
    "normalized_mean": 3,
}
AGGREGATE_NOTE = (
    "Normalisation as Table 1, with the figure's algorithms as the settings: per task our random policy = 0 and "
    "the algorithm with the best mean final score = 1. The best here is the best of the figure's algorithms, not "
    "of Table 1's eleven settings, so PPO's score here is not its Table 1 score (a different scale, not a "
    "different result). mean = Table 1's statistic, with Table 1's 95% interval stratified over tasks; "
    "diff_vs_anchor = the algorithm − PPO, mean over tasks of the per-task difference, its 95% interval "
    "stratified over tasks (both by the method the seeds line names: the t interval, Welch's for a difference, "
    "below 5 seeds per cell, the studentized bootstrap from 5); vs_anchor: 'above' or 'below' when that interval "
    "lies wholly on one side of 0, 'not distinguishable' when it crosses 0. IQM (25% trimmed mean of all runs), median (of per-task means) and "
    "optimality gap (mean shortfall below 1) follow Agarwal et al. 2021, with 95% percentile bootstrap intervals "
    "over runs stratified by task (narrower than 95% at 3 seeds per task). n_not_above_random: runs whose final "
    "score is not above the random policy's. An algorithm that ran fewer tasks (n_tasks) is averaged over those "
    "only."
)
THROUGHPUT_NOTE = (
    "Throughput = environment steps per wall-clock second of the training job. Runs of one group share a "
    "process and its clock, so a group's rate is the sum of its runs' steps (last global_step in "
    "updates.parquet) over the job's wall time (manifest wall_seconds; wall_source says when the last "
    "updates.parquet wall_time stood in); per task and algorithm, summed steps over summed wall time of its "
    "groups. group_sizes matters: a group steps its runs together, so larger groups run more steps per second. "
    "When Table 1 ran in the same pipeline, PPO's runs are copies of its clip 0.2 runs (manifest copied_from), "
    "and their rate is that of Table 1's groups, all its settings of the task together. "
    "ratio_to_ppo divides by PPO's rate on the same task; the median row takes the median over tasks of each "
    "column (so its ratio is not the ratio of its medians). Measured on whatever machine trained the runs."
)


METHOD_TITLES = {T_METHOD: "t interval stratified over tasks",
                 BOOTSTRAP_T_METHOD: "studentized bootstrap stratified over tasks"}


def scale_notes(normalized: pd.DataFrame) -> str:
    """One line naming each task's zero and one."""
    parts = [
        f"{r.task}: random {r.random_score:.4g}, best {r.best_variant} {r.best_score:.4g}"
        for r in best_per_task(normalized).itertuples()
    ]
    return "Scale per task (0 = random, 1 = best): " + "; ".join(parts) + "."


def run_report(args: argparse.Namespace) -> dict[str, Path]:
    """Compute every table and the figure and write them; returns the written paths."""
    episodes, updates, manifests, random_scores, scores = load_scored_study(
        args.runs, args.manifests, args.random, args.window, update_columns=UPDATE_COLUMNS)
    run_algorithms(manifests)  # every run names a known algorithm
    references = load_references(args.reference_dir / "mujoco_reference_scores.csv")
    paper = paper_values(args.reference_dir, "mujoco")
    paper_steps = float(paper["total_timesteps"]) if paper.get("total_timesteps") else PAPER_STEPS
    budget = budget_line(manifests, args.budget_note, paper_steps, paper.get("seeds_per_env", "?"))
    notes = difference_notes(manifests, scores, args.random, args.reference_dir, args.window, args.budget_note)
    if budget not in notes:
        notes = [budget, *notes]
    notes.append("Settings here are the algorithms of the paper's Figure 3; the paper shows them only as curves.")

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    written["figure3_curves.png"] = plot_figure3(
        episodes, manifests, out / "figure3_curves.png", budget, args.curve_points, args.curve_smooth, seed=args.seed,
        random_scores=random_scores, anchor=args.variant,
    )

    normalized = normalize_scores(scores, random_scores)
    final = final_score_table(scores, manifests, references, normalized, args.n_resamples, args.seed)
    write_table(
        final, out / "figure3_final_scores.csv", out / "figure3_final_scores.md", [*notes, FINAL_NOTE],
        "Figure 3: final score per task and algorithm beside published numbers", FINAL_DIGITS,
    )
    written["figure3_final_scores"] = out / "figure3_final_scores.csv"

    aggregate = aggregate_table(normalized, manifests, args.n_resamples, args.seed, anchor=args.variant)
    counts = seed_counts(scores)
    write_table(
        aggregate, out / "figure3_aggregate.csv", out / "figure3_aggregate.md",
        [*notes, AGGREGATE_NOTE, "Seeds: " + counts.text(), scale_notes(normalized)],
        f"Figure 3: normalised score per algorithm across tasks (mean: 95% {METHOD_TITLES[counts.method]})",
    )
    written["figure3_aggregate"] = out / "figure3_aggregate.csv"
    written["figure3_intervals.png"] = plot_interval_estimates(
        aggregate, out / "figure3_intervals.png", anchor=args.variant,
        method=interval_method(args.n_resamples, counts.method, improvement=False, seeds=counts.short()),
        title="Figure 3: aggregate normalised score per algorithm (random = 0, best algorithm = 1)")

    claim = claim_table(scores, args.variant, args.n_resamples, args.seed)
    if args.variant in set(scores["variant"]):
        best = int((claim["best"] == args.variant).sum())
        counts = claim["verdict"].value_counts()
        verdict = (f"{args.variant} has the best mean final score on {best} of {len(claim)} tasks; against the best "
                   f"other algorithm it is best (Welch's interval above 0) on {counts.get('best', 0)}, not "
                   f"distinguishable on {counts.get('not distinguishable', 0)} and below the best (below another "
                   f"algorithm by Holm's test over all of them) on {counts.get('below the best', 0)}.")
    else:
        verdict = f"{args.variant} has no runs here."
    write_table(claim, out / "figure3_claim.csv", out / "figure3_claim.md", [*notes, CLAIM, CLAIM_RULE, verdict],
                "Figure 3: is PPO the best algorithm on almost every task?", 2)
    written["figure3_claim"] = out / "figure3_claim.csv"

    rates = throughput(manifests, updates, args.variant)
    rate_notes = [*notes, THROUGHPUT_NOTE]
    if args.variant not in set(manifests["variant"]):
        rate_notes.append(f"PPO variant {args.variant!r} has no runs here: ratio_to_ppo is empty.")
    write_table(
        rates, out / "figure3_throughput.csv", out / "figure3_throughput.md", rate_notes,
        f"Figure 3: environment steps per second, ratio to {args.variant}", {"ratio_to_ppo": 3},
    )
    written["figure3_throughput"] = out / "figure3_throughput.csv"

    needed = ladder_gap(scores) or ("" if args.variant in set(scores["variant"]) and scores["variant"].nunique() > 1
                                    else f"No seeds-needed table: it needs {args.variant} beside another algorithm.")
    if not needed:
        needed = figure3_needed(scores, random_scores, args.variant, args.n_resamples, args.seed)
    write_needed(needed, scores, out / "figure3_seeds_needed.csv", out / "figure3_seeds_needed.md", notes,
                 "Figure 3: how many seeds each conclusion needs")
    written["figure3_seeds_needed"] = out / "figure3_seeds_needed.csv"
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return report_main("figure3_report", parse_args, run_report, argv)


if __name__ == "__main__":
    sys.exit(main())
