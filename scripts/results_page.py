#!/usr/bin/env python
"""The paper-scale results as one markdown page with its figures, for readers of the repository who do not
run anything: docs/paper-results/README.md, written from the report that ``./repro paper`` builds from the
published runs (results/<study>/paper/report/ and results/front_page.md), never typed by hand.

    ./repro paper && python scripts/results_page.py            # results/ -> docs/paper-results/

    # Table 1 and Figure 3 at ten seeds (issue 31), from the report of every published seed, in a clone of its own so
    # results/ of the tree keeps the 3-seed report; a study whose runs are not all published is listed as pending:
    ./repro --config 'studies=[table1,figure3]' scale=paper seeds=10 \
        && python scripts/results_page.py --seeds 10 --out docs/ten-seeds-report

    python scripts/results_page.py --check    # which committed page a later publish left behind (exit 1)

Each study of ppo.pipeline.publish.STUDIES contributes the outputs its report type lists in PAGE (tables as the report
wrote them, each "difference from the paper" note once per study; figures copied beside the page). The long reference
tables (COLLAPSED) are folded under a <details> line a reader opens; figures that compare settings are left out
of a study of one setting, and the SB3 figure of a study without SB3 runs. The figures are drawn for the page's
980 px (analysis/style.py). A study without a report yet (its runs not all published, so ``./repro paper`` was run
on the others) is listed as pending; a report missing one of its outputs is an error naming the file, and no page is
written. The page says which published runs it was built from (each study's count in words, their records' digest in a
comment: ppo.pipeline.publish.records_read), so that ``--check`` tells a page a later publish has left behind
(tests/workflow/test_results_page.py holds the committed pages to it).
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
from pathlib import Path

from analysis.report_tables import NOTES_HEADING
from analysis.stats import DIFFERENCE_INTERVAL_WORDS, SCORE_INTERVAL_WORDS, T_METHOD
from analysis.table1 import p_text
from ppo.pipeline.publish import STUDIES, records_read
from ppo.pipeline.study import load_study

ROOT = Path(__file__).resolve().parents[1]
SCALE = "paper"
# Per report type, what the page shows, in order ({anchor}: the study's anchor, as ppo/pipeline/reports.py names it).
PAGE = {
    "table1": ("table1.md", "rank_agreement.json", "aggregate_intervals.png", "curves_steps.png", "sb3_comparison.md",
               "sb3_curves.png", "per_task_{anchor}.md", "policy_entropy.md", "diagnostics.png",
               "performance_profile.png", "seeds_needed.md"),
    "figure3": ("figure3_claim.md", "figure3_aggregate.md", "figure3_intervals.png", "figure3_curves.png",
                "figure3_final_scores.md", "figure3_seeds_needed.md"),
    "details": ("details_per_task.md", "details_effects.md", "details_claims.md", "details_curves.png"),
}
COLLAPSED = ("per_task_{anchor}.md", "figure3_final_scores.md")  # one row per reference: dozens of rows, 20 columns
# need 2 settings or more (seeds_needed.md: Table 1's conclusions, about its settings)
SETTINGS_FIGURES = ("aggregate_intervals.png", "performance_profile.png", "diagnostics.png", "seeds_needed.md")
# The sections of the report's first page (front_page.py) that the page opens with.
FRONT_SECTIONS = ("table1: Clipping, ε = 0.2 beside the references", "The checks of Table 1, beside it")
SEEDS_STUDIES = ("table1", "figure3")  # the ten-seed grid's (issue 31): the page at more seeds than the paper's
# The committed pages (the paper's protocol, and ten seeds) and the command that writes each again: --check says
# which of them a later publish left behind
PAGES = {"docs/paper-results/README.md": "./repro paper && python scripts/results_page.py",
         "docs/ten-seeds-report/README.md": ("in a clone, ./repro --config 'studies=[table1,figure3]' scale=paper "
                                             "seeds=10; then python scripts/results_page.py --results CLONE/results "
                                             "--seeds 10 --out docs/ten-seeds-report")}
READ_MARK = "<!-- published runs read: "


def split_markdown(text: str) -> tuple[str, list[str], list[str]]:
    """(title, notes, the rest) of a report's markdown file (analysis.report_tables.to_markdown's layout)."""
    lines = text.splitlines()
    title = lines[0].lstrip("#").strip() if lines and lines[0].startswith("#") else ""
    body = lines[1:] if title else lines
    notes, rest, in_notes = [], [], False
    for line in body:
        if line.strip() == f"**{NOTES_HEADING}**":
            in_notes = True
        elif in_notes and line.startswith("- "):
            notes.append(line[2:])
        elif in_notes and not line.strip():
            continue
        else:
            in_notes = False
            rest.append(line)
    while rest and not rest[0].strip():
        rest.pop(0)
    while rest and not rest[-1].strip():
        rest.pop()
    return title, notes, rest


def _versus_best(checks: dict) -> str:
    """The anchor against the highest mean as paper_checks says it (analysis.table1.ANCHOR_RULE; written before
    2026-12-06 without anchor_below: Table 1's vs_best, analysis.table1.BEST_RULE)."""
    if checks.get("anchor_minus_best") is None:  # written before Welch's comparison: the old interval rule
        return ("within" if checks["anchor_within_best_ci"] else "below") + " that interval"
    point, low, high = checks["anchor_minus_best"]
    method = DIFFERENCE_INTERVAL_WORDS[checks.get("interval_method", T_METHOD)]
    holm = ("" if "anchor_below" not in checks else f"; below {', '.join(checks['anchor_below']) or 'none'} of the "
            f"{len(checks['anchor_p'])} others by Holm's test against each")
    return f"{point:+.2f} against it ({method} {low:+.2f} to {high:+.2f}{holm}: {checks['anchor_vs_best']})"


def _best_count(checks: dict) -> str:
    """How often the anchor had the highest mean, as a count (a percentage of 2,000 resamples rounds 3 to "0.1%" or
    "0.15%")."""
    count = checks.get("anchor_best_count", round(checks["anchor_best_fraction"] * checks["n_resamples"]))
    return f"{count:,}"


def rank_agreement_lines(path: Path) -> list[str]:
    """rank_agreement.json as the sentences a reader wants: ρ and its interval, no clipping's place, the best
    setting and whether ε = 0.2 is within its interval, the settings whose rank moved most."""
    data = json.loads(path.read_text())
    if data.get("rho") is None:  # a check with one setting: no ranks to compare
        return [f"- Not defined: {data['n']} setting(s) with a value in the paper's Table 1 (3 or more needed)."]
    checks = data.get("checks")
    lines = [f"- Spearman ρ between our normalised scores and the paper's, over {data['n']} settings: "
             f"{data['rho']:.2f} (one-sided permutation test: p {p_text(data['p'])})."]
    if checks:
        low, high = checks["rho_range"]
        lines += [
            f"- With the seeds resampled ({checks['n_resamples']:,} times; the best setting per task and the "
            f"normalisation recomputed each time): ρ = {checks['rho']:.2f}, {low:.2f} to {high:.2f} over the "
            "resamples (their 2.5th to 97.5th percentiles: not a 95% interval, as ρ from few seeds is biased low).",
            f"- No clipping or penalty ranks {checks['no_clip_rank']} of {data['n']}"
            f" (last in {checks['no_clip_last_fraction']:.0%} of the resamples).",
            f"- Highest mean: {checks['best_variant']} ({SCORE_INTERVAL_WORDS[checks.get('interval_method', T_METHOD)]} "
            f"of its score {checks['best_ci'][0]:.2f} to "
            f"{checks['best_ci'][1]:.2f}); {checks['anchor']} scores {checks['anchor_score']:.2f}, "
            + _versus_best(checks)
            + f"; it has the highest mean in {_best_count(checks)} of the {checks['n_resamples']:,} resamples.",
            "- Largest moves from the paper's ranks: " + "; ".join(
                f"{m['variant']} {m['rank_ours']} (paper {m['rank_paper']:g})" for m in checks["largest_rank_moves"]) + ".",
        ]
    return lines


def front_sections(front_page: Path) -> list[str]:
    """The FRONT_SECTIONS of the report's first page, headings one level down."""
    out, keep = [], False
    for line in front_page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            keep = line.lstrip("#").strip().startswith(FRONT_SECTIONS)
            if keep:
                out += ["", "### " + line.lstrip("#").strip().replace(" (paper scale)", "")]
            continue
        if keep:
            out.append(line)
    return out


def provenance(report_dir: Path) -> dict:
    """The report's provenance.csv (workflow/scripts/provenance.py) as a mapping; empty without one."""
    path = report_dir / "provenance.csv"
    if not path.is_file():
        return {}
    return dict(csv.reader(path.read_text(encoding="utf-8").splitlines()[1:]))


def table_rows(lines: list[str]) -> int:
    """The number of data rows of the markdown table in ``lines``."""
    return max(0, sum(line.startswith("|") for line in lines) - 2)


def shown(study, name: str, report_dir: Path) -> bool:
    """Whether the page shows output ``name`` of ``study``: not a figure comparing settings in a study of one, nor
    the SB3 figure where no SB3 run sits beside the study (its sb3_comparison table has no row)."""
    if name in SETTINGS_FIGURES and len(study.variants) < 2:
        return False
    if name == "sb3_curves.png":
        comparison = report_dir / "sb3_comparison.md"
        return comparison.is_file() and table_rows(split_markdown(comparison.read_text(encoding="utf-8"))[2]) > 0
    return True


def collapsed(title: str, notes: list[str], rest: list[str]) -> list[str]:
    """A long table under its heading, folded: GitHub shows the <summary> line until a reader opens it."""
    rows, columns = table_rows(rest), max((line.count("|") - 1 for line in rest if line.startswith("|")), default=0)
    size = f"{rows} row{'' if rows == 1 else 's'} × {columns} columns"
    return [f"### {title}", "", f"<details><summary>{size}: open to read</summary>", "",
            *notes, *rest, "", "</details>", ""]


def study_section(study, report_dir: Path, out_dir: Path) -> list[str]:
    built = provenance(report_dir)
    lines = [f"## {study.name}: {built.get('scale_label') or study.label}", ""]  # the report's (its seeds said)
    if built:
        lines += [f"Runs: {built.get('runs_status', '?')}; report built at commit {built.get('git_commit', '?')[:12]} "
                  f"on {built.get('written_utc', '?')} UTC.", ""]
    seen: set[str] = set()
    stem = study.anchor.replace("_", "")
    for name in PAGE[study.report]:
        path = report_dir / name.format(anchor=stem)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not found (build the report first: ./repro paper)")
        if not shown(study, name, report_dir):
            continue
        if path.suffix == ".png":
            target = out_dir / f"{study.name}_{path.name}"
            shutil.copyfile(path, target)
            lines += [f"![{study.name}: {path.stem}]({target.name})", ""]
        elif path.suffix == ".json":
            lines += ["### Rank agreement with the paper's Table 1", "", *rank_agreement_lines(path), ""]
        else:
            title, notes, rest = split_markdown(path.read_text(encoding="utf-8"))
            new = [n for n in notes if n not in seen]
            seen.update(new)
            note_lines = [f"**{NOTES_HEADING}**" + (" (besides those above)" if len(seen) > len(new) else ""), "",
                          *(f"- {n}" for n in new), ""] if new else []
            if name in COLLAPSED:
                lines += collapsed(title, note_lines, rest)
            else:
                lines += [f"### {title}", "", *note_lines, *rest, ""]
    return lines


def report_seeds(report_dir: Path) -> int | None:
    """How many seeds per cell a report was built with (its provenance.csv's ``seeds``, "10 (0, 1, ..., 9)")."""
    seeds = provenance(report_dir).get("seeds", "").split(" ", 1)[0]
    return int(seeds) if seeds.isdigit() else None


def read_line(published: Path) -> list[str]:
    """What the page was built from: each study's runs as ``published``/INDEX.csv lists them, in words and, for
    :func:`check`, with their digest (ppo.pipeline.publish.records_read) in a comment the page does not show."""
    read = records_read(STUDIES, published)
    words = ", ".join(f"{name} {n:,}" for name, (n, _) in read.items())
    marks = "; ".join(f"{name} {n} {digest}" for name, (n, digest) in read.items())
    return [f"Built while published/INDEX.csv listed {words} runs (each report below reads the seeds it names; "
            "`python scripts/results_page.py --check` says whether published/ still holds these records).",
            f"{READ_MARK}{marks} -->", ""]


def check(page: Path, published: Path) -> str | None:
    """None when ``page`` was built from the records ``published`` holds now, else what is wrong, in words."""
    if not page.is_file():
        return "it does not exist"
    mark = next((line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith(READ_MARK)), None)
    if mark is None:
        return "it does not say which published runs it was built from"
    try:
        then = {name: (int(n), digest) for name, n, digest in
                (entry.split() for entry in mark[len(READ_MARK):].removesuffix("-->").split(";") if entry.strip())}
    except ValueError:
        return f"its record of the published runs it read is not 'study runs digest; ...': {mark}"
    changed = []
    for name, (n, digest) in records_read(STUDIES, published).items():
        n_then, digest_then = then.get(name, (0, None))
        if (n_then, digest_then) != (n, digest):
            changed.append(f"{name} {n_then} → {n} runs" if n_then != n else f"{name}'s records")
    return f"published/ has changed since it was built: {', '.join(changed)}" if changed else None


def build(results: Path, out_dir: Path, seeds: int | None = None, published: Path | None = None) -> Path:
    """The page of the reports under ``results``: the paper's protocol (every study of STUDIES), or with ``seeds``
    the studies of SEEDS_STUDIES whose report was built at that many seeds per cell (issue 31's grid). ``published``
    (default: beside ``results``, the published/ its pipeline copied) is the folder whose runs the page records as read."""
    published = results.resolve().parent / "published" if published is None else published
    if not (published / "INDEX.csv").is_file():
        raise FileNotFoundError(f"{published / 'INDEX.csv'}: no index of the published runs the reports read "
                                "(--published names the folder)")
    out_dir.mkdir(parents=True, exist_ok=True)
    if seeds is None:
        lines = ["# The paper at its own scale: results", "",
                 "Written by `python scripts/results_page.py` from the report `./repro paper` builds out of the runs "
                 "published in `published/` (each section names its runs and the commit that built its report): "
                 "gymnasium MuJoCo v5 tasks (the checks say where they use v4), 1M environment steps per run, 3 seeds "
                 "per setting and task (the paper's protocol; \"At a glance\", from the report's first page, reads "
                 "every published seed, the ten-seed grid's too, and says how many), scores the mean return of each "
                 "run's last 100 training episodes. Nothing here is typed by hand.", ""]
    else:
        lines = [f"# Table 1 and Figure 3 at {seeds} seeds: the report", "",
                 f"Written by `python scripts/results_page.py --seeds {seeds}` from the report `./repro --config "
                 f"'studies=[{','.join(SEEDS_STUDIES)}]' scale=paper seeds={seeds}` builds out of the runs published in "
                 "`published/` (seeds 0–2 the paper's protocol, the others issue 31's grid; each section names its runs "
                 f"and the commit that built its report): gymnasium MuJoCo v5 tasks, 1M environment steps per run, "
                 f"{seeds} seeds per setting and task, scores the mean return of each run's last 100 training episodes, "
                 "intervals by the method each table's notes name. The paper's 3 seeds alone: "
                 "[paper-results](../paper-results/README.md). Nothing here is typed by hand.", ""]
    lines += [*read_line(published), "## At a glance", *front_sections(results / "front_page.md"), ""]
    pending = []
    for name in STUDIES if seeds is None else SEEDS_STUDIES:
        study = load_study(name, SCALE)
        report_dir = results / name / SCALE / "report"
        if not report_dir.is_dir() or (seeds is not None and report_seeds(report_dir) != seeds):
            pending.append(name)
            continue
        lines += study_section(study, report_dir, out_dir)
    if pending and seeds is None:
        lines += ["## Pending", "", f"Not in this page yet: {', '.join(pending)}, whose runs are not all published "
                  "(`scripts/paper_grid.sh status`); their published runs are in the tables at the top.", ""]
    elif pending:
        lines += ["## Pending", "", f"Not in this page yet: {', '.join(pending)}, whose report is not at {seeds} seeds "
                  f"(its runs are not all published: `STUDIES={','.join(SEEDS_STUDIES)} SEEDS={seeds} "
                  "scripts/paper_grid.sh status`); every published seed of it is in "
                  "[seeds-results.md](../seeds-results.md).", ""]
    page = out_dir / "README.md"
    page.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return page


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "paper-results")
    parser.add_argument("--seeds", type=int, help="the page of Table 1 and Figure 3 at this many seeds (issue 31)")
    parser.add_argument("--published", type=Path, help="the published/ the reports read (default: beside --results)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing: say which committed page (PAGES) was built from other records than "
                             "published/ holds now, and exit 1 if any")
    args = parser.parse_args(argv)
    if args.check:
        published = args.published or ROOT / "published"
        if not (published / "INDEX.csv").is_file():
            print(f"results_page: error: {published / 'INDEX.csv'}: no index of published runs", file=sys.stderr)
            return 1
        stale = [(page, why) for page in PAGES if (why := check(ROOT / page, published))]
        for page, why in stale:
            print(f"results_page: {page}: {why}; write it again: {PAGES[page]}", file=sys.stderr)
        return 1 if stale else 0
    try:
        print(f"wrote {build(args.results, args.out, args.seeds, args.published)}")
    except (OSError, ValueError, KeyError) as err:
        print(f"results_page: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
