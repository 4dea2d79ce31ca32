"""Where a study's files live, and how a run is named: the one definition the workflow (common.smk), the
training job (ppo.pipeline.job), the planner (ppo.pipeline.study, ppo.pipeline.remote, ppo.pipeline.publish) and the analysis (analysis.io) use.

    <results>/<study>/<scale>/runs/<task>/<variant>/seed<k>/   a run's RUN_FILES (and model.pt)
    <results>/<study>/<scale>/checkpoints/                     training groups' checkpoints
    <results>/<study>/<scale>/benchmarks/, report/             job timings, the study's report
    <logs>/<study>/<scale>/                                    job logs

A task id may hold one slash (``ALE/Pong-v5``), so a run folder is three or four levels below ``runs``.
Only plain values are read here (a study's ``name`` and ``scale``, a run's ``task``, ``variant.name`` and
``seed``), so this module imports nothing of the project.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

RUN_FILES = ("episodes.parquet", "updates.parquet", "timing.parquet", "manifest.json")


def run_id(task: str, variant: str, seed: int) -> str:
    """``<task>/<variant>/seed<k>``: a run's name, and its folder below the study's runs folder."""
    return f"{task}/{variant}/seed{seed}"


def study_dir(results: Path | str, study) -> Path:
    return Path(results) / study.name / study.scale


def runs_dir(results: Path | str, study) -> Path:
    return study_dir(results, study) / "runs"


def report_dir(results: Path | str, study) -> Path:
    return study_dir(results, study) / "report"


def checkpoints_dir(results: Path | str, study) -> Path:
    return study_dir(results, study) / "checkpoints"


def benchmarks_dir(results: Path | str, study) -> Path:
    return study_dir(results, study) / "benchmarks"


def log_dir(logs: Path | str, study) -> Path:
    return Path(logs) / study.name / study.scale


def run_dir(results: Path | str, study, run) -> Path:
    """Where a run's records live: <results>/<study>/<scale>/runs/<task>/<variant>/seed<k>."""
    return runs_dir(results, study) / run_id(run.task, run.variant.name, run.seed)


def split_run_dir(run_dir: Path, tasks: tuple[str, ...] = ()) -> tuple[Path, str, str, str]:
    """``<runs>/<task>/<variant>/seed<k>`` -> (runs folder, task, variant, seed folder). The task is
    whichever of ``tasks`` the path ends with (a task may hold a slash), else the one folder above."""
    run_dir = Path(run_dir)
    task_dir = run_dir.parent.parent
    for task in tasks:
        depth = len(Path(task).parts)
        if task_dir.parts[-depth:] == Path(task).parts:
            return Path(*task_dir.parts[:-depth]), task, run_dir.parent.name, run_dir.name
    return task_dir.parent, task_dir.name, run_dir.parent.name, run_dir.name


def checkpoint_path(run_dirs: list[Path], tasks: tuple[str, ...] = ()) -> Path:
    """<study>/checkpoints/<task>-<hash of the group's run folders>.pt: not a Snakemake output, so a
    failed job's checkpoint survives for the retry; the hash keeps differently packed groups apart."""
    runs_root, task, _, _ = split_run_dir(run_dirs[0], tasks)
    key = hashlib.sha256("\n".join(sorted(str(d) for d in run_dirs)).encode()).hexdigest()[:16]
    return runs_root.parent / "checkpoints" / f"{task.replace('/', '_')}-{key}.pt"


def find_run_dirs(runs: Path | str) -> list[Path]:
    """Every ``<task>/<variant>/seed*`` folder under ``runs`` (a task of one or two folders), sorted."""
    root = Path(runs)
    return sorted(p for pattern in ("*/*/seed*", "*/*/*/seed*") for p in root.glob(pattern)
                  if p.is_dir() and not p.parent.name.startswith("seed"))


def settings_digest(settings: dict) -> str:
    """A run's config digest: changes whenever its resolved settings change, so the pipeline re-runs exactly
    those runs (MuJoCo, Atari and RLHF runs alike)."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
