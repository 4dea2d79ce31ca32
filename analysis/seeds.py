"""How many seeds a table of per-run scores holds, and the views of it by seeds.

A study's runs are cells of (setting, task) with one run per seed. The paper's protocol is 3 seeds (:data:`PAPER_SEEDS`,
seeds 0-2); a grid that trains more seeds publishes them a few at a time, so a table may hold cells with different
numbers of seeds. :func:`seed_counts` says what the table holds, in words a report prints beside it
(:meth:`SeedCounts.text`), and which interval method its smallest cell allows
(:func:`analysis.stats.interval_method_for`); :func:`first_seeds` is the view of seeds 0..n-1, the paper's
protocol at n = 3.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.stats import INTERVAL_METHODS, interval_method_for

PAPER_SEEDS = 3  # the paper's protocol: 3 seeds (Sec. 6.1), seeds 0-2 here


def seed_span(n: int) -> str:
    """Seeds 0..n-1 as a reader says them: 'seed 0', 'seeds 0–1', 'seeds 0–9'."""
    return "seed 0" if n == 1 else f"seeds 0–{n - 1}"


@dataclass(frozen=True)
class SeedCounts:
    """What a score table holds: ``cells`` maps a number of seeds to how many (setting, task) cells have it;
    ``common`` is the largest n for which every cell has each of seeds 0..n-1 (0 when a cell lacks seed 0)."""

    cells: dict[int, int]
    common: int

    @property
    def low(self) -> int:
        return min(self.cells)

    @property
    def high(self) -> int:
        return max(self.cells)

    @property
    def equal(self) -> bool:
        return len(self.cells) == 1

    @property
    def method(self) -> str:
        """The interval method its smallest cell allows (:func:`analysis.stats.interval_method_for`)."""
        return interval_method_for(self.low)

    def short(self) -> str:
        """'3 seeds', or '3 to 10 seeds' when cells differ."""
        return f"{self.low} seeds" if self.equal else f"{self.low} to {self.high} seeds"

    def text(self) -> str:
        """One sentence: the seeds per cell, unequal counts spelled out, and the interval method."""
        n_cells = sum(self.cells.values())
        if self.equal:
            held = f"{self.low} seeds in each of the {n_cells} (setting, task) cells"
            if self.common == self.low:
                held += f" ({seed_span(self.low)})"
        else:
            parts = ", ".join(f"{cells} have {n}" for n, cells in sorted(self.cells.items()))
            held = (f"unequal seeds: {self.low} to {self.high} per (setting, task) cell (of the {n_cells} cells, "
                    f"{parts}; every cell has {seed_span(self.common)}), each cell's mean over the seeds it has")
        return (f"{held}; intervals: {INTERVAL_METHODS[self.method]}, chosen by the smallest cell "
                f"({self.low} seeds; analysis.stats.BOOTSTRAP_FROM).")


def seed_counts(scores: pd.DataFrame, by: tuple[str, ...] = ("variant", "task")) -> SeedCounts:
    """The seeds per cell of ``scores`` (one row per run: ``variant``, ``task``, ``seed``)."""
    if scores.empty:
        raise ValueError("no runs: no seed counts")
    groups = scores.groupby(list(by))["seed"]
    per_cell = groups.nunique()
    common = 0
    seeds = [set(s) for s in groups.agg(lambda s: frozenset(int(k) for k in s))]
    while all(common in s for s in seeds):
        common += 1
    return SeedCounts({int(n): int(c) for n, c in per_cell.value_counts().sort_index().items()}, common)


def first_seeds(scores: pd.DataFrame, n: int) -> pd.DataFrame:
    """The runs of seeds 0..n-1: the view of the paper's protocol at n = :data:`PAPER_SEEDS`."""
    return scores[scores["seed"] < n]
