#!/usr/bin/env python
"""Build the details study's report: each implementation detail and tutorial mistake against the paper preset.

Usage (from the repository root, or from a Snakemake ``shell:`` rule):

    python workflow/scripts/details_report.py --runs results/details/reduced/runs \
        --random results/random/Hopper-v5.parquet ... --reference-dir reference \
        --out-dir results/details/reduced/report --variant clip_0.2 \
        --variant-files experiments/variants/clip_0.2.yaml experiments/variants/detail_lr_anneal.yaml ...

Writes into --out-dir (ppo/pipeline/reports.py declares them): details_effects.csv/.md (each variant's effect on Table 1's
normalised score against the --variant anchor over all tasks, with the probability of improvement),
details_per_task.csv/.md (the same per task), details_claims.csv/.md (each variant file's claim, its measured
effect and mechanism statistics beside the anchor's, and a verdict by the rule the table prints),
details_modern.csv/.md (the paper preset beside the modern one, per task), details_curves.png (learning curves of
the mistakes beside the anchor, every seed and the mean; every setting when the study has no mistakes) and
details_mechanisms.png (approx KL, KL and clip fraction per update, the same settings). Every interval uses --n-resamples and --seed, so the report is reproducible.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.curves import plot_curves, resample_runs
from analysis.details import (ALL_TASKS, VERDICT_RULE, budget_line, claims_table, effects, modern_table,
                              per_task_effects, plot_mechanisms, run_statistics)
from analysis.io import ReportError, load_scored_study, report_main, report_parser
from analysis.protocol import difference_notes, paper_values
from analysis.report_tables import write_table
from analysis.table1 import normalize_scores
from ppo.config.errors import ConfigError
from ppo.config.experiments import load_variant

DIGITS = {"n_tasks": 0, "p_improvement": 2, "approx_kl": 4, "approx_kl_anchor": 4, "kl": 4, "kl_anchor": 4,
          "clipfrac": 3, "clipfrac_anchor": 3, "mechanism_measured": 4, "mechanism_ci_low": 4,
          "mechanism_ci_high": 4, "minibatch_steps": 1, "paper_return": 1, "modern_return": 1}
EFFECT_NOTE = (
    "effect = mean over tasks of (the setting's mean normalised score − the anchor's), on the tasks both ran; "
    "normalised as Table 1 (per task, our random policy = 0, the study's best setting = 1); Welch's 95% interval "
    "stratified over tasks (the two sides' runs independent, each task's own variance over seeds, "
    "Welch–Satterthwaite degrees of freedom; on one task, Welch's interval of its seeds). p_improvement = P(a run "
    "of the setting scores above a run of the anchor on the same task), ties ½, averaged over tasks (Agarwal et "
    "al. 2021), with its 95% percentile bootstrap interval stratified by task (narrower than 95% at 2 or 3 seeds "
    "per task). One run per task and setting gives no interval."
)
CLAIM_NOTE = (
    "claim = the variant file's description; prediction = its claim field (ppo/config/experiments.py load_claim); effect over "
    "the claim's tasks. Mechanism statistics: each run's mean over its updates (updates.parquet), then the mean over "
    "the claim's tasks of the per-task means, the variant's beside the anchor's: approx_kl = mean over the "
    "update's minibatch steps of ((r − 1) − log r) before each step; kl = KL[π_old, π] over the whole batch after "
    "the update; clipfrac = share of samples with |r − 1| above the run's own ε; minibatch_steps (target_kl runs) = "
    "steps taken per update, early_stop_fraction = share of updates stopped before all epochs. mechanism_measured "
    "is the claimed statistic (for 'anchor': the variant's minus the anchor's) with its 95% t interval stratified "
    "over tasks (Welch's for the difference)."
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options; see the module docstring for an example."""
    p = report_parser("details", __doc__.split("\n\n")[0], "folder with ppo2017_hyperparameters.csv",
                      "the anchor: the paper preset every setting is compared with")
    p.add_argument("--modern", default="modern", help="the variant of the modern preset")
    p.add_argument("--mistakes", default="mistake_*", help="pattern of the variants drawn beside the anchor")
    return p.parse_args(argv)


def read_variants(paths: Sequence[Path]) -> dict:
    """variant name -> the loaded variant file (ppo.config.experiments.load_variant); a bad file is a ReportError."""
    variants = {}
    for path in paths:
        try:
            variants[path.stem] = load_variant(path.stem, path.resolve().parent.parent)
        except ConfigError as err:
            raise ReportError(str(err)) from None
    return variants


def run_report(args: argparse.Namespace) -> dict[str, Path]:
    """Compute every table and figure and write them; returns the written paths."""
    episodes, updates, manifests, random_scores, scores = load_scored_study(
        args.runs, args.manifests, args.random, args.window)
    if args.variant not in set(scores["variant"]):
        raise ReportError(f"the anchor {args.variant!r} has no scored run; have {sorted(scores['variant'].unique())}")
    variants = read_variants(args.variant_files)
    paper = paper_values(args.reference_dir, "mujoco")
    budget = budget_line(manifests, args.budget_note, float(paper.get("total_timesteps") or 1e6),
                         paper.get("seeds_per_env", "?"))
    notes = difference_notes(manifests, scores, args.random, args.reference_dir, args.window, args.budget_note)
    notes = [budget, *(n for n in notes if n != budget)]  # the budget first, on every table
    notes.append(f"Anchor: {args.variant} (the paper preset); every detail_* and mistake_* setting changes one "
                 "thing in it.")

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    normalized = normalize_scores(scores, random_scores)
    n, seed = args.n_resamples, args.seed
    write_table(effects(normalized, args.variant, n, seed=seed), out / "details_effects.csv",
                out / "details_effects.md", [*notes, EFFECT_NOTE],
                f"Each detail's and mistake's effect on the normalised score against {args.variant}, all tasks",
                DIGITS)
    written["details_effects"] = out / "details_effects.csv"
    write_table(per_task_effects(normalized, args.variant, n, seed=seed), out / "details_per_task.csv",
                out / "details_per_task.md", [*notes, EFFECT_NOTE],
                f"Each detail's and mistake's effect against {args.variant}, per task", DIGITS)
    written["details_per_task"] = out / "details_per_task.csv"

    full_steps = {name: v.config.ppo.epochs * (v.config.num_envs * v.config.horizon // v.config.ppo.minibatch_size)
                  for name, v in variants.items() if v.config.algorithm == "ppo"}
    stats = run_statistics(updates, manifests, full_steps)
    claims = {name: (v.description, v.claim) for name, v in sorted(variants.items()) if v.description}
    write_table(claims_table(normalized, stats, claims, args.variant, n, seed=seed), out / "details_claims.csv",
                out / "details_claims.md", [*notes, VERDICT_RULE, CLAIM_NOTE, EFFECT_NOTE],
                f"The tutorials' claims against the measured effect (anchor {args.variant})", DIGITS)
    written["details_claims"] = out / "details_claims.csv"

    modern = modern_table(normalized, args.variant, args.modern, n, seed=seed)
    modern_notes = [*notes, EFFECT_NOTE.replace("the setting", "the modern preset"),
                    f"paper_return / modern_return: mean final return (last {args.window} training episodes, mean "
                    f"over seeds); the '{ALL_TASKS}' row compares normalised scores only."]
    if modern.empty:
        modern_notes.append(f"{args.modern!r} or {args.variant!r} has no scored run here: nothing to compare.")
    write_table(modern, out / "details_modern.csv", out / "details_modern.md", modern_notes,
                f"The paper preset ({args.variant}) beside the modern preset ({args.modern}), per task", DIGITS)
    written["details_modern"] = out / "details_modern.csv"

    # The mistakes beside the anchor; a study without mistakes (a check of details) shows every setting instead.
    others = sorted(v for v in manifests["variant"].unique() if v != args.variant)
    mistakes = [v for v in others if fnmatch.fnmatchcase(v, args.mistakes)]
    shown, which = (([args.variant, *mistakes], "The mistakes") if mistakes
                    else ([args.variant, *others], "Each setting"))
    anchor_label = manifests.loc[manifests["variant"] == args.variant, "variant_label"].iloc[0]
    chosen = manifests[manifests["variant"].isin(shown)]
    per_run = resample_runs(episodes[episodes["variant"].isin(shown)], chosen, "global_step", args.curve_points,
                            args.curve_smooth)
    written["details_curves.png"] = plot_curves(
        per_run, out / "details_curves.png",
        f"{which} beside {anchor_label}: return (mean of the last {args.curve_smooth} episodes), mean over seeds "
        f"thick, each seed thin\n{budget}", anchor=args.variant, random_scores=random_scores)
    written["details_mechanisms.png"] = plot_mechanisms(
        updates, shown, out / "details_mechanisms.png",
        f"Per update, {which.lower()} beside {anchor_label}: mean over seeds (each run's updates averaged in 50 bins "
        f"of steps)\n{budget}", seed=seed)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return report_main("details_report", parse_args, run_report, argv)


if __name__ == "__main__":
    sys.exit(main())
