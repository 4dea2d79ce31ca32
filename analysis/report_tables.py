"""Write result tables as CSV (full precision, for machines) and markdown (for people).

The markdown formatter is our own: pandas' ``to_markdown`` needs ``tabulate``, which the
environment does not ship. Every markdown table opens with a note block listing how
the run differs from the paper, so a number is never read without its caveats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from pathlib import Path

import pandas as pd

NOTES_HEADING = "Differences from the paper"


def format_cell(value: object, digits: int = 2, integral: bool = False) -> str:
    """Text of one cell: blank for missing, fixed decimals for floats, escaped pipes."""
    if value is None or (isinstance(value, Real) and not isinstance(value, bool) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, Real):
        return str(int(value)) if integral else f"{float(value):.{digits}f}"
    return " ".join(str(value).split()).replace("|", "\\|")


def _is_integral(column: pd.Series) -> bool:
    """True for float columns that hold only whole numbers (steps, seed counts)."""
    if not pd.api.types.is_float_dtype(column):
        return False
    finite = column.dropna()
    return bool(len(finite)) and bool((finite == finite.round()).all())


def to_markdown(
    df: pd.DataFrame,
    notes: Sequence[str] = (),
    title: str | None = None,
    digits: int | Mapping[str, int] = 2,
) -> str:
    """Markdown document: optional title, the notes block, then a pipe table.

    ``digits`` is the number of decimals for float columns, either one value or a
    per-column mapping (unlisted columns get 2). Float columns holding only whole
    numbers print as integers; numeric columns are right-aligned.
    """
    lines: list[str] = []
    if title:
        lines += [f"# {title}", ""]
    if notes:
        lines += [f"**{NOTES_HEADING}**", ""]
        lines += [f"- {' '.join(str(n).split())}" for n in notes]
        lines.append("")
    columns = [str(c) for c in df.columns]
    cells = []
    for name, column in df.items():
        d = digits.get(str(name), 2) if isinstance(digits, Mapping) else digits
        integral = _is_integral(column)
        cells.append([format_cell(v, d, integral) for v in column.tolist()])
    numeric = [pd.api.types.is_numeric_dtype(c) and not pd.api.types.is_bool_dtype(c) for _, c in df.items()]
    lines.append("| " + " | ".join(c.replace("|", "\\|") for c in columns) + " |")
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in zip(*cells) if cells else []:
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_table(
    df: pd.DataFrame,
    csv_path: str | Path,
    md_path: str | Path | None = None,
    notes: Sequence[str] = (),
    title: str | None = None,
    digits: int | Mapping[str, int] = 2,
) -> None:
    """Write ``df`` to ``csv_path`` and, if given, a markdown version to ``md_path``."""
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv_path, index=False)
    if md_path is not None:
        md_path = Path(md_path)
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(to_markdown(df, notes, title, digits))


def replace_between(path: Path, begin: str, end: str, body: str) -> None:
    """Replace the lines between the line ``begin`` and the line starting ``end`` of ``path`` (README.md's generated
    blocks: scripts/atari_results.py, scripts/seeds_results.py) with ``body``; without both lines, stop naming the file
    and change nothing."""
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition(begin + "\n")
    _, sep2, tail = rest.partition(end)
    if not (sep and sep2):
        raise SystemExit(f"{path}: no lines {begin!r} ... {end!r} to write between")
    path.write_text(head + sep + body + sep2 + tail, encoding="utf-8")
