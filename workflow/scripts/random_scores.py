#!/usr/bin/env python
"""Summarize the random-policy episodes of each task: python workflow/scripts/random_scores.py OUT.csv IN.parquet..."""
import sys
from pathlib import Path

import pandas as pd

from analysis.io import RunDataError, read_parquet


def main(argv: list[str]) -> int:
    rows = []
    try:
        for path in map(Path, argv[1:]):
            returns = read_parquet(path, ["episode_return"]).column("episode_return").to_pandas()
            rows.append({"task": path.stem, "random_mean_return": returns.mean(), "std": returns.std(),
                         "episodes": len(returns)})
    except RunDataError as err:  # one line naming the file, never a pyarrow traceback
        print(f"random_scores: error: {err}", file=sys.stderr)
        return 1
    pd.DataFrame(rows).to_csv(argv[0], index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
