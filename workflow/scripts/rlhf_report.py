#!/usr/bin/env python
"""Build the RLHF study's report (experiments/studies/rlhf.yaml; analysis/rlhf.py).

Usage (from the repository root, or from a Snakemake ``shell:`` rule):

    python workflow/scripts/rlhf_report.py --runs results/rlhf/reduced/runs --out-dir results/rlhf/reduced/report \
        [--manifests results/rlhf/reduced/runs/*/*/seed*/manifest.json] [--budget-note "REDUCED ..."]

Writes into --out-dir (ppo/pipeline/reports.py declares them): rlhf_overoptimisation.png (gold and proxy gained over the SFT
policy against √KL(π‖π_ref), a column per reference β, with Gao et al.'s fitted forms), rlhf_fits.csv/.md (those
fits: α, β, r2, where the fitted curve peaks), rlhf_gold_curves.png (gold over updates per surrogate),
rlhf_peak_final.csv/.md (peak and final gold per setting with Student-t intervals over seeds; the front page's
headline), rlhf_frontier.csv/.md (gold at matched KL against the β = 0 runs of the same seed: does the
reference-KL penalty move the frontier or stop earlier on it), and the over-optimisation itself:
rlhf_samples.csv/.md (sampled responses where the proxy and gold peak and at the end), rlhf_diagnostics.png and
rlhf_diagnostics.csv/.md (violations, repeats, grammatical rate, entropy, length and held-out gold over updates),
rlhf_reward_models.csv/.md (the reward models' accuracy on held-out pairs). Every interval is a Student-t interval
over seeds; --n-resamples and --seed are accepted, as by every report, and unused.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.io import report_main
from analysis.report_tables import write_table
from analysis.rlhf import (DIAGNOSTICS_NOTE, FIT_NOTE, FRONTIER_RULE, PEAK_NOTE, REWARD_MODEL_NOTE, SAMPLES_NOTE,
                           budget_notes, check_runs, diagnostics_table, fits_table, frontier_table, load_runs,
                           peak_final_table, plot_diagnostics, plot_gold_curves, plot_overoptimisation,
                           reward_model_table, sample_table)

DIGITS = {"reference_beta": 2, "alpha": 3, "beta": 3, "r2": 3, "d_max": 2, "d_peak_fit": 2, "R_peak_fit": 2,
          "share_in_range": 2, "peak_update": 1, "at": 0, "sample_update": 0, "rm_accuracy_labels": 3,
          "rm_accuracy_labels_ci_low": 3, "rm_accuracy_labels_ci_high": 3, "rm_accuracy_gold": 3,
          "rm_accuracy_gold_ci_low": 3, "rm_accuracy_gold_ci_high": 3, "rm_gold_correlation": 3,
          "rm_gold_correlation_ci_low": 3, "rm_gold_correlation_ci_high": 3}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", required=True, type=Path, help="results/<study>/<scale>/runs")
    p.add_argument("--manifests", nargs="+", type=Path, default=None,
                   help="only these runs (their manifest.json files); default: every run under --runs")
    p.add_argument("--reference-dir", type=Path, default=None, help="unused: the paper has no RLHF numbers")
    p.add_argument("--out-dir", required=True, type=Path)
    p.add_argument("--budget-note", action="append", default=[], help="the scale's label (repeatable)")
    p.add_argument("--n-resamples", type=int, default=10_000, help="unused: the intervals are Student-t")
    p.add_argument("--seed", type=int, default=0, help="unused: the intervals are Student-t")
    return p.parse_args(argv)


def run_report(args: argparse.Namespace) -> dict[str, Path]:
    records, manifests = load_runs(args.runs, args.manifests)
    check_runs(manifests)
    notes = budget_notes(manifests, args.budget_note)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fits = fits_table(records, manifests)
    write_table(fits, out / "rlhf_fits.csv", out / "rlhf_fits.md", [*notes, FIT_NOTE],
                "Gao et al.'s forms fitted to gold and proxy reward against √KL(π‖π_ref)", DIGITS)
    peak = peak_final_table(records, manifests)
    write_table(peak, out / "rlhf_peak_final.csv", out / "rlhf_peak_final.md", [*notes, PEAK_NOTE],
                "Peak and final gold reward per setting", DIGITS)
    frontier = frontier_table(records, manifests)
    write_table(frontier, out / "rlhf_frontier.csv", out / "rlhf_frontier.md", [*notes, FRONTIER_RULE],
                "Does a reference-KL penalty move the gold-vs-KL frontier, or stop earlier on it?", DIGITS)
    write_table(sample_table(records, manifests), out / "rlhf_samples.csv", out / "rlhf_samples.md",
                [*notes, SAMPLES_NOTE], "Sampled responses where the proxy peaks, where gold peaks, and at the end",
                DIGITS)
    write_table(diagnostics_table(records, manifests), out / "rlhf_diagnostics.csv", out / "rlhf_diagnostics.md",
                [*notes, DIAGNOSTICS_NOTE], "How the policy games the proxy: diagnostics at the start, at gold's peak "
                "and at the end", DIGITS)
    write_table(reward_model_table(manifests), out / "rlhf_reward_models.csv", out / "rlhf_reward_models.md",
                [*notes, REWARD_MODEL_NOTE], "The proxies: reward-model accuracy on held-out pairs", DIGITS)
    label = " ".join(args.budget_note)
    plot_overoptimisation(records, manifests, fits, out / "rlhf_overoptimisation.png",
                          f"Over-optimisation: reward gained against √KL(π‖π_ref); dashed: Gao et al.'s fits. {label}")
    plot_gold_curves(records, manifests, out / "rlhf_gold_curves.png", f"Gold reward over updates. {label}")
    plot_diagnostics(records, manifests, out / "rlhf_diagnostics.png",
                     f"Hack diagnostics over updates (mean over seeds). {label}")
    return {p.stem: p for p in out.iterdir()}


def main(argv=None) -> int:
    return report_main("rlhf_report", parse_args, run_report, argv)


if __name__ == "__main__":
    sys.exit(main())
