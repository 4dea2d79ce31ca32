"""analysis.report_tables: the hand-rolled markdown formatter and CSV writer."""

from __future__ import annotations

import math

import pandas as pd

from analysis.report_tables import format_cell, to_markdown, write_table


def test_format_cell():
    assert format_cell(math.nan) == ""
    assert format_cell(None) == ""
    assert format_cell(3) == "3"
    assert format_cell(0.6666, 2) == "0.67"
    assert format_cell(1e6, 2, integral=True) == "1000000"
    assert format_cell("a|b\nc") == "a\\|b c"
    assert format_cell(True) == "True"


def test_to_markdown_exact():
    df = pd.DataFrame(
        {
            "variant": ["clip_0.2", "no|clip"],
            "n_runs": [21, 20],
            "ours": [0.8234, math.nan],
            "steps": [1e6, 5e4],
        }
    )
    text = to_markdown(df, notes=["50k steps  instead of 1M", "v5 envs"], title="T", digits={"ours": 3})
    assert text == (
        "# T\n\n"
        "**Differences from the paper**\n\n"
        "- 50k steps instead of 1M\n"
        "- v5 envs\n\n"
        "| variant | n_runs | ours | steps |\n"
        "|---|---:|---:|---:|\n"
        "| clip_0.2 | 21 | 0.823 | 1000000 |\n"
        "| no\\|clip | 20 |  | 50000 |\n"
    )
    assert to_markdown(df.iloc[0:0]).startswith("| variant |")


def test_write_table_round_trips(tmp_path):
    df = pd.DataFrame({"a": [1.123456789, 2.0], "b": ["x", "y"]})
    write_table(df, tmp_path / "t.csv", tmp_path / "t.md", notes=["n"])
    back = pd.read_csv(tmp_path / "t.csv")
    assert back["a"].tolist() == [1.123456789, 2.0]  # CSV keeps full precision
    assert "| 1.12 | x |" in (tmp_path / "t.md").read_text()
