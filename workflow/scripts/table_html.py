#!/usr/bin/env python
"""Render a CSV table as one self-contained HTML page, so Snakemake's report shows it as a table.

python workflow/scripts/table_html.py IN.csv OUT.html

Snakemake's HTML report displays images, PDFs and HTML results in place but offers any other file (CSV
included) only as a download. This page holds the CSV's exact text: every cell's ``title`` (shown on
hover) is the CSV value, and long decimals are shortened to 4 places for reading. No scripts, no
external resources: the page works offline inside the report.
"""
from __future__ import annotations

import csv
import html
import math
import re
import sys
from pathlib import Path

DECIMALS = 4
LONG = 40  # characters: longer texts wrap within a column of 16-30em, shorter ones never wrap
_LONG_DECIMAL = re.compile(r"^[+-]?\d*\.\d{%d,}$" % (DECIMALS + 1))

STYLE = """
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 12px; color: #0f172a; }
h1 { font-size: 15px; margin: 0 0 4px; }
p.note { color: #475569; margin: 0 0 10px; font-size: 12px; }
table { border-collapse: collapse; width: max-content; }
th, td { border: 1px solid #cbd5e1; padding: 3px 8px; vertical-align: top; white-space: nowrap; }
td.long > div { white-space: normal; min-width: 16em; max-width: 30em; }
th { background: #e2e8f0; text-align: left; position: sticky; top: 0; }
tr:nth-child(even) td { background: #f8fafc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
"""


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() != ""


def shown(text: str) -> str:
    """Display text of a cell: long decimals rounded to DECIMALS places (4 significant digits if tiny)."""
    if not _LONG_DECIMAL.match(text.strip()):
        return text
    value = float(text)
    if value != 0 and abs(value) < 10 ** -DECIMALS:
        return f"{value:.{DECIMALS}g}"
    return f"{value:.{DECIMALS}f}" if math.isfinite(value) else text


def render(name: str, header: list[str], rows: list[list[str]]) -> str:
    numeric = [bool(rows) and all(is_number(r[i]) or r[i] == "" for r in rows) for i in range(len(header))]
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(name)}</title><style>{STYLE}</style></head><body>",
           f"<h1>{html.escape(name)}</h1>",
           f'<p class="note">{len(rows)} rows &times; {len(header)} columns. Decimals are shortened to '
           f"{DECIMALS} places; hover a cell for its exact value in the CSV.</p>",
           f'<table data-source="{html.escape(name)}"><thead><tr>']
    out += [f"<th>{html.escape(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = []
        for i, text in enumerate(row):
            body = html.escape(shown(text))
            if numeric[i]:
                cells.append(f'<td class="num" title="{html.escape(text)}">{body}</td>')
            elif len(text) > LONG:
                cells.append(f'<td class="long" title="{html.escape(text)}"><div>{body}</div></td>')
            else:
                cells.append(f'<td title="{html.escape(text)}">{body}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></body></html>")
    return "\n".join(out) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    source, target = map(Path, argv)
    with source.open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    widths = {len(r) for r in rows}
    if widths - {len(header)}:
        sys.exit(f"{source}: rows have {sorted(widths)} cells but the header has {len(header)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(source.name, header, rows), encoding="utf-8")


if __name__ == "__main__":
    main()
