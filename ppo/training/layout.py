"""Where a study's files live, and how a run is named: the one definition the workflow (common.smk), the
training job (ppo.pipeline.job), the planner (ppo.pipeline.study, ppo.pipeline.plan, ppo.pipeline.remote,
ppo.pipeline.publish) and the analysis (analysis.io) use.

    <results>/<study>/<scale>/runs/<task>/<variant>/seed<k>/   a run's RUN_FILES (and model.pt)
    <results>/<study>/<scale>/plans/<job>-<key>.json           each pending job's plan (ppo.pipeline.plan)
    <results>/<study>/<scale>/checkpoints/<task>-<key>.pt      training groups' checkpoints
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


def group_key(run_dirs) -> str:
    """16 hex digits naming a job's set of run folders (their strings, in any order): a job's plan and its
    group's checkpoint carry it, so that differently packed groups never share either file."""
    return hashlib.sha256("\n".join(sorted(str(d) for d in run_dirs)).encode()).hexdigest()[:16]


def plans_dir(results: Path | str, study) -> Path:
    return study_dir(results, study) / "plans"


def plan_path(results: Path | str, study, job: str, run_dirs) -> Path:
    """<study>/plans/<job>-<key>.json: the plan of the job named ``job`` (``train_<group>``, ``copy_<source>``)
    that writes the runs in ``run_dirs``."""
    return plans_dir(results, study) / f"{job}-{group_key(run_dirs)}.json"


def checkpoint_path(results: Path | str, study, task: str, run_dirs) -> Path:
    """<study>/checkpoints/<task>-<key>.pt, the checkpoint of the group that trains ``task`` into ``run_dirs``
    (each ``run_dir(results, study, run)``): not a Snakemake output, so a failed job's checkpoint survives
    for the retry; the key keeps differently packed groups apart."""
    return checkpoints_dir(results, study) / f"{task.replace('/', '_')}-{group_key(run_dirs)}.pt"


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
