#!/usr/bin/env python
"""The report's first page, and what ``./repro`` prints at the end: what was run, at what scale, what it
cost, each study's headline table, and the project's published paper-scale reproduction beside it.

python workflow/scripts/front_page.py --study results/table1/reduced/report/provenance.csv \
    results/table1/reduced/report/table1.md variant_label,ours,published --published published --out-md results/front_page.md \
    --out-rst results/front_page.rst

``--study`` (repeatable) names a study's provenance.csv (what ran, its budget, its runs' training time), its
headline table (markdown, written by the study's report) and the columns of it to show. The published section summarises the
paper-scale runs under ``--published`` (published/INDEX.csv and their episode records): the mean score of
each setting on each task whose three seeds are all published, so a reader sees at once how far the
user's reduced run is from the paper's budget.
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

from analysis.atari import attach_env_protocol, check_runs, load_atari_references, load_table6
from analysis.atari_tables import run_scores, table6, verdicts
from analysis.io import RunDataError, load_study
from analysis.references import (difference_ci, load_references, load_sb3_scores, per_task_reference,
                                 sb3_difference, task_env_name)
from analysis.scores import final_scores
from analysis.table1 import TIE_MARGIN, clearly_below
from ppo.pipeline.progress import clock
from ppo.pipeline.publish import CHECKS
from ppo.pipeline.publish import STUDIES as PUBLISHED_STUDIES
from ppo.pipeline.study import load_study as load_study_config

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "reference"
REFERENCES = REFERENCE_DIR / "mujoco_reference_scores.csv"
# The Atari games and algorithms the project trains at the paper's budget (./repro atari-three).
ATARI_THREE = {"games": ("BeamRider", "Breakout", "Pong"), "variants": ("atari_ppo", "atari_a2c"), "seeds": 3}


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
    summary = (f"{rows.get('scale_label', rows.get('scale', ''))}. Runs on {rows.get('tasks', '')}: "
               f"{rows.get('runs_status', '?')}. Training jobs: {clock(seconds)} (h:mm:ss, summed over jobs; "
               f"{rows.get('cpu_count', '?')} cores here). Code: {code_version(rows)}.")
    table = headline_table(headline, columns)
    return (f"{rows.get('study', '?')} ({rows.get('scale', '?')})", summary,
            readable_headings(table) + noise_note(table))


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


def noise_note(table: str) -> str:
    """Which settings a reader may call different from the best one (analysis.table1.clearly_below: 95%
    intervals apart and at least TIE_MARGIN lower) and which are within noise of it. Empty when the table
    has no intervals (one seed, or no ours/ci_low/ci_high columns)."""
    cells = cells_of(table.splitlines())
    head, body = cells[0], cells[2:]
    if not {"ours", "ci_low", "ci_high"} <= set(head):
        return ""
    name = head.index("variant_label") if "variant_label" in head else 0
    try:
        rows = pd.DataFrame([{"variant": r[name], **{c: float(r[head.index(c)]) for c in ("ours", "ci_low", "ci_high")}}
                             for r in body])
    except ValueError:  # an empty interval: too few runs to say
        return ""
    best, within, below = clearly_below(rows)
    return (f"\n\nBest: {best}. Within noise of it (95% intervals overlap, or less than {TIE_MARGIN} apart): "
            f"{', '.join(within) or 'none'}."
            + (f" Clearly below it: {', '.join(below)}." if below else " No setting is clearly below it."))


def anchor_beside_references(published: Path, scores: pd.DataFrame, manifests: pd.DataFrame,
                             anchor: str) -> tuple[str, str] | None:
    """(note, markdown table): per task whose three seeds of the study's ``anchor`` are published, their mean
    and interval beside Stable-Baselines3 PPO with the paper's settings (published/sb3_reference) and the
    published PPO numbers at 1M steps, with whether ours lies outside their spread (analysis.references).
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
                     "" if not r.vs_refs else f"{r.refs_low:,.1f} to {r.refs_high:,.1f}", r.vs_refs or "no reference"])
    head = ["task", f"ours, {version}", "95% interval over seeds", "SB3 PPO, v5, same settings",
            "published PPO at 1M: spread", "ours vs the spread"]
    table = "\n".join(["| " + " | ".join(head) + " |", "|---|" + "---:|" * 4 + "---|",
                       *("| " + " | ".join(row) + " |" for row in rows)])
    note = (f"{ours['variant_label'].iloc[0]}, per task with all 3 seeds published: mean of the last 100 training episodes. "
            "SB3: benchmarks/mujoco_sb3_reference.py, the paper's settings on the same v5 task and budget. The spread: "
            "the lowest mean − std to the highest mean + std of the published PPO numbers at 1M steps that score "
            "the end of training (CleanRL's last 100 episodes on v4 and v2, baselines ppo2's final reward on v2; "
            "reference/mujoco_reference_scores.csv). A task outside it is a disagreement to explain.")
    return note, table


DIFFERENCE = "{:+,.1f} ({:+,.1f} to {:+,.1f})"  # a difference and its interval


@functools.cache
def scored_runs(runs_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(final scores, manifests) of the published runs under ``runs_dir``, read once: the study tables and the
    checks table both use them (callers select, never modify)."""
    episodes, _, manifests = load_study(runs_dir)
    return final_scores(episodes), manifests


def checks_beside_table1(published: Path, n_resamples: int = 10_000, seed: int = 0) -> tuple[str, str] | None:
    """(note, markdown table): every setting of the checks of Table 1 (ppo.pipeline.publish.CHECKS) on each task whose
    three seeds are published, beside Table 1's anchor on the same task at v5: the check's score and
    interval, check − anchor with an interval that resamples both sides' seeds, SB3 on the same task and
    version, and whether the check lies outside the published references' spread. A check that closes a
    disagreement shows it here. None while no check has a complete task."""
    table1_runs = published / "table1" / "paper" / "runs"
    if not table1_runs.is_dir():
        return None
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
                diff = "" if base_scores is None else DIFFERENCE.format(*difference_ci(check, base_scores, rng, n_resamples))
                theirs = sb3.loc[sb3["task"] == r.task, "score"].to_numpy(float)
                rows.append((r.env, PUBLISHED_STUDIES.index(study), [
                    r.task, f"{study}: {cells['variant_label'].iloc[0]}",
                    f"{r.our_mean:,.1f} ({r.our_ci_low:,.1f} to {r.our_ci_high:,.1f})",
                    "" if base_scores is None else f"{base_scores.mean():,.1f}", diff,
                    "" if not theirs.size else f"{theirs.mean():,.1f}",
                    "" if not theirs.size else DIFFERENCE.format(*difference_ci(check, theirs, rng, n_resamples)),
                    "" if not r.vs_refs else f"{r.refs_low:,.1f} to {r.refs_high:,.1f}", r.vs_refs or "no reference"]))
    if not rows:
        return None
    head = ["task", "check: setting", "its score (95% interval)", f"Table 1's {anchor}, v5",
            f"check − Table 1's {anchor} (95% interval)", "SB3 PPO, same task", "check − SB3 (95% interval)",
            "published PPO at 1M: spread", "check vs the spread"]
    table = "\n".join(["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * 6 + "---|",
                       *("| " + " | ".join(cells) + " |" for _, _, cells in sorted(rows, key=lambda r: r[:2]))])
    note = ("Each check of Table 1 (experiments/studies/<check>.yaml says which disagreement it tests), per task with "
            "all 3 seeds published: mean of the last 100 training episodes. The difference resamples the check's "
            f"seeds and Table 1's {anchor} seeds on the same task (v5) independently, and the check's and SB3's seeds; "
            "an interval wholly above or below 0 is a change the check made. SB3 and the spread as in the tables above.")
    return note, table


def published_summary(published: Path) -> list[tuple[str, str, str]]:
    """Per published study: (title, note, markdown table of mean final score by setting × task, complete
    cells only); then the study's anchor beside the references (anchor_beside_references)."""
    out = []
    index_file = published / "INDEX.csv"
    if not index_file.exists():
        return out
    index = pd.read_csv(index_file)
    for study in PUBLISHED_STUDIES:
        runs_dir = published / study / "paper" / "runs"
        done = index[index["study"] == study]
        if done.empty or not runs_dir.is_dir():
            continue
        scores, manifests = scored_runs(runs_dir)
        cells = scores.groupby(["variant_label", "task"])["score"].agg(["mean", "size"]).reset_index()
        complete = cells[cells["size"] >= 3]
        if complete.empty:
            continue
        table = complete.pivot(index="variant_label", columns="task", values="mean").round(1)
        config = load_study_config(study, "paper")
        order = [v.label for v in config.variants]  # the study's own row order
        table = table.reindex([label for label in order if label in table.index]
                              + [label for label in table.index if label not in order])
        hours = manifests.drop_duplicates("group" if "group" in manifests else "run_id")["wall_seconds"].sum() / 3600
        note = (f"{len(manifests)} runs published so far, 1M steps each, 3 seeds per cell; mean of the last 100 "
                f"training episodes, averaged over seeds (cells with all 3 seeds only). Training: {hours:.1f} "
                "core-hours. Records and provenance: published/INDEX.csv.")
        out.append((f"{study} (paper scale)", note, markdown_table(table)))
        beside = anchor_beside_references(published, scores, manifests, config.anchor)
        if beside is not None:
            anchor_label = scores.loc[scores["variant"] == config.anchor, "variant_label"].iloc[0]
            out.append((f"{study}: {anchor_label} beside the references (paper scale)", *beside))
    checks = checks_beside_table1(published)
    if checks is not None:
        out.append(("The checks of Table 1, beside it (paper scale)", *checks))
    atari = atari_beside_paper(published)
    if atari is not None:
        out.append(("Atari: Table 6 at the paper's budget (published runs)", *atari))
    return out


def atari_beside_paper(published: Path) -> tuple[str, str] | None:
    """(note, markdown table): the published Atari runs at the paper's budget, per game and algorithm: each
    seed's Table 6 score, the mean with its 95% t interval, the paper's value and the verdict of
    analysis.atari_tables.verdicts (CleanRL's ppo_atari.py beside PPO). None while none is published."""
    runs_dir = published / "atari" / "paper" / "runs"
    if not runs_dir.is_dir() or not any(runs_dir.rglob("manifest.json")):
        return None
    episodes, updates, manifests = load_study(runs_dir, update_columns=("update", "global_step"))
    manifests = attach_env_protocol(check_runs(manifests))
    scores = run_scores(episodes, manifests, updates)
    rows6 = table6(scores, load_table6(REFERENCE_DIR / "ppo2017_table6_atari.csv"))
    lines = verdicts(rows6, scores, load_atari_references(REFERENCE_DIR / "atari_reference_scores.csv"))
    head = ["game", "algorithm", "seeds: last-100 score", "mean (95% t interval)", "paper", "verdict"]
    body = [[r.game, r.variant_label, r.per_seed,
             f"{r.our_mean:,.1f}" + ("" if np.isnan(r.our_ci_low) else f" ({r.our_ci_low:,.1f} to {r.our_ci_high:,.1f})"),
             f"{r.paper_mean:,.1f}", r.verdict] for r in lines.itertuples()]
    table = "\n".join(["| " + " | ".join(head) + " |", "|---|---|---|---:|---:|---|",
                       *("| " + " | ".join(cells) + " |" for cells in body)])
    planned = len(ATARI_THREE["games"]) * len(ATARI_THREE["variants"]) * ATARI_THREE["seeds"]
    # wall_seconds covers every part of a run resumed from checkpoints (the driver's clock carries on)
    hours = pd.to_numeric(manifests["wall_seconds"], errors="coerce").sum() / 3600
    note = (f"{len(manifests)} of the {planned} runs of ./repro atari-three published (PPO, then A2C, on "
            f"{', '.join(ATARI_THREE['games'])}; 10M agent steps = 40M frames, 3 seeds), {hours:.1f} core-hours of "
            "training. Score: mean raw game score of a run's last 100 training episodes (Table 6). The t interval "
            "keeps its coverage at 3 seeds, where a bootstrap interval is the seeds' range; the verdict's rule and "
            "CleanRL's numbers: results/atari/paper/report/atari_verdicts.md after ./repro atari-three, "
            "analysis/atari_tables.py.")
    return note, table


def markdown_table(table: pd.DataFrame) -> str:
    head = "| setting | " + " | ".join(table.columns) + " |"
    rule = "|---|" + "---:|" * len(table.columns)
    body = ["| " + str(i) + " | " + " | ".join("" if pd.isna(v) else f"{v:,.1f}" for v in row) + " |"
            for i, row in zip(table.index, table.to_numpy())]
    return "\n".join([head, rule, *body])


def markdown_to_html(md: str) -> str:
    """A markdown pipe table (and the paragraphs around it) as HTML, for the report's first page."""
    out, rows = [], []

    def flush():
        if rows:
            cells = cells_of(r for r in rows if not set(r) <= set("|-: "))
            head, body = cells[0], cells[1:]
            out.append("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            rows.clear()

    for line in md.splitlines():
        if line.lstrip().startswith("|"):
            rows.append(line)
        else:
            flush()
            text = line.strip()
            if text.startswith("#"):
                level = min(4, len(text) - len(text.lstrip("#")) + 1)  # the report's own title is <h1>
                out.append(f"<h{level}>{html.escape(text.lstrip('#').strip())}</h{level}>")
            elif text:
                out.append(f"<p>{html.escape(text)}</p>")
    flush()
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", nargs=3, action="append", default=[], metavar=("PROVENANCE", "HEADLINE", "COLUMNS"),
                        help="COLUMNS: comma-separated headline columns to show, or 'all'")
    parser.add_argument("--published", type=Path, default=Path("published"))
    parser.add_argument("--out-md", type=Path, required=True)
    parser.add_argument("--out-rst", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        studies = [study_section(Path(p), Path(h), [] if cols == "all" else cols.split(",")) for p, h, cols in args.study]
        published = published_summary(args.published)
    except (OSError, RunDataError, ValueError, KeyError) as err:
        print(f"front_page: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1

    md = ["# What this run gives", ""]
    for title, summary, headline in studies:
        md += [f"## {title}", "", summary, "", headline, ""]
    md += ["# The paper at its own scale: the project's published runs", ""]
    if not published:
        md += ["No paper-scale runs are published yet.", ""]
    for title, note, table in published:
        md += [f"## {title}", "", note, "", table, ""]
    args.out_md.parent.mkdir(parents=True, exist_ok=True)
    args.out_md.write_text("\n".join(md), encoding="utf-8")

    # The report's landing page (Snakemake renders it as reStructuredText; the tables go in as raw HTML).
    rst = ["Reproduction of **Proximal Policy Optimization Algorithms** (Schulman et al. 2017, arXiv:1707.06347).",
           "", ".. raw:: html", ""]
    body = "\n".join(md[2:])  # without the top title, which the report shows itself
    for line in markdown_to_html(body).splitlines():
        rst.append("   " + line)
    rst.append("")
    args.out_rst.write_text("\n".join(rst), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
