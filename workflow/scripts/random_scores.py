#!/usr/bin/env python
"""Summarize the random-policy episodes of each task: python workflow/scripts/random_scores.py OUT.csv IN.parquet..."""
import sys
from pathlib import Path

import pandas as pd

rows = []
for path in map(Path, sys.argv[2:]):
    returns = pd.read_parquet(path)["episode_return"]
    rows.append({"task": path.stem, "random_mean_return": returns.mean(), "std": returns.std(), "episodes": len(returns)})
pd.DataFrame(rows).to_csv(sys.argv[1], index=False)
