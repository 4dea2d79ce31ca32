#!/usr/bin/env python
"""Table 1 and Figure 3 beyond the paper's three seeds (issue 31) as a page, docs/seeds-results.md, and README.md's
summary of it, written from the published records by the first page's own code (workflow/scripts/front_page.py: every
published seed of each cell, the paper's 3-seed view beside it, how many seeds each conclusion needs), never typed by
hand:

    python scripts/seeds_results.py                   # published/ -> docs/seeds-results.md and README.md's block
    python scripts/seeds_results.py --published DIR --out FILE --readme FILE

tests/pipeline/test_seeds_results.py writes both again from published/ and compares them with the committed files, and
``scripts/paper_grid.sh`` with SEEDS set (the ten-seed grid) writes them again and commits them in the same commit as
the runs it publishes, so neither says what the records no longer hold. The random policy's scores are the published
ones (published/random, the pipeline's 100 episodes, seed 0) and the bootstrap is config/config.yaml's, so the numbers
are the first page's after ``./repro paper``.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.report_tables import replace_between  # noqa: E402

PAGE = ROOT / "docs" / "seeds-results.md"
README = ROOT / "README.md"
README_BEGIN = "<!-- seeds summary: written by python scripts/seeds_results.py from published/; do not edit -->"
README_END = "<!-- end of the seeds summary -->"
# What the page takes from the first page: its findings on Table 1, Figure 3 and the seeds each needs, then whole sections
FINDINGS = ("- **Table 1", "- **Figure 3", "- **Seeds each conclusion needs**")
SECTIONS = ("## Table 1 at the paper's scale, beside the paper", "## Figure 3 at the paper's scale",
            "## How many seeds each conclusion needs", "## table1: Clipping, ε = 0.2 beside the references",
            "## The checks of Table 1, beside it", "## table1 (paper scale): mean final return per setting and task")
# The first page's one line per check of Table 1 (front_page.check_findings), each where its runs are published
CHECK_FINDING = ", a check beside Table 1's"


def first_page(published: Path) -> str:
    """The first page (workflow/scripts/front_page.py) of the published runs alone, in markdown."""
    bootstrap = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))["bootstrap"]
    random = sorted((published / "random").glob("*-v5.parquet"))
    if not random:
        raise SystemExit(f"{published / 'random'}: no random-policy scores (*-v5.parquet) to normalise Table 1 with")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        done = subprocess.run(
            [sys.executable, str(ROOT / "workflow" / "scripts" / "front_page.py"), "--published", str(published),
             "--random", *map(str, random), "--n-resamples", str(bootstrap["n_resamples"]), "--seed",
             str(bootstrap["seed"]), "--out-md", str(out / "page.md"), "--out-rst", str(out / "page.rst")],
            capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise SystemExit(f"workflow/scripts/front_page.py failed ({done.returncode}): {last}")
        return (out / "page.md").read_text(encoding="utf-8")


def pick(page: str) -> tuple[list[str], list[str]]:
    """The first page's findings (one line each: FINDINGS', then any check's) and sections (heading to the next
    heading), in SECTIONS' order; a missing finding of FINDINGS or section stops with its name, nothing written."""
    lines = page.splitlines()
    findings = []
    for start in FINDINGS:
        found = [line for line in lines if line.startswith(start)]
        if not found:
            raise SystemExit(f"the first page has no finding {start!r}: nothing written")
        findings.append(found[0])
    findings += [line for line in lines if line.startswith("- **") and CHECK_FINDING in line]
    sections = []
    for heading in SECTIONS:
        at = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
        if at is None:
            raise SystemExit(f"the first page has no section {heading!r}: nothing written")
        end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("#")), len(lines))
        sections.append("\n".join(lines[at:end]).strip())
    return findings, sections


def table_of(section: str) -> str:
    """A section's first markdown table."""
    lines = section.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        raise SystemExit(f"the first page's section {lines[0]!r} has no table: nothing written")
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def build(published: Path) -> tuple[str, str]:
    """The page and README.md's block."""
    findings, sections = pick(first_page(published))
    page = "\n\n".join([
        "# Table 1 and Figure 3 beyond the paper's three seeds",
        "<!-- written by scripts/seeds_results.py from published/; do not edit by hand -->",
        "Every published seed of each (setting, task) cell of Table 1 and Figure 3 at the paper's scale (issue 31: seeds "
        "3–9 trained by `STUDIES=table1,figure3 SEEDS=10 scripts/paper_grid.sh`, a seed of every cell at a time), with "
        "the paper's protocol (seeds 0–2) beside it, then ε = 0.2 per task beside the published PPO numbers, the "
        "checks of Table 1 at every seed they have and Table 1's returns per task, as the first page of "
        "`./repro paper` shows them "
        "(workflow/scripts/front_page.py, run on published/ by `python scripts/seeds_results.py`). Nothing here is "
        "typed by hand.",
        "\n".join(findings), *sections]) + "\n"
    readme = "\n\n".join(["\n".join(findings[:len(FINDINGS)]), table_of(sections[0]),
                          "Figure 3, every published seed of each cell (PPO's are Table 1's ε = 0.2 runs; the seeds "
                          "each cell holds, the verdict's rule and the tests: "
                          "[docs/seeds-results.md](docs/seeds-results.md)):",
                          table_of(sections[1]),
                          "Clipping, ε = 0.2, per task at every published seed, beside SB3 with the same settings and "
                          "the published PPO numbers at 1M steps (their rule, and the checks of each disagreement: "
                          "[docs/seeds-results.md](docs/seeds-results.md)):",
                          table_of(sections[3]),
                          "The notes of each table and how many seeds each conclusion needs: "
                          "[docs/seeds-results.md](docs/seeds-results.md)."]) + "\n"
    return page, readme


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--published", type=Path, default=ROOT / "published")
    p.add_argument("--out", type=Path, default=PAGE)
    p.add_argument("--readme", type=Path, default=README)
    args = p.parse_args(argv)
    page, block = build(args.published)
    replace_between(args.readme, README_BEGIN, README_END, block)  # first: it refuses a README without the markers
    args.out.write_text(page, encoding="utf-8")
    print(f"wrote {args.out} and the seeds summary of {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
