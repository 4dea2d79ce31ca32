#!/usr/bin/env python
"""Build the Atari report: the paper's Table 6 and Table 2 (Sec 6.4) from our runs, beside the paper.

Usage (from the repository root, or from a Snakemake ``shell:`` rule):

    python workflow/scripts/atari_report.py --runs results/atari/<scale>/runs \
        --reference-dir reference --out-dir results/atari/<scale>/report \
        --budget-note "REDUCED BUDGET: 2 games, 40,960 agent steps per run"

Writes into --out-dir (every file carries the budget line: markdown notes, a ``budget`` CSV column, the
figure's title):
  atari_verdicts.csv/.md    per game and algorithm one line: the paper's value reproduced or not, with the
                            evidence (our 95% t interval; Welch's interval against CleanRL where it applies);
  atari_table6.csv/.md      final score (mean of the last 100 training episodes) per game and algorithm:
                            each seed, the mean with a 95% Student-t interval, frames trained, the paper's value;
  atari_runs.csv/.md        per run: Table 2's two metrics (all of training; last 100 episodes), episodes,
                            steps and frames trained;
  atari_table2.csv/.md      games won per algorithm and metric (all of training; last 100 episodes), ties,
                            beside the paper's counts;
  atari_aggregate.csv/.md   human-normalised score per algorithm: IQM, median, mean, optimality gap with 95%
                            stratified bootstrap intervals, and the same statistics of the paper's Table 6;
  atari_curves.png/.csv     raw score against emulator frames, one panel per game (--games, default the
                            first 6): each seed thin, their mean thick, per algorithm;
  atari_references.csv/.md  our Table 6 rows beside reference/atari_reference_scores.csv rows of the same
                            game and algorithm.
Random and human scores come from reference/atari_random_human.csv (--human-table picks one of its two
tables). The aggregates' bootstrap intervals use --n-resamples and --seed, so the report is reproducible.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.atari import (
    PAPER_ALGORITHMS,
    DEFAULT_HUMAN_TABLE,
    HUMAN_TABLES,
    WINDOW,
    attach_env_protocol,
    budget_line,
    check_runs,
    human_table_source,
    load_atari_references,
    load_random_human,
    load_table2,
    load_table6,
    paper_protocol,
)
from analysis.atari_tables import (
    VERDICT_RULE,
    aggregate_table,
    human_normalized,
    reference_table,
    run_scores,
    table6,
    verdicts,
    win_counts,
)
from analysis.atari_curves import default_games, mean_curves, plot_atari_curves, seed_curves_frames
from analysis.io import load_study, report_main, report_parser
from analysis.report_tables import to_markdown, write_table

UPDATE_COLUMNS = ("update", "global_step")  # common to every algorithm's updates.parquet


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options; see the module docstring for an example."""
    p = report_parser("atari", __doc__.split("\n\n")[0],
                      "folder with ppo2017_table6_atari.csv, ppo2017_table2_atari_wins.csv, atari_random_human.csv, "
                      "atari_reference_scores.csv", window=WINDOW)
    p.add_argument("--human-table", default=DEFAULT_HUMAN_TABLE, choices=sorted(HUMAN_TABLES),
                   help="which random/human table of atari_random_human.csv normalises the scores")
    p.add_argument("--games", nargs="+", default=None, help="games of the curves (default: the first 6 by name)")
    return p.parse_args(argv)


SCORE_NOTE = (
    "Scores are raw game scores: episode_return summed over all lives, never the clipped training reward. "
    "Score (2) = mean of a run's last 100 training episodes (fewer when it finished fewer: min_last_episodes); "
    "per game each seed's score (per_seed), their mean with a 95% Student-t interval of the mean (n - 1 degrees "
    "of freedom; none with one seed): at 3 seeds it spans 4.30 standard errors each side, where a bootstrap "
    "interval would be the seeds' range and cover the mean about 75% of the time. our_all_mean is score (1). "
    "frames = the most agent steps any seed trained (last global_step of updates.parquet) x the frame skip "
    "in its manifest's env_protocol; paper_frames is the paper's budget. A diverged run (n_diverged) is "
    "scored on the episodes it finished; a run with no finished episode has no score (n_unscored)."
)
WINS_NOTE = (
    "Table 2 of the paper: per game the algorithm with the highest mean over seeds wins; an exact tie of the "
    "highest means counts as a tie. Metric (1): mean return over all training episodes; (2): mean of the last "
    "100. A game counts only when every algorithm present has a scored run on it (skipped_games lists the rest)."
)
AGGREGATE_NOTE = (
    "Human-normalised score per run = (score (2) - random) / (human - random). Aggregates after Agarwal et al. "
    "2021 (rliable): IQM = 25% trimmed mean of all runs x games, median = median over games of per-game means, "
    "mean over all runs, optimality gap = mean of max(0, 1 - score); 95% percentile bootstrap intervals, runs "
    "resampled within each game. 'paper Table 6' rows apply the same statistics to the paper's per-game means "
    "(3 seeds already averaged, so one value per game and no interval): close to, not the same as, ours."
)
VERDICT_NOTE = (
    f"Rule: {VERDICT_RULE}. "
    "The paper's value is a 3-seed mean treated as exact. The interval is wide at 3 seeds: read it beside the "
    "verdict. Where CleanRL's ppo_atari.py (gym NoFrameskip-v4, baselines' wrappers, 3 seeds, mean ± numpy std "
    "over seeds) states its spread, diff_vs_ref is our mean minus its mean with Welch's 95% interval (its std "
    "rescaled to ddof 1); an interval crossing zero tells the two apart in no direction."
)
RUNS_NOTE = (
    "One row per run: score_all = mean raw score over all its training episodes (Table 2's metric 1), "
    "score_last = mean of its last 100 (metric 2, Table 6), n_last of them; steps and frames trained."
)
REFERENCE_NOTE = (
    "Every row of reference/atari_reference_scores.csv for the same game whose algo starts with the algorithm's "
    "name (ppo includes ppo2 and ppo2_mpi). ref_metric is read from each row's note: only 'last-100 training "
    "episodes' is our metric; single-run final-agent evaluations and 'final reward, window not stated' are not "
    "directly comparable. EnvPool *-v5 and gym NoFrameskip-v4 ids use other environment settings than ours. "
    "ref_sd and ref_n: the std over seeds (ddof 1) and seeds of rows whose note states both on a CleanRL "
    "benchmark page; diff_vs_ref is our mean minus ref_score with Welch's 95% interval (diff_ci_low/high)."
)


def notes_for(manifests: pd.DataFrame, scores: pd.DataFrame, budget: str, extra: Sequence[str]) -> list[str]:
    """The budget line, then differences from the paper read from the runs."""
    notes = [budget, *[n for n in extra if n not in budget]]
    protocols = ", ".join(sorted(manifests["protocol"].unique()))
    skips = ", ".join(str(s) for s in sorted(manifests["frame_skip"].unique()))
    notes.append(f"Environments: ale-py ALE/<Game>-v5, Atari protocol(s) {protocols} (experiments/protocols/), "
                 f"frame skip {skips} (paper: gym's 2017 Atari ids).")
    absent = [a for a in PAPER_ALGORITHMS if a not in set(manifests["algorithm"])]
    if absent:
        notes.append(f"Algorithms of the paper not run here: {', '.join(absent)}.")
    unscored = scores[scores["n_episodes"] == 0]
    if len(unscored):
        notes.append(f"{len(unscored)} of {len(scores)} runs finished no episode and have no score: "
                     f"{', '.join(unscored['run_id'])}.")
    return notes


def run_report(args: argparse.Namespace) -> dict[str, Path]:
    """Compute every table and the figure and write them; returns the written paths."""
    run_dirs = None if args.manifests is None else [m.parent for m in args.manifests]
    episodes, updates, manifests = load_study(args.runs, run_dirs, update_columns=UPDATE_COLUMNS)
    manifests = attach_env_protocol(check_runs(manifests))
    ref = args.reference_dir
    paper6 = load_table6(ref / "ppo2017_table6_atari.csv")
    paper2 = load_table2(ref / "ppo2017_table2_atari_wins.csv")
    random_human = load_random_human(ref / "atari_random_human.csv", args.human_table)
    references = load_atari_references(ref / "atari_reference_scores.csv")
    scores = run_scores(episodes, manifests, updates, args.window)
    paper = paper_protocol(ref)
    budget = budget_line(manifests, args.budget_note, paper)
    notes = notes_for(manifests, scores, budget, args.budget_note)
    human_note = f"Random and human scores ({args.human_table}): {human_table_source(random_human)}."

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}

    def write(name: str, table: pd.DataFrame, extra_notes: Sequence[str], title: str, digits=2,
              md_drop: Sequence[str] = ()) -> None:
        # The CSV carries the budget as a column; the markdown as its first note.
        write_table(table.assign(budget=budget), out / f"{name}.csv")
        md = to_markdown(table.drop(columns=list(md_drop)), [*notes, *extra_notes], title, digits)
        (out / f"{name}.md").write_text(md)
        written[name] = out / f"{name}.csv"

    rows6 = table6(scores, paper6, random_human, paper["frames"])
    lines = verdicts(rows6, scores, references, random_human, paper["frames"])
    write("atari_verdicts", lines, [VERDICT_NOTE, SCORE_NOTE],
          "Atari: is the paper's Table 6 reproduced? One line per game and algorithm", 1, ["variant", "ref_algo"])
    write("atari_table6", rows6.drop(columns="task"), [SCORE_NOTE, human_note],
          "Table 6: mean final score per game (last 100 episodes) beside the paper",
          {"our_hns": 3, "paper_hns": 3})
    write("atari_runs", scores.drop(columns="task"), [RUNS_NOTE], "Every run: Table 2's two metrics", 1)

    wins = win_counts(scores, paper2, paper6)
    write("atari_table2", wins, [WINS_NOTE], "Table 2: number of games won per algorithm")

    normalized = human_normalized(scores, random_human)
    agg = aggregate_table(normalized, paper6, random_human, scores, args.n_resamples, args.seed)
    write("atari_aggregate", agg, [AGGREGATE_NOTE, human_note],
          "Human-normalised score per algorithm across games (95% stratified bootstrap CIs)", 3, ["human_table"])

    refs = reference_table(rows6, scores, references)
    write("atari_references", refs, [REFERENCE_NOTE], "Table 6 rows beside other published Atari results",
          {"our_mean": 1, "our_ci_low": 1, "our_ci_high": 1, "paper_mean": 1}, ["ref_note"])

    games = args.games or default_games(manifests)
    per_seed = seed_curves_frames(episodes, manifests, games, args.curve_points, args.curve_smooth)
    means = mean_curves(per_seed).rename(columns={"mean": "value"}).assign(run_id="mean", seed=pd.NA)
    write_table(pd.concat([per_seed, means[per_seed.columns]], ignore_index=True).assign(budget=budget),
                out / "atari_curves.csv")
    written["atari_curves.csv"] = out / "atari_curves.csv"
    title = (f"Atari: raw score per episode (mean of the last {args.curve_smooth}); each seed thin, their "
             f"mean thick\n{budget}")
    # The paper's score as a line only beside runs at its budget: at a reduced one it would flatten the curves.
    at_budget = rows6[rows6["frames"] >= rows6["paper_frames"]]
    written["atari_curves.png"] = plot_atari_curves(per_seed, out / "atari_curves.png", title, at_budget)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return report_main("atari_report", parse_args, run_report, argv)


if __name__ == "__main__":
    sys.exit(main())
