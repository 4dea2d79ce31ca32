#!/usr/bin/env python
"""Build a study's Table 1 report: normalised scores, reference comparison, curves.

Usage (from the repository root, or from a Snakemake ``shell:`` rule):

    python workflow/scripts/table1_report.py --runs results/<study>/<scale>/runs \
        --random results/random/Hopper-v5.parquet results/random/Walker2d-v5.parquet \
        --reference-dir reference --out-dir results/<study>/<scale>/report \
        --budget-note "50k steps per run instead of 1M"

Writes table1.csv, table1.md, table1_per_task.csv, policy_entropy.csv/.md, per_task_<variant>.csv/.md,
curves_steps.png (every seed and the mean, by family, beside the runs of --beside-manifests: the line a check is
about), diagnostics.png (approx KL, clip fraction, entropy, explained variance over training), rank_agreement.json,
sb3_comparison.csv/.md and sb3_curves.png (the anchor beside published/sb3_reference, with --sb3-dir),
seeds_needed.csv/.md (each conclusion of the table from seeds 0-2 up to the seeds every cell has, and the number of
seeds from which it stops changing: analysis.seeds_needed) into
--out-dir (ppo/pipeline/reports.py declares them), and the aggregate statistics of Agarwal et al. 2021 on the same
normalised scores: aggregates.csv/.md (IQM, median, mean, optimality gap per variant),
probability_of_improvement.csv/.md (each variant vs the --variant anchor), aggregate_intervals.png (both as
interval estimates), performance_profile.png and sample_efficiency.png. Every interval uses --n-resamples and
--seed, so the report is reproducible. No wall-clock curves: the settings of a task train in one process and share
its clock, so return against wall time is the step curve again (Figure 3's report has the throughput).
The differences from the paper listed in the markdown files are derived from the runs
and reference/ppo2017_hyperparameters.csv, plus every --budget-note given.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.aggregate import (aggregate_metrics, default_taus, improvement_vs_anchor, interval_method,
                                performance_profile, plot_interval_estimates, plot_performance_profile, tau_scale)
from analysis.curves import (CURVES_TITLE, SB3_STYLE, beside_runs, beside_style, identical_tasks, plot_curves,
                             plot_diagnostics, plot_sample_efficiency, resample_runs, sample_efficiency,
                             update_curves)
from analysis.io import load_scored_study, load_study, report_main, report_parser
from analysis.protocol import NO_PAPER_NUMBERS, difference_notes, outside_paper
from analysis.references import (SB3_VARIANT, load_references, load_sb3_runs, load_sb3_scores, per_task_reference,
                                 sb3_difference)
from analysis.report_tables import write_table
from analysis.seeds import seed_counts
from analysis.stats import T_METHOD
from analysis.seeds_needed import ladder_gap, table1_needed, write_needed
from analysis.style import draw_message, save
from analysis.table1 import (best_rule, final_entropy, load_published_table1, normalize_scores, paper_checks,
                             paper_rows, per_task_table, rank_agreement, table1)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options; see the module docstring for an example."""
    p = report_parser("table1", __doc__.split("\n\n")[0], "folder with ppo2017_table1.csv etc.",
                      "anchor variant: per-task reference table and probability of improvement")
    p.add_argument("--beside-manifests", nargs="*", type=Path, default=[],
                   help="runs of another study the figures draw beside this one's (their manifest.json files): the "
                        "line a check is about, e.g. Table 1's ε = 0.2 beside its v4 or bootstrapping runs")
    return p.parse_args(argv)


def _json_number(value: float) -> float | None:
    """JSON has no NaN: write null instead."""
    return None if value is None or math.isnan(value) else value


AGGREGATE_NOTE = (
    "Aggregates: the paper reports only the mean. IQM (25% trimmed mean of all runs), median "
    "(of the per-task mean scores), optimality gap (mean shortfall below the best setting, "
    "gamma = 1) and probability of improvement (Mann-Whitney, ties 1/2, averaged over tasks) "
    "follow Agarwal et al. 2021 as rliable defines them."
)


def write_aggregates(
    normalized: pd.DataFrame,
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    notes: Sequence[str],
    args: argparse.Namespace,
    out: Path,
) -> dict[str, Path]:
    """The rliable-style statistics: two tables (CSV + markdown) and two figures."""
    notes = [*notes, AGGREGATE_NOTE]
    written: dict[str, Path] = {}
    # the mean's interval is Table 1's (t, stratified over tasks); IQM, median and optimality gap keep rliable's
    # stratified bootstrap
    counts = seed_counts(normalized)
    aggregates = aggregate_metrics(normalized, args.n_resamples, seed=args.seed, mean_interval=counts.method)
    mean_method = "t interval" if counts.method == T_METHOD else "studentized bootstrap"
    write_table(
        aggregates, out / "aggregates.csv", out / "aggregates.md", [*notes, "Seeds: " + counts.text()],
        f"Aggregate normalised score per setting (mean: 95% {mean_method} stratified over tasks, as Table 1; IQM, "
        f"median, optimality gap: stratified percentile bootstrap, narrower than 95% at {counts.short()} per task)",
    )
    written["aggregates"] = out / "aggregates.csv"
    improvement = improvement_vs_anchor(normalized, args.variant, args.n_resamples, seed=args.seed)
    write_table(
        improvement, out / "probability_of_improvement.csv", out / "probability_of_improvement.md", notes,
        f"Probability that a setting improves on {args.variant} (95% stratified bootstrap CIs)",
    )
    written["probability_of_improvement"] = out / "probability_of_improvement.csv"
    written["aggregate_intervals.png"] = plot_interval_estimates(
        aggregates, out / "aggregate_intervals.png", improvement, args.variant,
        interval_method(args.n_resamples, counts.method, seeds=counts.short()))
    scale = tau_scale(normalized)
    profile = performance_profile(normalized, default_taus(normalized, scale=scale), args.n_resamples, seed=args.seed)
    written["performance_profile.png"] = plot_performance_profile(profile, out / "performance_profile.png", scale,
                                                                  args.variant)
    curve = sample_efficiency(
        episodes, manifests, normalized, args.curve_points, args.curve_smooth, args.n_resamples, seed=args.seed
    )
    written["sample_efficiency.png"] = plot_sample_efficiency(curve, out / "sample_efficiency.png", args.variant)
    return written


SB3_TITLE = ("{anchor} beside Stable-Baselines3 PPO with the same settings (benchmarks/mujoco_sb3_reference.py: same "
             "tasks and budget): return, mean over seeds thick, each seed thin")


def write_figures(episodes: pd.DataFrame, updates: pd.DataFrame, manifests: pd.DataFrame, random_scores: pd.Series,
                  args: argparse.Namespace, out: Path) -> dict[str, Path]:
    """The learning curves (beside the runs of --beside-manifests), the diagnostics over training, and the anchor
    beside the SB3 reference runs of the same budget."""
    budget = int(manifests["total_steps"].max())
    tasks = sorted(manifests["task"].unique())

    def curve(eps: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
        return resample_runs(eps, runs, "global_step", args.curve_points, args.curve_smooth)

    per_run = curve(episodes, manifests)
    beside = per_run.iloc[0:0]
    if args.beside_manifests:
        other_episodes, _, other = load_study(args.runs, [m.parent for m in args.beside_manifests])
        other_episodes, other = beside_runs(other_episodes, other, tasks, budget)
        beside = curve(other_episodes, other) if len(other) else beside
    styles = {v: beside_style(v.split("@")[0]) for v in beside["variant"].unique()}
    title, note = CURVES_TITLE, ""
    if len(beside):
        title += "; dashed: " + ", ".join(sorted(beside["variant_label"].unique())) + ", the line this check is about"
        same = identical_tasks(per_run[per_run["variant"] == args.variant], beside)
        if same:
            note = (f"On {', '.join(same)} the two sets of runs give the same curves, seed for seed: the dashed line "
                    "lies under the solid one.")
    written = {"curves_steps.png": plot_curves(pd.concat([per_run, beside], ignore_index=True),
                                               out / "curves_steps.png", title, anchor=args.variant,
                                               random_scores=random_scores, styles=styles, note=note)}
    written["diagnostics.png"] = plot_diagnostics(update_curves(updates), out / "diagnostics.png", args.variant)

    sb3_episodes, sb3_runs = load_sb3_runs(args.sb3_dir, budget)
    sb3_runs = sb3_runs[sb3_runs["task"].isin(tasks)]
    label = manifests.loc[manifests["variant"] == args.variant, "variant_label"]
    title = SB3_TITLE.format(anchor=label.iloc[0] if len(label) else args.variant)
    if sb3_runs.empty:
        fig = draw_message(title, f"No Stable-Baselines3 reference run of {budget:,} steps on this study's tasks "
                                  f"({', '.join(tasks)}) in {args.sb3_dir or 'no --sb3-dir'}.")
        written["sb3_curves.png"] = save(fig, out / "sb3_curves.png")
        return written
    shown = set(sb3_runs["task"])
    ours = per_run[(per_run["variant"] == args.variant) & per_run["task"].isin(shown)]
    parts = [ours, beside[beside["task"].isin(shown)], curve(sb3_episodes, sb3_runs)]
    written["sb3_curves.png"] = plot_curves(pd.concat(parts, ignore_index=True), out / "sb3_curves.png", title,
                                            anchor=args.variant, random_scores=random_scores,
                                            styles={**styles, SB3_VARIANT: SB3_STYLE})
    return written


def run_report(args: argparse.Namespace) -> dict[str, Path]:
    """Compute every table and figure and write them; returns the written paths."""
    episodes, updates, manifests, random_scores, scores = load_scored_study(
        args.runs, args.manifests, args.random, args.window)
    published = load_published_table1(args.reference_dir / "ppo2017_table1.csv")
    references = load_references(args.reference_dir / "mujoco_reference_scores.csv")
    notes = difference_notes(manifests, scores, args.random, args.reference_dir, args.window, args.budget_note)
    # The paper's Table 1 column is for its MuJoCo tasks: beside other tasks (classic control) it stays empty.
    no_paper = outside_paper(manifests["task"].unique(), args.reference_dir)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    t1 = table1(scores, random_scores, None if no_paper else paper_rows(manifests), None if no_paper else published,
                args.n_resamples, seed=args.seed)
    counts = seed_counts(scores)
    write_table(t1, out / "table1.csv", out / "table1.md",
                [*notes, "Seeds: " + counts.text(), best_rule(counts.method)], "Table 1: average normalised score",
                {"rank_ours": 1, "rank_published": 1})
    written["table1"] = out / "table1.csv"
    normalized = normalize_scores(scores, random_scores)
    per_task = per_task_table(normalized)
    per_task.to_csv(out / "table1_per_task.csv", index=False)
    written["table1_per_task"] = out / "table1_per_task.csv"

    write_table(final_entropy(updates, manifests), out / "policy_entropy.csv", out / "policy_entropy.md", notes,
                "Policy entropy at the end of training: mean over the updates of each run's last 10% of steps, "
                "mean over seeds", 2)
    written["policy_entropy"] = out / "policy_entropy.csv"

    stem = f"per_task_{args.variant.replace('_', '')}"
    refs = per_task_reference(scores, manifests, references, args.variant, args.n_resamples, args.seed)
    write_table(
        refs, out / f"{stem}.csv", out / f"{stem}.md", notes,
        f"Per-task final score of {args.variant} beside published PPO numbers", 1,
    )
    written["per_task"] = out / f"{stem}.csv"

    sb3 = load_sb3_scores(args.sb3_dir, args.window) if args.sb3_dir is not None else load_sb3_scores(out / "none")
    sb3 = sb3[sb3["total_steps"] == int(manifests["total_steps"].max())]  # the same budget only
    write_table(
        sb3_difference(scores, sb3, args.variant, args.n_resamples, seed=args.seed), out / "sb3_comparison.csv",
        out / "sb3_comparison.md", [*notes, "SB3: benchmarks/mujoco_sb3_reference.py, the paper's settings on the "
                                    "same v5 tasks and budget; the interval is Welch's over both sides' seeds"],
        f"{args.variant} beside Stable-Baselines3 PPO: ours − SB3, last-100 training episodes", 1,
    )
    written["sb3_comparison"] = out / "sb3_comparison.csv"

    written.update(write_figures(episodes, updates, manifests, random_scores, args, out))

    written.update(write_aggregates(normalized, episodes, manifests, notes, args, out))

    agreement = rank_agreement(t1)
    agreement = {k: _json_number(v) if isinstance(v, float) else v for k, v in agreement.items()}
    agreement["method"] = ("Spearman's rho of ours vs published over variants with a published value; p: one-sided "
                           "permutation test of rho > 0 (analysis.table1.agreement_p)")
    if no_paper:
        agreement["note"] = NO_PAPER_NUMBERS
    checkable = agreement["n"] >= 3 and {"no_clip", args.variant} <= set(t1["variant"])
    if checkable:
        agreement["checks"] = paper_checks(scores, random_scores, t1.set_index("variant")["published"],
                                           anchor=args.variant, seed=args.seed, interval_resamples=args.n_resamples)
    (out / "rank_agreement.json").write_text(json.dumps(agreement, indent=2) + "\n")
    written["rank_agreement"] = out / "rank_agreement.json"

    needed = ladder_gap(scores) or ("" if checkable else "No seeds-needed table: its conclusions need the paper's "
                                    "column on three settings or more, no clipping and the anchor.")
    if not needed:
        needed = table1_needed(scores, random_scores, t1.set_index("variant")["published"], args.variant,
                               n_resamples=args.n_resamples, seed=args.seed)
    write_needed(needed, scores, out / "seeds_needed.csv", out / "seeds_needed.md", notes,
                 "Table 1: how many seeds each conclusion needs")
    written["seeds_needed"] = out / "seeds_needed.csv"
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return report_main("table1_report", parse_args, run_report, argv)


if __name__ == "__main__":
    sys.exit(main())
