"""Read a study's run directories into three flat tables.

Each run lives in ``<runs_dir>/<task>/<variant>/seed<k>/`` (ppo.training.layout; a task may hold a slash,
``ALE/Pong-v5``) with ``episodes.parquet``, ``updates.parquet``, ``timing.parquet`` and ``manifest.json``. All runs are concatenated once with pyarrow
(one ``to_pandas`` call per table) so a study of hundreds of runs loads in a second.
Every failure names the offending file, because a study is only as good as its worst run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from analysis.scores import final_scores
from ppo.pipeline.reports import REPORTS
from ppo.training import layout
# the schemas the training side writes, and how a record is read (one line naming the file on any failure)
from ppo.training.records import (EPISODE_COLUMNS, TIMING_COLUMNS, RunDataError, changed_record, one_line,  # noqa: F401
                                  read_parquet)

UPDATE_COLUMNS = ("update", "global_step")
MANIFEST_KEYS = ("run_id", "task", "variant", "variant_label", "seed", "status")
RUN_COLUMNS = ("run_id", "task", "variant", "variant_label", "seed", "status")
RANDOM_COLUMNS = ("episode_return", "episode_length")


class ReportError(ValueError):
    """Inputs that cannot produce a meaningful report."""


def load_scored_study(runs: Path, manifest_files: list[Path] | None, random_files: list[Path], window: int,
                      update_columns: Iterable[str] | None = None):
    """What the MuJoCo reports start from: (episodes, updates, manifests, random_scores, scores). The runs are
    those of ``manifest_files`` (every run under ``runs`` if None), each task has our random-policy score, and
    at least one run has a finished episode (scores: analysis.scores.final_scores over ``window`` episodes)."""
    run_dirs = None if manifest_files is None else [m.parent for m in manifest_files]
    episodes, updates, manifests = load_study(runs, run_dirs, update_columns=update_columns)
    random_scores = load_random(random_files)
    check_random(manifests["task"].unique(), random_scores, random_files)
    scores = final_scores(episodes, window=window)
    if scores.empty:
        raise ReportError(f"no run under {runs} has a finished episode")
    return episodes, updates, manifests, random_scores, scores


def report_parser(report: str, description: str, reference_help: str, anchor_help: str = "the study's anchor variant",
                  window: int = 100) -> argparse.ArgumentParser:
    """The options every report script takes, and those its entry in ppo.pipeline.reports.REPORTS asks the workflow to
    pass (workflow/rules/analysis.smk: --random, --variant, --sb3-dir, --variant-files); a script adds its own."""
    entry = REPORTS[report]
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--runs", required=True, type=Path, help=f"results/<study>/<scale>/runs of a {report} study")
    p.add_argument("--manifests", nargs="+", type=Path, default=None,
                   help="only these runs (their manifest.json files); default: every run under --runs")
    p.add_argument("--reference-dir", required=True, type=Path, help=reference_help)
    p.add_argument("--out-dir", required=True, type=Path)
    p.add_argument("--budget-note", action="append", default=[],
                   help="budget or other difference from the paper (repeatable); printed on the outputs")
    if entry.random_scores:
        p.add_argument("--random", required=True, nargs="+", type=Path, help="results/random/<task>.parquet files")
    if entry.anchor:
        p.add_argument("--variant", default="clip_0.2", help=anchor_help)
    if entry.sb3_reference:
        p.add_argument("--sb3-dir", type=Path, default=None,
                       help="runs of benchmarks/mujoco_sb3_reference.py (published/sb3_reference) to compare with")
    if entry.variant_files:
        p.add_argument("--variant-files", nargs="*", type=Path, default=[],
                       help="experiments/variants/<name>.yaml of the study: their descriptions and claims")
    p.add_argument("--window", type=int, default=window, help="episodes in the final score (paper: 100)")
    p.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--curve-points", type=int, default=100)
    p.add_argument("--curve-smooth", type=int, default=10, help="episodes averaged per curve point")
    return p


def report_main(name: str, parse_args: Callable, run_report: Callable, argv=None) -> int:
    """A report script's entry point: a bad input (unreadable or malformed runs, an impossible table) is one
    line on stderr naming the file, and exit code 1; anything else is a bug and keeps its traceback."""
    args = parse_args(argv)
    try:
        run_report(args)
    except (ReportError, RunDataError) as exc:
        print(f"{name}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0


def find_run_dirs(runs_dir: str | Path) -> list[Path]:
    """Return the ``<task>/<variant>/seed*`` directories under ``runs_dir`` (ppo.training.layout), sorted."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise RunDataError(f"runs directory does not exist: {root}")
    dirs = layout.find_run_dirs(root)
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
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad JSON or UTF-8, a 5000-digit number
        raise RunDataError(f"corrupt manifest {path}: {one_line(exc)[:200]}") from exc
    if not isinstance(manifest, dict):
        raise RunDataError(f"manifest {path} is not a JSON object")
    missing = [k for k in MANIFEST_KEYS if k not in manifest]
    if missing:
        raise RunDataError(f"manifest {path} lacks keys {missing}")
    return manifest




def _flatten_manifest(manifest: dict, run_dir: Path) -> dict:
    """Keep scalar manifest fields, split ``paper_row`` into two columns and keep ``group`` (the
    run ids trained in the same process) as a tuple."""
    row = {k: v for k, v in manifest.items() if k != "paper_row" and not isinstance(v, (dict, list))}
    if "group" in manifest:
        group = manifest["group"]
        if not (isinstance(group, list) and group and all(isinstance(g, str) for g in group)):
            raise RunDataError(
                f"manifest {run_dir / 'manifest.json'}: group must be a non-empty list of run ids, got {group!r}"
            )
        row["group"] = tuple(group)
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


def _check_schemas(tables: list[pa.Table], paths: list[Path]) -> None:
    """Name the first file whose columns cannot be merged with the runs before it (e.g. a column
    that is a float in one algorithm's records and a bool in another's)."""
    schema = tables[0].schema
    for table, path in zip(tables[1:], paths[1:]):
        try:
            schema = pa.unify_schemas([schema, table.schema], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
            raise RunDataError(f"{path}: column types clash with earlier runs' {path.name} files: {exc}") from exc


def _concat_with_runs(tables: list[pa.Table], runs: pd.DataFrame, paths: list[Path]) -> pd.DataFrame:
    """Concatenate per-run tables and attach the run columns by position (no merge)."""
    lengths = np.array([t.num_rows for t in tables], dtype=np.int64)
    _check_schemas(tables, paths)
    merged = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    run_index = np.repeat(np.arange(len(tables)), lengths)
    meta = runs.loc[:, list(RUN_COLUMNS)].iloc[run_index].reset_index(drop=True)
    merged = merged.drop(columns=[c for c in RUN_COLUMNS if c in merged.columns])
    return pd.concat([meta, merged], axis=1)


def load_study(runs_dir: str | Path, run_dirs: Iterable[str | Path] | None = None,
               update_columns: Iterable[str] | None = None,
               ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Load every run under ``runs_dir``, or exactly ``run_dirs`` when given (the pipeline passes the
    study's current runs, so a run left over from an earlier seed count is not counted).

    ``update_columns`` keeps only those ``updates.parquet`` columns (each required in every run):
    studies whose algorithms log different per-update metrics load just the common ones.

    Returns ``(episodes, updates, manifests)``: the first two are the concatenated
    parquet files with ``run_id, task, variant, variant_label, seed, status`` prepended;
    ``manifests`` has one row per run (scalar manifest fields, ``paper_setting``,
    ``paper_param``, ``run_dir`` and, when the manifest has it, ``group`` as a tuple).
    """
    run_dirs = find_run_dirs(runs_dir) if run_dirs is None else sorted(Path(d) for d in run_dirs)
    keep = None if update_columns is None else list(dict.fromkeys([*UPDATE_COLUMNS, *update_columns]))
    rows, episodes, updates = [], [], []
    for run_dir in run_dirs:
        manifest = read_manifest(run_dir / "manifest.json")
        changed = changed_record(run_dir, manifest)
        if changed:  # a record that is not what training wrote is never scored
            raise RunDataError(changed)
        rows.append(_flatten_manifest(manifest, run_dir))
        run_episodes = read_parquet(run_dir / "episodes.parquet", EPISODE_COLUMNS)
        has_timing = (run_dir / "timing.parquet").exists()  # then its wall-clock columns are added below
        required = [c for c in keep or UPDATE_COLUMNS if not (has_timing and c in TIMING_COLUMNS[2:])]
        table = read_parquet(run_dir / "updates.parquet", required)
        run_episodes, table = _attach_timing(run_dir, run_episodes, table)
        if keep is not None:
            missing = [c for c in keep if c not in table.column_names]
            if missing:
                raise RunDataError(f"{run_dir / 'updates.parquet'} lacks columns {missing}")
            table = table.select(keep)
        episodes.append(run_episodes)
        updates.append(table)
    manifests = pd.DataFrame(rows)
    duplicated = manifests["run_id"][manifests["run_id"].duplicated()]
    if not duplicated.empty:
        first = duplicated.iloc[0]
        dirs = manifests.loc[manifests["run_id"] == first, "run_dir"].tolist()
        raise RunDataError(f"run_id {first!r} appears in several runs: {dirs}")
    manifests["seed"] = manifests["seed"].astype("int64")
    return (
        _concat_with_runs(episodes, manifests, [d / "episodes.parquet" for d in run_dirs]),
        _concat_with_runs(updates, manifests, [d / "updates.parquet" for d in run_dirs]),
        manifests,
    )


def _attach_timing(run_dir: Path, episodes: pa.Table, updates: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Add the wall-clock columns of ``timing.parquet`` (kept apart so the other records are
    byte-identical across reruns): to updates row by row (same iterations), to episodes as the wall
    time interpolated at each episode's global_step between iteration ends. Records written before
    timing.parquet existed carry ``wall_time`` themselves and are returned as they are."""
    path = run_dir / "timing.parquet"
    if not path.exists():
        return episodes, updates
    timing = read_parquet(path, TIMING_COLUMNS).to_pandas()
    if len(timing) != updates.num_rows or not np.array_equal(
            timing["update"].to_numpy(), updates.column("update").to_numpy()):
        raise RunDataError(f"{path} does not match {run_dir / 'updates.parquet'} (other iterations)")
    for name in TIMING_COLUMNS[2:]:
        if name not in updates.column_names:
            updates = updates.append_column(name, pa.array(timing[name].to_numpy(dtype=float)))
    if "wall_time" not in episodes.column_names:
        steps = episodes.column("global_step").to_numpy().astype(float)
        wall = np.interp(steps, np.r_[0.0, timing["global_step"].to_numpy(float)], np.r_[0.0, timing["wall_time"].to_numpy(float)])
        episodes = episodes.append_column("wall_time", pa.array(wall))
    return episodes, updates


def load_random(paths: Iterable[str | Path]) -> pd.Series:
    """Mean random-policy return per task; the task is the file stem (``Hopper-v5``)."""
    means: dict[str, float] = {}
    for path in map(Path, paths):
        table = read_parquet(path, RANDOM_COLUMNS)
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


def check_random(tasks: Iterable[str], random_scores: pd.Series, files: Iterable[Path]) -> None:
    """Every task of the study needs a random score, or normalisation is impossible."""
    missing = sorted(set(tasks) - set(random_scores.index))
    if missing:
        raise ReportError(
            f"no random score for task(s) {missing}: expected results/random/<task>.parquet "
            f"among --random files {[str(f) for f in files]}"
        )
