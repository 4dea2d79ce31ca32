"""A study: tasks × variants × seeds at one scale, and how its runs are packed into training groups.

Both the Snakefile (to plan jobs) and ``python -m ppo.run`` (to execute one group) resolve runs here, so
a run means the same thing in both places.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .config import EXPERIMENTS_DIR, ConfigError, Variant, _check_keys, _read_yaml, load_variant
from .envs import check_task, task_name

STUDY_KEYS = {"description", "tasks", "variants", "anchor", "reference_table", "scales"}
SCALE_KEYS = {"label", "total_steps", "seeds", "tasks", "reduced"}


@dataclass(frozen=True)
class Run:
    task: str
    variant: Variant
    seed: int

    @property
    def run_id(self) -> str:
        return f"{self.task}/{self.variant.name}/seed{self.seed}"

    @property
    def config_digest(self) -> str:
        """Changes whenever the resolved config changes, so Snakemake re-runs exactly those runs."""
        blob = json.dumps(self.variant.config.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Group:
    """Runs trained together in one process (same task, same non-objective settings)."""

    group_id: str
    task: str
    runs: tuple[Run, ...]


@dataclass(frozen=True)
class Study:
    name: str
    scale: str
    label: str
    reduced: bool
    tasks: tuple[str, ...]
    variants: tuple[Variant, ...]
    seeds: int
    total_steps: int
    anchor: str
    path: Path

    def runs(self) -> list[Run]:
        return [Run(t, v, s) for t in self.tasks for v in self.variants for s in range(self.seeds)]

    def groups(self, group_size: int = 0, runs: list[Run] | None = None) -> list[Group]:
        """Pack each task's runs (default: all) into groups of at most ``group_size`` (0 = no limit)
        that can share batched tensors. Grouping never changes a run's results, only how many
        processes train them."""
        runs = self.runs() if runs is None else runs
        groups = []
        for task in self.tasks:
            by_structure: dict[tuple, list[Run]] = {}
            for run in (r for r in runs if r.task == task):
                by_structure.setdefault(run.variant.config.structural_key(), []).append(run)
            chunks = []
            for members in by_structure.values():
                size = group_size or len(members)
                chunks += [members[i:i + size] for i in range(0, len(members), size)]
            for i, chunk in enumerate(chunks):
                groups.append(Group(f"{task_name(task)}-{i}", task, tuple(chunk)))
        return groups


def _positive_int(value, field: str, path: Path) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{path}: field {field} must be a positive integer, got {value!r}")
    return value


def load_study(name: str, scale: str, seeds: int | None = None, experiments_dir: Path = EXPERIMENTS_DIR) -> Study:
    """Resolve ``experiments/studies/<name>.yaml`` at ``scale``; every error names the file and field."""
    path = experiments_dir / "studies" / f"{name}.yaml"
    data = _read_yaml(path)
    _check_keys(data, STUDY_KEYS, {"tasks", "variants", "scales", "anchor"}, path)
    scales = data["scales"]
    if scale not in scales:
        raise ConfigError(f"{path}: scale {scale!r} is not defined; defined scales: {sorted(scales)}")
    sc = scales[scale]
    _check_keys(sc, SCALE_KEYS, {"total_steps", "seeds", "label"}, Path(f"{path} (scales.{scale})"))
    total_steps = _positive_int(sc["total_steps"], f"scales.{scale}.total_steps", path)
    n_seeds = _positive_int(seeds if seeds is not None else sc["seeds"],
                            "seeds" if seeds is not None else f"scales.{scale}.seeds", path)
    tasks = tuple(sc.get("tasks") or data["tasks"])
    duplicated = sorted({t for t in tasks if tasks.count(t) > 1})
    if duplicated:
        raise ConfigError(f"{path}: tasks lists {duplicated} more than once")
    for task in tasks:
        check_task(task, f"{path}: tasks")
    available = sorted(p.stem for p in (experiments_dir / "variants").glob("*.yaml"))
    names: list[str] = []
    for pattern in data["variants"]:
        matched = fnmatch.filter(available, pattern)
        if not matched:
            raise ConfigError(f"{path}: variants entry {pattern!r} matches no file in {experiments_dir / 'variants'}")
        names += [m for m in matched if m not in names]
    variants = tuple(load_variant(n, experiments_dir, total_steps=total_steps) for n in names)
    if data["anchor"] not in names:
        raise ConfigError(f"{path}: anchor {data['anchor']!r} is not one of the study's variants")
    return Study(name, scale, sc["label"], bool(sc.get("reduced", True)), tasks, variants, n_seeds,
                 total_steps, data["anchor"], path)
