"""Read a study's run directories into three flat tables.

Each run lives in ``<runs_dir>/<task>/<variant>/seed<k>/`` with ``episodes.parquet``,
``updates.parquet`` and ``manifest.json``. All runs are concatenated once with pyarrow
(one ``to_pandas`` call per table) so a study of hundreds of runs loads in a second.
Every failure names the offending file, because a study is only as good as its worst run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppo.records import EPISODE_COLUMNS  # the schema the training side writes

UPDATE_COLUMNS = ("update", "global_step")
MANIFEST_KEYS = ("run_id", "task", "variant", "variant_label", "seed", "status")
RUN_COLUMNS = ("run_id", "task", "variant", "variant_label", "seed", "status")
RANDOM_COLUMNS = ("episode_return", "episode_length")


class RunDataError(ValueError):
    """A run file is missing, unreadable or lacks required fields."""


def find_run_dirs(runs_dir: str | Path) -> list[Path]:
    """Return the ``<task>/<variant>/seed*`` directories under ``runs_dir``, sorted."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise RunDataError(f"runs directory does not exist: {root}")
    dirs = sorted(p for p in root.glob("*/*/seed*") if p.is_dir())
    if not dirs:
        raise RunDataError(f"no run directories (<task>/<variant>/seed<k>) under {root}")
    return dirs


def read_manifest(path: str | Path) -> dict:
    """Load one manifest.json and check the keys the analysis relies on."""
    path = Path(path)
    if not path.is_file():
        raise RunDataError(f"missing manifest: {path}")
    try:
        manifest = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDataError(f"corrupt manifest {path}: {exc}") from exc
    if not isinstance(manifest, dict):
        raise RunDataError(f"manifest {path} is not a JSON object")
    missing = [k for k in MANIFEST_KEYS if k not in manifest]
    if missing:
        raise RunDataError(f"manifest {path} lacks keys {missing}")
    return manifest


def _read_parquet(path: Path, required: Iterable[str]) -> pa.Table:
    """Read a parquet file, turning every failure into an error naming the file."""
    if not path.is_file():
        raise RunDataError(f"missing file: {path}")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise RunDataError(f"corrupt parquet file {path}: {exc}") from exc
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise RunDataError(f"{path} lacks columns {missing}")
    return table


def _flatten_manifest(manifest: dict, run_dir: Path) -> dict:
    """Keep scalar manifest fields and split ``paper_row`` into two columns."""
    row = {k: v for k, v in manifest.items() if k != "paper_row" and not isinstance(v, (dict, list))}
    paper_row = manifest.get("paper_row")
    if paper_row is None:
        row["paper_setting"] = None
        row["paper_param"] = None
    elif isinstance(paper_row, dict) and "setting" in paper_row:
        row["paper_setting"] = str(paper_row["setting"])
        param = paper_row.get("param")
        row["paper_param"] = "" if param is None else str(param)
    else:
        raise RunDataError(
            f"manifest {run_dir / 'manifest.json'}: paper_row must be null or "
            f"{{'setting': ..., 'param': ...}}, got {paper_row!r}"
        )
    row["run_dir"] = str(run_dir)
    return row


def _concat_with_runs(tables: list[pa.Table], runs: pd.DataFrame) -> pd.DataFrame:
    """Concatenate per-run tables and attach the run columns by position (no merge)."""
    lengths = np.array([t.num_rows for t in tables], dtype=np.int64)
    merged = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    run_index = np.repeat(np.arange(len(tables)), lengths)
    meta = runs.loc[:, list(RUN_COLUMNS)].iloc[run_index].reset_index(drop=True)
    merged = merged.drop(columns=[c for c in RUN_COLUMNS if c in merged.columns])
    return pd.concat([meta, merged], axis=1)


def load_study(runs_dir: str | Path, run_dirs: Iterable[str | Path] | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Load every run under ``runs_dir``, or exactly ``run_dirs`` when given (the pipeline passes the
    study's current runs, so a run left over from an earlier seed count is not counted).

    Returns ``(episodes, updates, manifests)``: the first two are the concatenated
    parquet files with ``run_id, task, variant, variant_label, seed, status`` prepended;
    ``manifests`` has one row per run (scalar manifest fields, ``paper_setting``,
    ``paper_param`` and ``run_dir``).
    """
    run_dirs = find_run_dirs(runs_dir) if run_dirs is None else sorted(Path(d) for d in run_dirs)
    rows, episodes, updates = [], [], []
    for run_dir in run_dirs:
        rows.append(_flatten_manifest(read_manifest(run_dir / "manifest.json"), run_dir))
        episodes.append(_read_parquet(run_dir / "episodes.parquet", EPISODE_COLUMNS))
        updates.append(_read_parquet(run_dir / "updates.parquet", UPDATE_COLUMNS))
    manifests = pd.DataFrame(rows)
    duplicated = manifests["run_id"][manifests["run_id"].duplicated()]
    if not duplicated.empty:
        first = duplicated.iloc[0]
        dirs = manifests.loc[manifests["run_id"] == first, "run_dir"].tolist()
        raise RunDataError(f"run_id {first!r} appears in several runs: {dirs}")
    manifests["seed"] = manifests["seed"].astype("int64")
    return (
        _concat_with_runs(episodes, manifests),
        _concat_with_runs(updates, manifests),
        manifests,
    )


def load_random(paths: Iterable[str | Path]) -> pd.Series:
    """Mean random-policy return per task; the task is the file stem (``Hopper-v5``)."""
    means: dict[str, float] = {}
    for path in map(Path, paths):
        table = _read_parquet(path, RANDOM_COLUMNS)
        returns = table.column("episode_return").to_numpy().astype(float)
        if returns.size == 0 or not np.all(np.isfinite(returns)):
            raise RunDataError(f"{path} has no episodes or non-finite returns")
        if path.stem in means:
            raise RunDataError(f"two random-score files for task {path.stem!r} (one is {path})")
        means[path.stem] = float(returns.mean())
    if not means:
        raise RunDataError("no random-score files given")
    series = pd.Series(means, name="random_score", dtype=float)
    series.index.name = "task"
    return series
