#!/usr/bin/env python
"""The report's first page, and what ``./repro`` prints at the end: what was run, at what scale, what it
cost, each study's headline table, and the paper beside it: the project's published paper-scale runs as the
paper's Table 1 and Figure 3, with a one-line verdict per study.

python workflow/scripts/front_page.py --study results/table1/reduced/report/provenance.csv \
    results/table1/reduced/report/table1.md variant_label,ours,published --published published \
    --random results/random/Hopper-v5.parquet ... --out-md results/front_page.md \
    --out-rst results/front_page.rst --out-summary results/summary.md

``--study`` (repeatable) names a study's provenance.csv (what ran, its budget, its runs' training time), its
headline table (markdown, written by the study's report) and the columns of it to show. The paper's side is
computed from the runs under ``--published`` (published/INDEX.csv and their records) with the analysis the
reports use (analysis.table1, analysis.figure3), the paper's numbers read from reference/, and our random
policy's scores (``--random``, Table 1's zero point). The page (``--out-md``, and ``--out-rst`` for Snakemake's
report) opens on the user's result; the terminal's summary (``--out-summary``) ends with it.
"""
from __future__ import annotations

import argparse
import functools
import html
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.atari import attach_env_protocol, check_runs, load_atari_references, load_random_human, load_table6
from analysis.atari_tables import VERDICT_RULE, run_scores, table6, verdicts
from analysis.figure3 import CLAIM_OUTCOME_RULE, CLAIM_RULE, aggregate_table, claim_outcome, claim_table
from analysis.io import RunDataError, load_random, load_study
from analysis.references import (REFERENCE_RULE, difference_ci, load_references, load_sb3_scores,
                                 per_task_reference, sb3_difference, task_env_name)
from analysis.scores import final_scores
from analysis.seeds import PAPER_SEEDS, first_seeds, seed_counts, seed_span
from analysis.seeds_needed import SEEDS_NEEDED_RULE, figure3_needed, needed_markdown, table1_needed
from analysis.stats import DIFFERENCE_INTERVAL_WORDS, INTERVAL_METHODS, T_METHOD, interval_side, same_runs
from analysis.table1 import (AGREEMENT_LEVEL, BELOW, BEST, FAMILY_LEVEL, NO_INTERVAL, NOT_DISTINGUISHABLE,
                             RHO_PERMUTATIONS, RHO_SPREAD, TIE_MARGIN, clearly_below, load_published_table1, normalize_scores, p_text, paper_checks,
                             paper_rows, rank_agreement, table1)
from ppo.envs.family import task_name
from ppo.pipeline.publish import CHECKS
from ppo.pipeline.publish import STUDIES as PUBLISHED_STUDIES
from ppo.pipeline.study import load_study as load_study_config
from ppo.pipeline.study import shared_runs

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "reference"
REFERENCES = REFERENCE_DIR / "mujoco_reference_scores.csv"
SCALE = "paper"  # the published runs' scale


def cells_of(lines) -> list[list[str]]:
    """The cells of markdown table rows."""
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]


def headline_table(path: Path, columns: list[str]) -> str:
    """The first markdown table of a report file (its notes left out), keeping ``columns`` (all if empty)."""
    rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.lstrip().startswith("|")]
    if not rows:
        raise ValueError(f"{path}: no table found")
    end = next((i for i, line in enumerate(rows[1:], 1) if not line.strip()), len(rows))
    cells = cells_of(rows[:end])
    head = cells[0]
    missing = [c for c in columns if c not in head]
    if missing:
        raise ValueError(f"{path}: headline columns {missing} not in its table ({head})")
    keep = [head.index(c) for c in columns] if columns else list(range(len(head)))
    return "\n".join("| " + " | ".join(row[i] if i < len(row) else "" for i in keep) + " |" for row in cells)


def code_version(rows: dict) -> str:
    commit = rows.get("git_commit", "")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        return commit or "unknown"
    return commit[:12] + (" with uncommitted changes" if rows.get("git_dirty", "").startswith("yes") else "")


def study_section(provenance: Path, headline: Path, columns: list[str]) -> tuple[str, str, str]:
    """(title, one-paragraph summary, headline markdown table) of one study."""
    rows = dict(pd.read_csv(provenance, dtype=str, keep_default_na=False).itertuples(index=False))
    seconds = float(rows.get("runs_training_seconds", "0") or 0)
    part = f" This run covers {rows['narrowed_to']}." if rows.get("narrowed_to") else ""
    summary = (f"{rows.get('scale_label', rows.get('scale', ''))}.{part} Runs on {rows.get('tasks', '')}: "
               f"{rows.get('runs_status', '?')}. Training: {duration(seconds)}, summed over jobs "
               f"({rows.get('cpu_count', '?')} cores here). Code: {code_version(rows)}.")
    table = headline_table(headline, columns)
    return (f"{rows.get('study', '?')} ({rows.get('scale', '?')})", summary,
            readable_headings(table)  # the rule may read unshown columns
            + noise_note(headline_table(headline, []), report_method(headline)))


# A report table's column names as a reader of the first page wants them.
HEADINGS = {"variant_label": "setting", "n_runs": "runs", "n_diverged": "diverged", "ours": "normalised score",
            "ci_low": "95% CI low", "ci_high": "95% CI high", "published": "paper"}


def readable_headings(table: str) -> str:
    """``table`` with its columns renamed by HEADINGS and any column empty in every row left out (the
    paper's column of a study the paper did not run)."""
    cells = cells_of(table.splitlines())
    head, rule, body = cells[0], cells[1], cells[2:]
    keep = [i for i in range(len(head)) if not body or any(i < len(r) and r[i] for r in body)]
    rows = [[HEADINGS.get(head[i], head[i]) for i in keep], [rule[i] for i in keep],
            *[[r[i] if i < len(r) else "" for i in keep] for r in body]]
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def report_method(path: Path) -> str:
    """The interval method a report file's seeds note names (analysis.seeds.SeedCounts.text); T_METHOD when it
    names none (a report from before the notes named it, or of one seed)."""
    text = path.read_text(encoding="utf-8")
    return next((method for method, words in INTERVAL_METHODS.items() if f"intervals: {words}" in text), T_METHOD)


def noise_note(table: str, method: str = T_METHOD) -> str:
    """Which settings a reader may call different from the best one and which not (analysis.table1.clearly_below):
    with the table's ``vs_best`` column, by the interval of the difference from the best that ``method`` gives (the
    report's: Welch's below 5 seeds per cell, the studentized bootstrap from 5; analysis.table1.BEST_RULE); without
    it, the older rule of 95% intervals apart and at least TIE_MARGIN lower. Empty when the table has no intervals
    (one seed, or no ours/ci_low/ci_high columns)."""
    cells = cells_of(table.splitlines())
    head, body = cells[0], cells[2:]
    if not {"ours", "ci_low", "ci_high"} <= set(head):
        return ""
    name = head.index("variant_label") if "variant_label" in head else 0
    try:
        rows = pd.DataFrame([{"variant": r[name], **{c: float(r[head.index(c)]) for c in ("ours", "ci_low", "ci_high")},
                              **({"vs_best": r[head.index("vs_best")]} if "vs_best" in head else {})} for r in body])
    except ValueError:  # an empty interval: too few runs to say
        return ""
    best, within, below = clearly_below(rows)
    if "vs_best" in rows:
        return (f"\n\nHighest mean: {best}. Not distinguishable from it ({DIFFERENCE_INTERVAL_WORDS[method]} of the difference "
                f"from it crosses 0, or the difference is under {TIE_MARGIN}; analysis.table1.BEST_RULE): "
                f"{', '.join(within) or 'none'}." + (f" Below it: {', '.join(below)}." if below else
                                                      " No setting is below it."))
    return (f"\n\nHighest mean: {best}. Within noise of it (95% intervals overlap, or less than {TIE_MARGIN} apart): "
            f"{', '.join(within) or 'none'}."
            + (f" Clearly below it: {', '.join(below)}." if below else " No setting is clearly below it."))


def versus_references(row) -> str:
    """A per_task_reference row's verdict against the published PPO numbers (analysis.references.REFERENCE_RULE),
    with how many of them ours is not distinguishable from."""
    if not row.vs_refs:
        return "no reference"
    return f"{row.vs_refs} ({row.n_refs_consistent} of {row.n_refs_compared} not distinguishable)"


def anchor_beside_references(published: Path, scores: pd.DataFrame, manifests: pd.DataFrame,
                             anchor: str) -> tuple[str, str] | None:
    """(note, markdown table): per task whose three seeds of the study's ``anchor`` are published, their mean
    and t interval beside Stable-Baselines3 PPO with the paper's settings (published/sb3_reference) and the
    published PPO numbers at 1M steps, with whether ours differs from them (analysis.references).
    None for a study that publishes no anchor runs of its own (Figure 3: its PPO runs are Table 1's)."""
    complete = scores[scores["variant"] == anchor].groupby("task")["score"].transform("size") >= 3
    ours = scores[(scores["variant"] == anchor) & complete]
    if ours.empty:
        return None
    per_task = per_task_reference(ours, manifests, load_references(REFERENCES), anchor).drop_duplicates("task")
    version = "/".join(sorted(per_task["our_env_version"].unique()))
    sb3 = sb3_difference(ours, load_sb3_scores(published / "sb3_reference"), anchor).set_index("task")
    rows = []
    for r in per_task.itertuples():
        theirs = sb3.loc[r.task] if r.task in sb3.index else None
        rows.append([r.task, f"{r.our_mean:,.1f}", f"{r.our_ci_low:,.1f} to {r.our_ci_high:,.1f}",
                     "" if theirs is None else f"{theirs.sb3_mean:,.1f} ({int(theirs.sb3_n_seeds)} of 3 seeds)",
                     "" if theirs is None else theirs.difference_text, r.refs_text, versus_references(r)])
    head = ["task", f"ours, {version}", "95% t interval over seeds", "SB3 PPO, v5, same settings",
            "ours − SB3 (Welch's 95% interval)", "published PPO at 1M (their means)", "ours vs those"]
    table = "\n".join(["| " + " | ".join(head) + " |", "|---|" + "---:|" * 5 + "---|",
                       *("| " + " | ".join(row) + " |" for row in rows)])
    note = (f"{ours['variant_label'].iloc[0]}, per task with the paper's 3 seeds or more published "
            f"({_count_range(ours.groupby('task').size())} seeds per task): mean of the last 100 training episodes. "
            "SB3: benchmarks/mujoco_sb3_reference.py, the paper's settings on the same v5 task and budget. "
            "The published PPO numbers: reference/mujoco_reference_scores.csv (CleanRL's last 100 episodes on v4 and "
            "v2, baselines ppo2's final reward on v2). " + REFERENCE_RULE + " A task where ours differs from every "
            "one is a disagreement to explain.")
    return note, table


def _count_range(sizes: pd.Series) -> str:
    """'3', or '3 to 10' when the counts differ."""
    return f"{sizes.min()}" if sizes.min() == sizes.max() else f"{sizes.min()} to {sizes.max()}"


DIFFERENCE = "{:+,.1f} ({:+,.1f} to {:+,.1f})"  # a difference and its interval


@functools.cache
def scored_runs(runs_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(final scores, manifests) of the published runs under ``runs_dir``, read once: the study tables and the
    checks table both use them (callers select, never modify)."""
    episodes, _, manifests = load_study(runs_dir)
    return final_scores(episodes), manifests


def check_results(published: Path, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Every setting of the checks of Table 1 (ppo.pipeline.publish.CHECKS) on each task with at least three seeds
    published (every published seed read), beside Table 1's anchor on the same task at v5, one row each: the check's
    mean and interval (``mean``, ``ci_low``, ``ci_high``) over its ``seeds``, check − anchor (``diff``, ``diff_low``,
    ``diff_high``: Welch's interval of both sides' seeds; the anchor's ``anchor_seeds``), SB3 on the same task and
    version and check − SB3, and the check against the published PPO numbers (analysis.references.per_task_reference).
    Empty while no check has a complete task."""
    table1_runs = published / "table1" / "paper" / "runs"
    if not table1_runs.is_dir():
        return pd.DataFrame()
    anchor = load_study_config("table1", "paper").anchor
    base = scored_runs(table1_runs)[0]
    base = base[base["variant"] == anchor]
    anchor_by_env = {task_env_name(t): g["score"].to_numpy(float) for t, g in base.groupby("task") if len(g) >= 3}
    sb3 = load_sb3_scores(published / "sb3_reference")
    references = load_references(REFERENCES)
    rng = np.random.default_rng(seed)
    rows = []
    for study in CHECKS:
        runs_dir = published / study / "paper" / "runs"
        if not runs_dir.is_dir():
            continue
        scores, manifests = scored_runs(runs_dir)
        scores = scores[scores.groupby(["variant", "task"])["score"].transform("size") >= 3]
        for variant, cells in scores.groupby("variant", sort=False):
            spread = per_task_reference(cells, manifests, references, variant, n_resamples, seed).drop_duplicates("task")
            for r in spread.itertuples():
                check = cells.loc[cells["task"] == r.task, "score"].to_numpy(float)
                base_scores = anchor_by_env.get(r.env)
                diff = (np.nan,) * 3 if base_scores is None else difference_ci(check, base_scores, rng, n_resamples)
                theirs = sb3.loc[sb3["task"] == r.task, "score"].to_numpy(float)
                sb3_diff = (np.nan,) * 3 if not theirs.size else difference_ci(check, theirs, rng, n_resamples)
                rows.append({"env": r.env, "order": PUBLISHED_STUDIES.index(study), "study": study, "variant": variant,
                             "identical": base_scores is not None and same_runs(check, base_scores),
                             "setting": cells["variant_label"].iloc[0], "task": r.task, "mean": r.our_mean,
                             "ci_low": r.our_ci_low, "ci_high": r.our_ci_high,
                             "anchor_mean": np.nan if base_scores is None else base_scores.mean(),
                             "seeds": check.size, "anchor_seeds": 0 if base_scores is None else base_scores.size,
                             "diff": diff[0], "diff_low": diff[1], "diff_high": diff[2],
                             "sb3_mean": theirs.mean() if theirs.size else np.nan, "sb3_diff": sb3_diff[0],
                             "sb3_low": sb3_diff[1], "sb3_high": sb3_diff[2], "refs_text": r.refs_text,
                             "n_refs_consistent": r.n_refs_consistent, "n_refs_compared": r.n_refs_compared,
                             "vs_refs": r.vs_refs})
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values(["env", "order"], kind="stable").reset_index(drop=True)


def _difference(value: float, low: float, high: float) -> str:
    """A difference and its interval (blank without one)."""
    return "" if np.isnan(value) else DIFFERENCE.format(value, low, high)


def checks_beside_table1(published: Path, n_resamples: int = 10_000, seed: int = 0,
                         results: pd.DataFrame | None = None) -> tuple[str, str] | None:
    """(note, markdown table) of check_results (``results``, when computed already): a check that closes a
    disagreement shows it here. None while no check has a complete task."""
    results = check_results(published, n_resamples, seed) if results is None else results
    if results.empty:
        return None
    anchor = load_study_config("table1", "paper").anchor
    head = ["task", "check: setting", "its score (95% interval)", f"Table 1's {anchor}, v5",
            f"check − Table 1's {anchor} (95% interval)", "SB3 PPO, same task", "check − SB3 (95% interval)",
            "published PPO at 1M (their means)", "check vs those"]
    body = [[r.task, f"{r.study}: {r.setting}", f"{r.mean:,.1f} ({r.ci_low:,.1f} to {r.ci_high:,.1f}), {r.seeds} seeds",
             "" if np.isnan(r.anchor_mean) else f"{r.anchor_mean:,.1f}, {r.anchor_seeds} seeds",
             "identical" if r.identical else _difference(r.diff, r.diff_low, r.diff_high),
             "" if np.isnan(r.sb3_mean) else f"{r.sb3_mean:,.1f}", _difference(r.sb3_diff, r.sb3_low, r.sb3_high),
             r.refs_text, versus_references(r)]
            for r in results.itertuples()]
    table = "\n".join(["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * 6 + "---|",
                       *("| " + " | ".join(cells) + " |" for cells in body)])
    note = ("Each check of Table 1 (experiments/studies/<check>.yaml says which disagreement it tests), per task with "
            "at least the paper's 3 seeds published, every published seed read (each cell names its count: the two "
            "sides may differ): mean of the last 100 training episodes. The differences are Welch's 95% intervals of "
            f"the check's seeds against Table 1's {anchor} seeds on the same task (v5), and against SB3's seeds; an "
            "interval wholly above or below 0 is a change the check made. SB3 and the published numbers as in the "
            "table above.")
    return note, table


def published_seeds(published: Path, names: tuple[str, ...] = ("table1", "figure3")) -> int:
    """How many seeds to resolve the published studies with: one more than the largest seed published under
    published/<study>/paper/runs/<task>/<variant>/seed<k> of ``names``, at least the scale's own (the paper's 3).
    Seeds beyond the paper's are published a few at a time (issue 31): every one published is read."""
    found = [int(d.name[4:]) + 1 for name in names for d in (published / name / SCALE / "runs").glob("*/*/seed*")
             if d.name[4:].isdigit()]
    return max([load_study_config(names[0], SCALE).seeds, *found])


def study_scores(published: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(final scores, manifests) of study ``name``'s published runs, every seed published (published_seeds), with
    those it shares with an earlier study of ppo.pipeline.publish.STUDIES (Figure 3's PPO runs are Table 1's ε = 0.2:
    ppo.pipeline.study.shared_runs) read from that study's folder under this study's run ids, variant names and
    labels. None when none is published."""
    seeds = published_seeds(published)
    configs = [load_study_config(n, SCALE, seeds) for n in PUBLISHED_STUDIES[:PUBLISHED_STUDIES.index(name) + 1]]
    shared = shared_runs(configs)
    parts = []
    runs_dir = published / name / SCALE / "runs"
    if runs_dir.is_dir() and any(runs_dir.rglob("manifest.json")):
        parts.append(scored_runs(runs_dir))
    borrowed: dict[str, dict] = {}  # owner study -> {its run id: this study's run}
    for run in configs[-1].runs():
        if (name, run.run_id) in shared:
            owner, owner_run = shared[(name, run.run_id)]
            borrowed.setdefault(owner.name, {})[owner_run.run_id] = run
    for owner, runs in borrowed.items():
        owner_dir = published / owner / SCALE / "runs"
        if not owner_dir.is_dir():
            continue
        theirs = [frame[frame["run_id"].isin(runs)] for frame in scored_runs(owner_dir)]
        parts.append(tuple(frame.assign(variant=frame["run_id"].map({k: r.variant.name for k, r in runs.items()}),
                                        variant_label=frame["run_id"].map({k: r.variant.label for k, r in runs.items()}),
                                        run_id=frame["run_id"].map({k: r.run_id for k, r in runs.items()}))
                           for frame in theirs))
    if not parts:
        return None
    return tuple(pd.concat([part[i] for part in parts], ignore_index=True) for i in (0, 1))


def _complete(published: Path, name: str, random_scores: pd.Series | None):
    """(study, scores, manifests) when every run of the published study at the paper's protocol (its scale's seeds,
    0-2) is published and every task has a random score; else (None, reason). The scores hold every published seed,
    those beyond the paper's too, in whatever cells have them."""
    study = load_study_config(name, SCALE)
    got = study_scores(published, name)
    n = 0 if got is None else int((got[0]["seed"] < study.seeds).sum())
    if n < len(study.runs()):
        return None, f"{n} of its {len(study.runs())} runs are published; its table waits for all of them."
    missing = [t for t in study.tasks if random_scores is None or t not in random_scores.index]
    if missing:
        return None, f"no random-policy score for {', '.join(missing)} (results/random/<task>.parquet, --random)."
    return (study, *got), ""


def _interval(low: float, high: float, digits: int = 2) -> str:
    return "" if np.isnan(low) else f"{low:,.{digits}f} to {high:,.{digits}f}"


def paper_table1(published: Path, random_scores: pd.Series | None, n_resamples: int = 10_000,
                 seed: int = 0) -> tuple[str, str, str]:
    """(verdict line, note, markdown table): the published paper-scale Table 1 as the Table 1 report computes it
    (analysis.table1: table1, rank_agreement, paper_checks), beside the paper's column
    (reference/ppo2017_table1.csv) with both ranks, Spearman's ρ and its interval over seeds. The verdict: the
    paper's three findings (VERDICT_RULES["table1"]), each with its evidence."""
    got, reason = _complete(published, "table1", random_scores)
    if got is None:
        return "**Table 1**: no verdict yet: " + reason, reason, ""
    study, scores, manifests = got
    paper = load_published_table1(REFERENCE_DIR / "ppo2017_table1.csv")
    t1 = table1(scores, random_scores, paper_rows(manifests), paper, n_resamples, seed=seed)
    agreement = rank_agreement(t1)
    checks = paper_checks(scores, random_scores, t1.set_index("variant")["published"], anchor=study.anchor, seed=seed,
                          interval_resamples=n_resamples)
    label = t1.set_index("variant")["variant_label"]
    counts = seed_counts(scores)
    more = counts.high > PAPER_SEEDS  # seeds beyond the paper's: its 3-seed view beside
    head = ["setting", "ours", "95% interval", "vs the highest mean", "paper", "rank, ours", "rank, paper"]
    body = [[r.variant_label, f"{r.ours:.2f}", _interval(r.ci_low, r.ci_high), r.vs_best,
             "" if np.isnan(r.published) else f"{r.published:.2f}", f"{r.rank_ours:g}",
             "" if np.isnan(r.rank_published) else f"{r.rank_published:g}"] for r in t1.itertuples()]
    align = ["---", "---:", "---:", "---", "---:", "---:", "---:"]
    if more:
        three = first_seeds(scores, PAPER_SEEDS)
        t3 = table1(three, random_scores, paper_rows(manifests), paper, n_resamples, seed=seed).set_index("variant")
        checks3 = paper_checks(three, random_scores, t1.set_index("variant")["published"], anchor=study.anchor,
                               seed=seed, interval_resamples=n_resamples)
        head = [head[0], f"ours, {counts.short()}", "95% interval", "vs the highest mean", f"ours, {seed_span(PAPER_SEEDS)}",
                "95% t interval", f"vs the highest mean, {seed_span(PAPER_SEEDS)}", "paper", "rank, ours",
                f"rank, {seed_span(PAPER_SEEDS)}", "rank, paper"]
        align = ["---", "---:", "---:", "---", "---:", "---:", "---", "---:", "---:", "---:", "---:"]
        for row, r in zip(body, t1.itertuples()):
            r3 = t3.loc[r.variant]
            row[4:4] = [f"{r3.ours:.2f}", _interval(r3.ci_low, r3.ci_high), r3.vs_best]
            row[-1:-1] = [f"{r3.rank_ours:g}"]
    table = "\n".join(["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|",
                       *("| " + " | ".join(b) + " |" for b in body)])
    low, high = checks["rho_range"]
    n_settings = agreement["n"]
    anchor_side = checks["anchor_vs_best"]
    found = {"ranks": checks["rho_p"] < AGREEMENT_LEVEL, "no_clip": checks["no_clip_last"],
             "anchor": anchor_side == BEST}
    evidence = [
        f"ranking beside the paper's: Spearman ρ = {checks['rho']:.2f} over {n_settings} settings, "
        f"{'above' if found['ranks'] else 'not above'} 0 beyond chance (permutation test, p {p_text(checks['rho_p'])}), "
        f"{low:.2f} to {high:.2f} over resampled seeds"
        + (f"; {seed_span(PAPER_SEEDS)} alone: ρ = {checks3['rho']:.2f}, p {p_text(checks3['rho_p'])}, "
           f"{checks3['rho_range'][0]:.2f} to {checks3['rho_range'][1]:.2f}" if more else ""),
        ("no clipping or penalty last, as in the paper" if found["no_clip"] else
         f"no clipping or penalty ranks {checks['no_clip_rank']} of {n_settings}, the paper's last"),
        anchor_sentence(checks, label, t1.set_index("variant").loc[study.anchor, "rank_ours"],
                        DIFFERENCE_INTERVAL_WORDS[counts.method])]
    held = sum(found.values()) + 0.5 * (anchor_side == NOT_DISTINGUISHABLE)  # not shown, not contradicted
    verdict = f"**Table 1: {_verdict(held, len(found))}**: " + "; ".join(evidence) + "."
    note = (f"The {len(scores)} published runs of Table 1 ({study.label}{more * f', here {counts.short()} per cell'}; "
            "gymnasium v5 tasks), normalised as the paper "
            "does: per task our random policy 0 and our best setting 1, the mean over the 7 tasks and "
            f"{counts.short()} "
            "(analysis.table1.table1: its 95% interval over seeds and tasks, and each setting against the highest mean by "
            f"the interval of the difference, analysis.table1.best_rule). Seeds: {counts.text()} "
            + (f"Beside it, the paper's protocol alone ({seed_span(PAPER_SEEDS)}: 95% t intervals, Welch's rule "
               "against the highest mean), so a reader sees what 3 seeds could and could not tell. " if more else
               f"From {seed_span(PAPER_SEEDS)} alone a percentile bootstrap interval would be about the seeds' range "
               "(coverage near 75%); once more seeds are published the table sets its 3-seed view beside them and, "
               "from 5 seeds in every cell, takes the studentized bootstrap. ")
            + "Paper: its Table 1 (reference/ppo2017_table1.csv; its tasks were gym's v1). Spearman's ρ between the "
            f"two columns {agreement['rho']:.2f}, p {p_text(agreement['p'])} by a one-sided permutation test "
            f"({RHO_PERMUTATIONS:,} random reassignments of the paper's values to the settings, "
            f"analysis.table1.agreement_p); its range over seeds resamples each (setting, task)'s seeds "
            f"{checks['n_resamples']:,} times, re-picking every task's best setting: {RHO_SPREAD}. "
            + VERDICT_RULES["table1"])
    return verdict, note, table


def anchor_sentence(checks: dict, label: pd.Series, rank: float, method_words: str) -> str:
    """Table 1's verdict on the paper's best (paper_checks' anchor_vs_best, ANCHOR_RULE): the settings it lies below are
    the ones Holm's test of it against each names, which need not include the best setting."""
    anchor, best = checks["anchor"], checks["best_variant"]
    side = checks["anchor_vs_best"]
    start = f"the paper's best, {label[anchor]}, "
    holm = f"of the {len(checks['anchor_p'])} others by Holm's test against each, {FAMILY_LEVEL:.0%} family-wise"
    if side == BEST:
        return start + f"is the best setting here ({checks['anchor_score']:.2f}), above all {holm.removeprefix('of ')}"
    if anchor == best:  # the highest mean, within noise of some other setting (seeds_needed names the others)
        return (start + f"has the highest mean here ({checks['anchor_score']:.2f}) but lies above only "
                f"{len(checks['anchor_above'])} {holm}: not shown to be the best")
    gap = checks["anchor_minus_best"]
    difference = f"difference {gap[0]:+.2f}, {method_words} {gap[1]:+.2f} to {gap[2]:+.2f}"
    start += f"ranks {rank:g} here ({checks['anchor_score']:.2f}), "
    if side == BELOW:
        below = ", ".join(label[v] for v in checks["anchor_below"])
        return start + f"below {below} {holm} (from the highest mean, {label[best]}: {difference})"
    if side == NO_INTERVAL:  # too few seeds for an interval of the difference
        return start + f"no interval against the highest mean, {label[best]} (difference {gap[0]:+.2f})"
    return start + f"not distinguishable from the highest mean, {label[best]} ({difference}; below none {holm})"


def _verdict(held: float, of: int) -> str:
    return "reproduced" if held == of else "not reproduced" if held == 0 else "partly reproduced"


VERDICT_RULES = {
    "table1": ("Verdict rule: the paper's three findings, the ranking (holds when ρ is above 0 beyond chance: "
               f"one-sided permutation test, p < {AGREEMENT_LEVEL}), no "
               "clipping or penalty last, and ε = 0.2 best (holds when it lies above every other setting by Holm's "
               "test of it against each; fails when below one; neither holds nor fails otherwise, the highest mean "
               "within noise of another setting included): reproduced when all three "
               "hold, not reproduced when none holds or is left open, partly otherwise."),
    "figure3": ("Verdict rule (the paper's claim, Sec. 6.2: PPO \"outperforms the previous methods on almost all the "
                f"continuous control environments\"): {CLAIM_OUTCOME_RULE}. Below: "
                + CLAIM_RULE.split(". ", 1)[0] + ", wholly below 0 (analysis.figure3.CLAIM_RULE). vs PPO: each "
                "algorithm − PPO in normalised score over the tasks, its 95% interval stratified over tasks by the "
                "method the seeds allow (analysis.figure3.versus_anchor)."),
}


def paper_figure3(published: Path, random_scores: pd.Series | None, n_resamples: int = 10_000,
                  seed: int = 0) -> tuple[str, str, str]:
    """(verdict line, note, markdown table): Figure 3 at the paper's scale from the published runs, PPO's row
    included (Table 1's ε = 0.2 runs): each algorithm's mean final score per task and its normalised mean over
    the tasks (analysis.figure3.aggregate_table), and the paper's claim checked task by task
    (analysis.figure3.claim_table)."""
    got, reason = _complete(published, "figure3", random_scores)
    if got is None:
        return "**Figure 3**: no verdict yet: " + reason, reason, ""
    study, scores, manifests = got
    counts = seed_counts(scores)
    more = counts.high > PAPER_SEEDS  # seeds beyond the paper's: its 3-seed view beside
    means = scores.pivot_table(index="variant", columns="task", values="score", aggfunc="mean")
    aggregate = aggregate_table(normalize_scores(scores, random_scores), manifests, n_resamples, seed,
                                study.anchor).set_index("variant")
    claim = claim_table(scores, study.anchor, n_resamples, seed).set_index("task")
    tasks = list(means.columns)
    label = {v.name: v.label for v in study.variants}
    head = ["algorithm", *tasks, "normalised, mean over tasks (95% interval)", "vs PPO, over tasks"]
    body = [[v.label, *(f"{means.loc[v.name, t]:,.1f}" for t in tasks),
             f"{aggregate.loc[v.name, 'mean']:.2f} ({_interval(aggregate.loc[v.name, 'mean_ci_low'], aggregate.loc[v.name, 'mean_ci_high'])})",
             aggregate.loc[v.name, "vs_anchor"]] for v in study.variants]
    body.append(["PPO against the best other algorithm", *(claim.loc[t, "verdict"] for t in tasks), "", ""])
    if more:
        three = first_seeds(scores, PAPER_SEEDS)
        aggregate3 = aggregate_table(normalize_scores(three, random_scores), manifests, n_resamples, seed,
                                     study.anchor).set_index("variant")
        claim3 = claim_table(three, study.anchor, n_resamples, seed).set_index("task")
        head[-2:] = [f"normalised, {counts.short()} (95% interval)", "vs PPO, over tasks",
                     f"normalised, {seed_span(PAPER_SEEDS)} (95% t interval)", f"vs PPO, {seed_span(PAPER_SEEDS)}"]
        for row, v in zip(body, study.variants):
            a3 = aggregate3.loc[v.name]
            row += [f"{a3['mean']:.2f} ({_interval(a3['mean_ci_low'], a3['mean_ci_high'])})", a3["vs_anchor"]]
        body[-1] += ["", ""]
        body.append([f"PPO against the best other algorithm, {seed_span(PAPER_SEEDS)}",
                     *(claim3.loc[t, "verdict"] for t in tasks), "", "", "", ""])
    align = "|---|" + "---:|" * (len(tasks) + 1) + "---|" + "---:|---|" * more
    table = "\n".join(["| " + " | ".join(head) + " |", align, *("| " + " | ".join(b) + " |" for b in body)])
    best_on = list(claim.index[claim["best"] == study.anchor])
    below = [f"{t} (below {', '.join(label.get(v, v) for v in r.below_others.split(', '))}; PPO − "
             f"{label.get(r.best_other, r.best_other)}: {r.ppo_minus_best_other:+,.1f}, "
             f"{r.diff_ci_low:+,.1f} to {r.diff_ci_high:+,.1f})" for t, r in claim.iterrows()
             if r["verdict"] == "below the best"]
    order = list(aggregate.index)  # best normalised mean first
    ppo, first = aggregate.loc[study.anchor], aggregate.iloc[0]
    outcome = claim_outcome(claim.reset_index(), study.anchor)
    verdict = (f"**Figure 3: {outcome}**: PPO ({label[study.anchor]}) has the best mean final score on {len(best_on)} "
               f"of {len(claim)} tasks" + (f" ({', '.join(best_on)})" if best_on else "")
               + (f"; it is below the best other algorithm on {len(below)}: {'; '.join(below)}" if below else
                  "; it is below the best other algorithm on none")
               + f"; over the tasks, normalised, it is {_ordinal(order.index(study.anchor) + 1)} of {len(order)}: "
               f"{ppo['mean']:.2f} ({_interval(ppo['mean_ci_low'], ppo['mean_ci_high'])})"
               + ("" if order[0] == study.anchor else
                  f", {label.get(order[0], order[0])} first with {first['mean']:.2f} "
                  f"({_interval(first['mean_ci_low'], first['mean_ci_high'])}), {first['vs_anchor']} from PPO")
               + (f"; {seed_span(PAPER_SEEDS)} alone: {claim_outcome(claim3.reset_index(), study.anchor)}" if more
                  else "") + ".")
    note = (f"The {len(scores)} published runs of Figure 3 ({study.label}{more * f', here {counts.short()} per cell'}; "
            "PPO's are Table 1's ε = 0.2 runs): mean of "
            f"the last 100 training episodes over {counts.short()} per task, and the mean over the tasks normalised as "
            "Table 1 with the figure's algorithms as the settings (analysis.figure3.aggregate_table; 95% interval as "
            f"the Figure 3 report computes it). Seeds: {counts.text()} "
            + (f"Beside it, the paper's protocol alone ({seed_span(PAPER_SEEDS)}). " if more else "")
            + "The paper shows Figure 3 as curves only: its claim, not a number, is checked. "
            + VERDICT_RULES["figure3"])
    return verdict, note, table


def paper_seeds_needed(published: Path, random_scores: pd.Series | None, n_resamples: int = 10_000,
                       seed: int = 0) -> tuple[str, str, str]:
    """(verdict line, note, markdown tables): how many seeds each conclusion of the published Table 1 and Figure 3
    needs (analysis.seeds_needed: each drawn again from seeds 0..n-1, n = 3 up to the seeds every cell has).
    Empty while a study's paper-protocol runs are incomplete."""
    parts, tables, counted = [], [], []
    for name, needed in (("table1", table1_needed), ("figure3", figure3_needed)):
        got, _ = _complete(published, name, random_scores)
        if got is None:
            continue
        study, scores, manifests = got
        if name == "table1":
            paper = table1(scores, random_scores, paper_rows(manifests),
                           load_published_table1(REFERENCE_DIR / "ppo2017_table1.csv")).set_index("variant")
            frame = needed(scores, random_scores, paper["published"], study.anchor, n_resamples=n_resamples,
                           seed=seed)
        else:
            frame = needed(scores, random_scores, study.anchor, n_resamples, seed)
        counts = seed_counts(scores)
        parts.append(frame)
        tables.append(needed_markdown(frame))
        counted.append(f"{'Table 1' if name == 'table1' else 'Figure 3'}: {counts.text()}")
    if not parts:
        return "", "", ""
    frame = pd.concat(parts, ignore_index=True)
    # a study whose every cell has seed 3 is followed past the paper's 3 seeds; the other's conclusions wait for it
    followed, waiting = frame[frame["n_last"] > PAPER_SEEDS], frame[frame["n_last"] == PAPER_SEEDS]
    if followed.empty:
        line = (f"**Seeds each conclusion needs: open**: {seed_span(PAPER_SEEDS)} (the paper's protocol) are published "
                f"in every cell of Table 1 and Figure 3, so none of their {len(frame)} conclusions can be followed "
                f"past 3 seeds yet: the table below holds their answers at 3 seeds, which each later seed count will be "
                f"compared with once seed {PAPER_SEEDS} is in every cell (issue 31).")
    else:
        held = followed[followed["settled_from"] == PAPER_SEEDS]
        later = followed[followed["settled_from"] > PAPER_SEEDS]
        open_ = followed[followed["settled_from"].isna()]
        lasts = followed.groupby("study", sort=False)["n_last"].max()  # per study: the seeds every cell has
        mixed = frame.groupby("study", sort=False)["n_last"].nunique() > 1  # Figure 3's pairs, each as far as it goes
        if waiting.empty and lasts.nunique() == 1 and not mixed.any():
            spans = f"{seed_span(PAPER_SEEDS)} up to {seed_span(int(lasts.iloc[0]))}"
        else:
            spans = "; ".join(f"{study}: {seed_span(PAPER_SEEDS)} up to {seed_span(int(n))}"
                              + (" for some" if mixed.get(study, False) else "") for study, n in lasts.items())
        line = (f"**Seeds each conclusion needs** ({spans}, the seeds every cell a conclusion reads has): "
                f"{len(held)} of {len(followed)} conclusions stay as at 3 seeds"
                + ("; settled later: " + "; ".join(f"{r.study}, {r.question}: from {r.settled_from}"
                                                   for r in later.itertuples()) if len(later) else "")
                + (f"; not settled: {'; '.join(f'{r.study}, {r.question}' for r in open_.itertuples())}"
                   if len(open_) else "")
                + "".join(f"; {len(rows)} of {study} wait for seed {PAPER_SEEDS} in every cell they read"
                          for study, rows in waiting.groupby("study", sort=False)) + ".")
    note = (SEEDS_NEEDED_RULE + " " + " ".join(counted) + " The same conclusions as the tables above, drawn by the "
            "same code (analysis.table1, analysis.figure3); the Table 1 and Figure 3 reports write them as "
            "seeds_needed.md and figure3_seeds_needed.md.")
    return line, note, "\n\n".join(tables)


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def check_findings(results: pd.DataFrame) -> list[str]:
    """One line per check of Table 1 (ppo.pipeline.publish.CHECKS) in ``results`` (check_results): per setting and
    task, whether it moved Table 1's ε = 0.2 (check − ε = 0.2 interval above or below 0, not distinguishable, or
    the same runs), and the tasks where it differs from every published PPO number (analysis.references.REFERENCE_RULE)."""
    lines = []
    for study in (c for c in CHECKS if not results.empty and c in set(results["study"])):
        rows = results[results["study"] == study]
        parts = []
        for setting, cells in rows.groupby("setting", sort=False):
            said, open_tasks, identical = [], [], []
            for r in cells.itertuples():
                side = interval_side(r.diff_low, r.diff_high)
                if r.identical:
                    identical.append(r.task)
                elif side in ("above 0", "below 0") or len(cells) == 1:
                    said.append(f"{'not distinguishable' if side == 'crosses 0' else side.removesuffix(' 0')} on "
                                f"{r.task} ({r.diff:+,.1f}, {r.diff_low:+,.1f} to {r.diff_high:+,.1f})")
                else:
                    open_tasks.append(r.task)
            said += [f"not distinguishable on {len(open_tasks)} of {len(cells)} tasks"] * bool(open_tasks)
            said += [f"the same runs on {', '.join(identical)}"] * bool(identical)
            parts.append(f"{setting}: {', '.join(said)}")
        outside = [f"{r.task} ({r.setting}: {r.vs_refs})" for r in rows.itertuples() if r.vs_refs not in ("within", "", None)]
        lines.append(f"**{study}**, a check beside Table 1's ε = 0.2 on the same task: " + "; ".join(parts)
                     + "; against the published PPO numbers: "
                     + (f"differs from every one on {', '.join(outside)}" if outside else "within on every task") + ".")
    return lines


def published_summary(published: Path, n_resamples: int = 10_000, seed: int = 0, atari: tuple | None = None,
                      checks: pd.DataFrame | None = None) -> list[tuple[str, str, str]]:
    """The published runs' detail, after Table 1 and Figure 3: (title, note, markdown table) of Table 1's ε = 0.2
    beside the references (anchor_beside_references), the checks of Table 1 (checks_beside_table1), the Atari runs
    (atari_beside_paper) and Table 1's mean final return per setting and task (complete cells only)."""
    out = []
    if not (published / "INDEX.csv").exists():
        return out
    runs_dir = published / "table1" / SCALE / "runs"
    raw = None
    if runs_dir.is_dir():
        scores, manifests = scored_runs(runs_dir)
        config = load_study_config("table1", SCALE)
        beside = anchor_beside_references(published, scores, manifests, config.anchor)
        if beside is not None:
            anchor_label = scores.loc[scores["variant"] == config.anchor, "variant_label"].iloc[0]
            out.append((f"table1: {anchor_label} beside the references (paper scale)", *beside))
        cells = scores.groupby(["variant_label", "task"])["score"].agg(["mean", "size"]).reset_index()
        complete = cells[cells["size"] >= 3]
        if not complete.empty:
            table = complete.pivot(index="variant_label", columns="task", values="mean").round(1)
            order = [v.label for v in config.variants]  # the study's own row order
            table = table.reindex([label for label in order if label in table.index]
                                  + [label for label in table.index if label not in order])
            hours = manifests.drop_duplicates("group" if "group" in manifests else "run_id")["wall_seconds"].sum() / 3600
            note = (f"{len(manifests)} runs published, 1M steps each, {seed_counts(scores).short()} per cell; mean of "
                    "the last 100 training episodes, averaged over seeds (cells with the paper's 3 seeds or more only): "
                    "the returns behind the normalised "
                    f"Table 1 above. Training: {hours:.1f} job-hours, the wall clock of its single-threaded groups "
                    "(more than their CPU time where a core was shared: `scripts/paper_grid.sh status`). Records and "
                    "provenance: published/INDEX.csv.")
            raw = ("table1 (paper scale): mean final return per setting and task", note, markdown_table(table))
    checks_table = checks_beside_table1(published, n_resamples, seed, checks)
    if checks_table is not None:
        out.append(("The checks of Table 1, beside it (paper scale)", *checks_table))
    atari_table = atari_beside_paper(published, atari)
    if atari_table is not None:
        out.append(("Atari: Table 6 at the paper's budget (published runs)", *atari_table))
    return out + ([raw] if raw else [])


def atari_results(published: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(verdicts, manifests) of the published Atari runs at the paper's budget, per game and algorithm
    (analysis.atari_tables.verdicts); None while none is published."""
    runs_dir = published / "atari" / SCALE / "runs"
    if not runs_dir.is_dir() or not any(runs_dir.rglob("manifest.json")):
        return None
    episodes, updates, manifests = load_study(runs_dir, update_columns=("update", "global_step"))
    manifests = attach_env_protocol(check_runs(manifests))
    scores = run_scores(episodes, manifests, updates)
    rows6 = table6(scores, load_table6(REFERENCE_DIR / "ppo2017_table6_atari.csv"))
    references = load_atari_references(REFERENCE_DIR / "atari_reference_scores.csv")
    return verdicts(rows6, scores, references, load_random_human(REFERENCE_DIR / "atari_random_human.csv")), manifests


@functools.cache
def atari_three() -> tuple[tuple[str, ...], int, int]:
    """(games, runs, seeds) of ./repro atari-three, the Atari games and algorithms the project trains at the paper's
    budget: the atari study's selection ``three`` (experiments/studies/atari.yaml) at the paper's scale."""
    study = load_study_config("atari", SCALE)
    tasks, variants = study.selection("three")
    return tuple(sorted(task_name(t) for t in tasks)), len(tasks) * len(variants) * study.seeds, study.seeds


def atari_beside_paper(published: Path, results: tuple | None = None) -> tuple[str, str] | None:
    """(note, markdown table): the published Atari runs at the paper's budget, per game and algorithm: each
    seed's Table 6 score, the mean with its 95% t interval, the paper's value and the verdict of
    analysis.atari_tables.verdicts (CleanRL's ppo_atari.py beside PPO). None while none is published."""
    got = results or atari_results(published)
    if got is None:
        return None
    lines, manifests = got
    head = ["game", "algorithm", "seeds: last-100 score", "mean (95% t interval)", "paper", "verdict"]
    body = [[r.game, r.variant_label, r.per_seed,
             f"{r.our_mean:,.1f}" + ("" if np.isnan(r.our_ci_low) else f" ({r.our_ci_low:,.1f} to {r.our_ci_high:,.1f})"),
             f"{r.paper_mean:,.1f}", r.verdict] for r in lines.itertuples()]
    table = "\n".join(["| " + " | ".join(head) + " |", "|---|---|---|---:|---:|---|",
                       *("| " + " | ".join(cells) + " |" for cells in body)])
    # wall_seconds covers every part of a run resumed from checkpoints (the driver's clock carries on)
    hours = pd.to_numeric(manifests["wall_seconds"], errors="coerce").sum() / 3600
    games, planned, seeds = atari_three()
    note = (f"{len(manifests)} of the {planned} runs of ./repro atari-three published (PPO, then A2C, on "
            f"{', '.join(games)}; 10M agent steps = 40M frames, {seeds} seeds), {hours:.1f} job-hours of "
            "training (the wall clock of single-threaded jobs: more than their CPU time where a job shared its core). "
            "Score: mean raw game score of a run's last 100 training episodes (Table 6). The t interval "
            "keeps its coverage at 3 seeds, where a bootstrap interval is the seeds' range; the verdict's rule and "
            "CleanRL's numbers: results/atari/paper/report/atari_verdicts.md after ./repro atari-three, "
            "analysis/atari_tables.py.")
    return note, table


def atari_finding(results: tuple | None) -> str | None:
    """One line: the published Atari runs' verdicts (atari_results) counted per kind; None while none is published."""
    if results is None:
        return None
    lines, manifests = results
    kinds = lines["verdict"].str.split(":").str[0]
    cells = lines["game"] + " " + lines["variant_label"]
    reproduced, not_reproduced = cells[kinds.str.startswith("reproduced")], cells[kinds.str.startswith("not reproduced")]
    undecided = cells[kinds.str.startswith("undecided")]
    pending = int((kinds == "no verdict").sum())
    done = len(reproduced) + len(not_reproduced)
    head = ("no verdict yet" if pending == len(lines) else "reproduced" if len(reproduced) == len(lines) else
            "not reproduced" if len(not_reproduced) == len(lines) else
            "partly reproduced" if len(reproduced) and len(not_reproduced) else
            f"{done} of {len(lines)} game × algorithm cells decided")
    return (f"**Atari, Table 6: {head}**: {len(manifests)} of the {atari_three()[1]} runs of ./repro atari-three published; "
            + ", ".join([f"reproduced on {', '.join(reproduced)}"] * bool(len(reproduced))
                        + [f"not reproduced on {', '.join(not_reproduced)}"] * bool(len(not_reproduced))
                        + [f"undecided on {', '.join(undecided)} (interval too wide at its seeds)"] * bool(len(undecided))
                        + [f"{pending} game × algorithm cell(s) without a verdict yet (fewer than 2 seeds)"] * bool(pending))
            + f" (rule: {VERDICT_RULE}).")


def markdown_table(table: pd.DataFrame) -> str:
    head = "| setting | " + " | ".join(table.columns) + " |"
    rule = "|---|" + "---:|" * len(table.columns)
    body = ["| " + str(i) + " | " + " | ".join("" if pd.isna(v) else f"{v:,.1f}" for v in row) + " |"
            for i, row in zip(table.index, table.to_numpy())]
    return "\n".join([head, rule, *body])


def duration(seconds: float) -> str:
    """A length of time as a reader says it: '45 s', '7 min 45 s', '21 h 13 min'."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    if hours:
        return f"{hours} h {rest // 60} min"
    return f"{rest // 60} min {rest % 60} s" if rest >= 60 else f"{rest} s"


def inline_html(text: str) -> str:
    """One line of the page's markdown as HTML: escaped, with its **bold** and `code` spans."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def markdown_to_html(md: str) -> str:
    """The first page's markdown (headings, paragraphs, '- ' lists, pipe tables, **bold**, `code`) as HTML."""
    out, rows, items = [], [], []

    def flush():
        if items:
            out.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in items) + "</ul>")
            items.clear()
        if rows:
            cells = cells_of(r for r in rows if not set(r) <= set("|-: "))
            head, body = cells[0], cells[1:]
            out.append("<table><thead><tr>" + "".join(f"<th>{inline_html(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{inline_html(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            rows.clear()

    for line in md.splitlines():
        text = line.strip()
        if text.startswith("|"):
            rows.append(line)
        elif text.startswith("- "):
            if rows:
                flush()
            items.append(text[2:])
        else:
            flush()
            if text.startswith("#"):
                level = min(4, len(text) - len(text.lstrip("#")) + 1)  # the report's own title is <h1>
                out.append(f"<h{level}>{inline_html(text.lstrip('#').strip())}</h{level}>")
            elif text:
                out.append(f"<p>{inline_html(text)}</p>")
    flush()
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", nargs=3, action="append", default=[], metavar=("PROVENANCE", "HEADLINE", "COLUMNS"),
                        help="COLUMNS: comma-separated headline columns to show, or 'all'")
    parser.add_argument("--published", type=Path, default=Path("published"))
    parser.add_argument("--random", type=Path, nargs="*", default=[],
                        help="our random policy's scores on the published MuJoCo tasks (results/random/<task>.parquet)")
    parser.add_argument("--n-resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-md", type=Path, required=True)
    parser.add_argument("--out-rst", type=Path, required=True)
    parser.add_argument("--out-summary", type=Path, help="the terminal's summary: the paper first, this run last")
    args = parser.parse_args(argv)
    try:
        studies = [study_section(Path(p), Path(h), [] if cols == "all" else cols.split(",")) for p, h, cols in args.study]
        paper = paper_beside(args.published, load_random(args.random) if args.random else None, args.n_resamples,
                             args.seed)
    except (OSError, RunDataError, ValueError, KeyError) as err:
        print(f"front_page: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    verdicts_md, tables, more = paper

    ours = ["# What this run gives", ""]
    for title, summary, headline in studies:
        ours += [f"## {title}", "", summary, "", headline, ""]
    beside = ["# The paper beside it: the project's published paper-scale runs", ""]
    beside += ([f"- {line}" for line in verdicts_md] or ["No paper-scale runs are published yet."]) + [""]
    for title, note, table in tables:
        beside += [f"## {title}", "", note, "", *([table, ""] if table else [])]
    detail = [line for title, note, table in more for line in (f"## {title}", "", note, "", table, "")]
    md = ours + beside + detail  # the page opens on this run's result
    args.out_md.parent.mkdir(parents=True, exist_ok=True)
    args.out_md.write_text("\n".join(md), encoding="utf-8")
    if args.out_summary is not None:  # the terminal ends on it: the paper's side first, this run's result last
        summary = beside + [f"(The detail behind these tables, and every check of them: {args.out_md} and the report.)", ""]
        args.out_summary.write_text("\n".join(summary + ours), encoding="utf-8")

    # The report's landing page (Snakemake renders it as reStructuredText; the tables go in as raw HTML).
    rst = ["Reproduction of **Proximal Policy Optimization Algorithms** (Schulman et al. 2017, arXiv:1707.06347).",
           "", ".. raw:: html", ""]
    body = "\n".join(md[2:])  # without the top title, which the report shows itself
    for line in markdown_to_html(body).splitlines():
        rst.append("   " + line)
    rst.append("")
    args.out_rst.write_text("\n".join(rst), encoding="utf-8")
    return 0


def paper_beside(published: Path, random_scores: pd.Series | None, n_resamples: int = 10_000, seed: int = 0):
    """(verdict lines, [(title, note, table)] of Table 1 and Figure 3, [(title, note, table)] of the detail) of the
    published paper-scale runs; all empty when none is published."""
    if not (published / "INDEX.csv").exists():
        return [], [], []
    t1_verdict, t1_note, t1_table = paper_table1(published, random_scores, n_resamples, seed)
    f3_verdict, f3_note, f3_table = paper_figure3(published, random_scores, n_resamples, seed)
    seeds_line, seeds_note, seeds_table = paper_seeds_needed(published, random_scores, n_resamples, seed)
    atari, checks = atari_results(published), check_results(published, n_resamples, seed)
    lines = [t1_verdict, f3_verdict, seeds_line, *check_findings(checks), atari_finding(atari)]
    tables = [("Table 1 at the paper's scale, beside the paper", t1_note, t1_table),
              ("Figure 3 at the paper's scale: PPO beside the baselines", f3_note, f3_table)]
    if seeds_table:
        tables.append(("How many seeds each conclusion needs (Table 1 and Figure 3, paper scale)", seeds_note,
                       seeds_table))
    return [line for line in lines if line], tables, published_summary(published, n_resamples, seed, atari, checks)


if __name__ == "__main__":
    sys.exit(main())
