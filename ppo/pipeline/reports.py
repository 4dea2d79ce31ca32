"""The reports a study can ask for (its ``report`` field): adding one is one entry in REPORTS.

workflow/rules/analysis.smk makes one rule per study from its report's entry; tests/analysis/test_reports.py
checks that each script writes exactly the declared outputs.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Report:
    script: str  # under workflow/scripts/
    outputs: tuple[tuple[str, str | None], ...]  # (file name, caption under workflow/report/ or None)
    random_scores: bool = False  # --random: our random policy's scores are the zero point (MuJoCo)
    anchor: bool = False  # --variant: the study's anchor variant gets its own table
    sb3_reference: bool = False  # --sb3-dir: compared with the published Stable-Baselines3 runs
    variant_files: bool = False  # --variant-files: the study's variant files (their descriptions and claims)
    headline: str = ""  # the output (a markdown table) the report's first page and ./repro's last screen show
    headline_columns: tuple[str, ...] = ()  # the columns of it they show (all if empty)

    def files(self, anchor: str = "") -> list[tuple[str, str | None]]:
        """(file name, caption) of every output; ``{anchor}`` in a name is the anchor variant's stem."""
        stem = anchor.replace("_", "")
        return [(name.format(anchor=stem), caption) for name, caption in self.outputs]


REPORTS = {
    "table1": Report(  # Table 1 beside the paper, with per-task and aggregate views
        "table1_report.py",
        (("table1.csv", "table1.rst"), ("table1.md", None), ("table1_per_task.csv", "table1_per_task.rst"),
         ("policy_entropy.csv", "policy_entropy.rst"), ("policy_entropy.md", None),
         ("per_task_{anchor}.csv", "per_task_reference.rst"), ("per_task_{anchor}.md", None),
         ("curves_steps.png", "curves.rst"), ("diagnostics.png", "diagnostics.rst"),
         ("rank_agreement.json", None), ("sb3_comparison.csv", "sb3_comparison.rst"), ("sb3_comparison.md", None),
         ("sb3_curves.png", "sb3_curves.rst"), ("aggregates.csv", "aggregates.rst"), ("aggregates.md", None),
         ("probability_of_improvement.csv", "probability_of_improvement.rst"),
         ("probability_of_improvement.md", None), ("aggregate_intervals.png", "aggregate_intervals.rst"),
         ("performance_profile.png", "performance_profile.rst"), ("sample_efficiency.png", "sample_efficiency.rst"),
         ("seeds_needed.csv", "seeds_needed.rst"), ("seeds_needed.md", None)),
        random_scores=True, anchor=True, sb3_reference=True, headline="table1.md",
        headline_columns=("variant_label", "n_runs", "n_diverged", "ours", "ci_low", "ci_high", "published")),
    "figure3": Report(  # Figure 3 beside published references
        "figure3_report.py",
        (("figure3_curves.png", "figure3_curves.rst"), ("figure3_final_scores.csv", "figure3_final_scores.rst"),
         ("figure3_final_scores.md", None), ("figure3_aggregate.csv", "figure3_aggregate.rst"),
         ("figure3_aggregate.md", None), ("figure3_intervals.png", "figure3_intervals.rst"),
         ("figure3_claim.csv", "figure3_claim.rst"), ("figure3_claim.md", None),
         ("figure3_throughput.csv", "figure3_throughput.rst"), ("figure3_throughput.md", None),
         ("figure3_seeds_needed.csv", "figure3_seeds_needed.rst"), ("figure3_seeds_needed.md", None)),
        random_scores=True, anchor=True, headline="figure3_aggregate.md",
        headline_columns=("variant_label", "n_runs", "n_diverged", "iqm", "iqm_ci_low", "iqm_ci_high", "mean")),
    "atari": Report(  # Tables 6 and 2 with human-normalised aggregates
        "atari_report.py",
        (("atari_verdicts.csv", "atari_verdicts.rst"), ("atari_verdicts.md", None),
         ("atari_table6.csv", "atari_table6.rst"), ("atari_table6.md", None),
         ("atari_runs.csv", "atari_runs.rst"), ("atari_runs.md", None),
         ("atari_table2.csv", "atari_table2.rst"), ("atari_table2.md", None),
         ("atari_aggregate.csv", "atari_aggregate.rst"), ("atari_aggregate.md", None),
         ("atari_curves.png", "atari_curves.rst"), ("atari_curves.csv", "atari_curves_data.rst"),
         ("atari_references.csv", "atari_references.rst"), ("atari_references.md", None)),
        headline="atari_verdicts.md",
        headline_columns=("game", "variant_label", "per_seed", "our_mean", "our_ci_low", "our_ci_high",
                          "paper_mean", "verdict")),
    "details": Report(  # implementation details and the tutorials' mistakes against the paper preset, claim by claim
        "details_report.py",
        (("details_effects.csv", "details_effects.rst"), ("details_effects.md", None),
         ("details_per_task.csv", "details_per_task.rst"), ("details_per_task.md", None),
         ("details_claims.csv", "details_claims.rst"), ("details_claims.md", None),
         ("details_modern.csv", "details_modern.rst"), ("details_modern.md", None),
         ("details_curves.png", "details_curves.rst"), ("details_mechanisms.png", "details_mechanisms.rst")),
        random_scores=True, anchor=True, variant_files=True, headline="details_claims.md",
        headline_columns=("variant_label", "prediction", "effect", "effect_ci_low", "effect_ci_high",
                          "mechanism_found", "verdict")),
    "rlhf": Report(  # PPO for language models (issue 19): over-optimisation with Gao et al.'s fits, the KL frontier
        "rlhf_report.py",
        (("rlhf_overoptimisation.png", "rlhf_overoptimisation.rst"), ("rlhf_fits.csv", "rlhf_fits.rst"),
         ("rlhf_fits.md", None), ("rlhf_gold_curves.png", "rlhf_gold_curves.rst"),
         ("rlhf_peak_final.csv", "rlhf_peak_final.rst"), ("rlhf_peak_final.md", None),
         ("rlhf_frontier.csv", "rlhf_frontier.rst"), ("rlhf_frontier.md", None),
         ("rlhf_samples.csv", "rlhf_samples.rst"), ("rlhf_samples.md", None),
         ("rlhf_diagnostics.png", "rlhf_diagnostics.rst"), ("rlhf_diagnostics.csv", "rlhf_diagnostics_table.rst"),
         ("rlhf_diagnostics.md", None), ("rlhf_reward_models.csv", "rlhf_reward_models.rst"),
         ("rlhf_reward_models.md", None)),
        headline="rlhf_peak_final.md",
        headline_columns=("setting", "n_runs", "n_diverged", "peak_gold", "peak_ci_low", "peak_ci_high",
                          "final_gold", "final_ci_low", "final_ci_high", "final_sqrt_kl")),
}

# A check of another study's result (experiments/studies/<check>.yaml) draws the line it checks beside its own: check ->
# (the checked study, its variant). The workflow passes that study's runs of the variant at the same scale: this
# pipeline's when the study runs in it, else the published ones (published/<study>/<scale>/runs), else none.
BESIDE = {"table1_v4": ("table1", "clip_0.2"), "table1_bootstrap": ("table1", "clip_0.2")}
