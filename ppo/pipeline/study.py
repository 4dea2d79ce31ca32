"""A study: tasks × variants × seeds at one scale, and how its runs are packed into training groups.

The planners (the Snakefile, ppo.pipeline.remote) resolve runs here and write each pending job's runs into its
plan (ppo.pipeline.plan), which ``python -m ppo.pipeline.job`` reads: a run is resolved once, in one place.
A study file may name parts of itself (``selections``: the Atari games trained at the paper's budget), which the
shell commands read with ``python -m ppo.pipeline.study --study atari --selection three --print tasks``.
"""
from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..config.errors import ConfigError, check_name, show
from ..config.experiments import Variant, load_variant
from ..config.files import EXPERIMENTS_DIR, check_keys, check_mapping, check_name_list, check_positive_int, read_yaml
from ..config.protocols import load_protocol
from ..config.registry import specs
from ..config.run_config import RunConfig
from ..config.schema import recorded_digest, settings_digest
from ..envs import family_of
from ..envs.family import task_name
from ..training.layout import RUN_FILES, run_dir, run_id
from ..training.records import changed_record
from .reports import REPORTS  # the analysis a study's results get
from .rlhf_study import load_rlhf_study

STUDY_KEYS = {"kind", "description", "tasks", "variants", "presets", "anchor", "report", "scales", "selections"}
SELECTION_KEYS = {"tasks", "variants"}
KINDS = ("mujoco", "rlhf")  # a study file's kind: tasks x variants x seeds (default), or ppo/pipeline/rlhf_study.py's grid
SCALE_KEYS = {"label", "total_steps", "seeds", "tasks", "variants", "reduced"}
MAX_SEEDS = 1000  # runs per task and variant: more would exhaust memory while planning
MAX_TOTAL_STEPS = 10**10  # environment steps per run: more would never finish
Selection = tuple[str, tuple[str, ...], tuple[str, ...]]  # a study's named part: (name, tasks, variants)


@dataclass(frozen=True)
class Run:
    task: str
    variant: Variant
    seed: int

    @property
    def run_id(self) -> str:
        return run_id(self.task, self.variant.name, self.seed)

    @property
    def config_digest(self) -> str:
        """Changes whenever the resolved config changes, so Snakemake re-runs exactly those runs."""
        return config_digest(self.variant.config, protocol_settings(self.variant.config))


def protocol_settings(config: RunConfig) -> dict | None:
    """The settings of the environment protocol file ``config`` names (experiments/protocols/, Atari), which are
    part of what its run means; None for a config without one."""
    return None if config.env_protocol is None else load_protocol(config.env_protocol).to_dict()


def config_digest(config: RunConfig, protocol: dict | None) -> str:
    """A run's config digest: its config's record with its protocol's settings (``protocol_settings``). The
    planner digests a run's resolved config with it, and the job (ppo.pipeline.plan) the config its plan holds."""
    settings = config.to_dict()
    if protocol is not None:
        settings["env_protocol"] = protocol
    return settings_digest(settings)


@dataclass(frozen=True)
class Group:
    """Runs trained together in one process (same task, same non-objective settings)."""

    group_id: str
    task: str
    runs: tuple[Run, ...]

    @property
    def first_seed(self) -> int:
        """Its lowest seed: grids train a seed at a time (ppo.pipeline.carry.train_priority)."""
        return min(run.seed for run in self.runs)


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
    report: str = "table1"
    presets: tuple[tuple[str, str], ...] = ()  # (preset a variant names, preset applied instead): field presets
    selections: tuple[Selection, ...] = ()  # the study file's field selections
    kind = "mujoco"  # trained by ppo.pipeline.job in groups (an RLHF study, ppo.pipeline.rlhf_study.RLHFStudy, by ppo.pipeline.rlhf_job)
    run_files = RUN_FILES  # what a finished run has written

    def runs(self) -> list[Run]:
        return [Run(t, v, s) for t in self.tasks for v in self.variants for s in range(self.seeds)]

    def selection(self, name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(tasks, variants) of the study file's selection ``name``, to narrow the study with (``narrowed``)."""
        return _named_selection(self.selections, name, self.path)

    def groups(self, group_size: int = 0, runs: list[Run] | None = None) -> list[Group]:
        """Pack each task's runs (default: all) into groups of at most ``group_size`` (0 = no limit)
        that can share batched tensors, a seed of every variant before the next seed: Table 1's groups of 11
        are its 11 settings at one seed, so a grid that trains them a seed at a time (ppo.pipeline.carry.train_priority)
        and stops partway leaves whole seeds across the table. Grouping never changes a run's results, only how
        many processes train them."""
        runs = self.runs() if runs is None else runs
        groups = []
        for task in self.tasks:
            by_structure: dict[tuple, list[Run]] = {}
            for run in (r for r in runs if r.task == task):
                by_structure.setdefault(run.variant.config.structural_key(), []).append(run)
            chunks = []
            for members in by_structure.values():
                members.sort(key=lambda run: run.seed)  # stable: the study's variant order within a seed
                size = group_size or len(members)
                chunks += [members[i:i + size] for i in range(0, len(members), size)]
            counts: dict[str, int] = {}
            for chunk in chunks:  # e.g. Hopper-ppo-0, Hopper-ppo-1, Hopper-trpo-0
                algorithm = chunk[0].variant.config.algorithm_key.replace("_", "-")
                counts[algorithm] = counts.get(algorithm, -1) + 1
                groups.append(Group(f"{task_name(task)}-{algorithm}-{counts[algorithm]}", task, tuple(chunk)))
        return groups


def shared_runs(studies: list[Study]) -> dict[tuple[str, str], tuple[Study, Run]]:
    """Runs that an earlier study in ``studies`` also has: (study name, run id) -> (that study, its run).

    Same task, seed and resolved configuration (config digest) means the same records: a run's results
    depend on those alone, never on its study or on the runs that share its group
    (tests/training/test_group_training.py). So Figure 3's PPO runs are copies of Table 1's ε = 0.2 runs, not a
    second training of them. Within one study, two identical variants both train (each is asked for)."""
    first: dict[tuple, tuple[Study, Run]] = {}
    shared = {}
    for study in studies:
        for run in study.runs():
            key = (run.task, run.seed, run.config_digest)
            owner = first.setdefault(key, (study, run))
            if owner[0].name != study.name:
                shared[(study.name, run.run_id)] = owner
    return shared


def run_digest(study: Study, manifest: dict) -> str | None:
    """The config digest of a finished run of ``study`` as today's plan computes it. A MuJoCo or Atari run's config
    has schema versions (ppo.config.schema.recorded_digest reads an older one in today's shape); an RLHF run's has
    none, and its manifest records the digest of its config (ppo.pipeline.rlhf_study.RLHFRun.config_digest). Read as
    a schema-1 MuJoCo record, an RLHF config was "migrated" and never matched: no RLHF run counted as finished."""
    return manifest.get("config_digest") if study.kind == "rlhf" else recorded_digest(manifest)


def is_current(results: Path | str, study: Study, run: Run) -> bool:
    """Finished, with every record, under the configuration the study now resolves for it."""
    folder = run_dir(results, study, run)
    if not all((folder / name).exists() for name in study.run_files):
        return False
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        if run_digest(study, manifest) != run.config_digest:
            return False
    except (OSError, ValueError, RecursionError, AttributeError, KeyError, TypeError):  # unreadable: not finished
        return False
    identity = {"task": run.task, "variant": run.variant.name, "seed": run.seed}
    changed = next((f"{folder / 'manifest.json'}: field {k} is {manifest.get(k)!r}, but the run in this folder is "
                    f"{v!r}" for k, v in identity.items() if k in manifest and manifest[k] != v), None)
    changed = changed or changed_record(folder, manifest)
    if changed:  # not finished: trained again (or, published, not copied), said once per file
        if changed not in _said:
            _said.add(changed)
            print(f"warning: {changed}; the run is treated as not finished", file=sys.stderr)
        return False
    return True


_said: set[str] = set()


def plan_groups(studies: list[Study], group_size: int, results: Path | str,
                published: Path | str | None = None) -> list[tuple[Study, Group]]:
    """The training jobs of a pipeline run over ``studies``: the runs that are neither finished (in
    ``results``, or in ``published``, the project's published runs) nor copies of another study's run
    (shared_runs), packed into groups. The workflow and ppo.pipeline.remote both plan here, so a group (and its
    checkpoint's name) is the same on every machine."""
    shared = shared_runs(studies)
    planned = []
    for study in studies:
        if study.kind != "mujoco":  # one job per run (workflow/rules/rlhf.smk), not ppo.pipeline.job's groups
            continue
        pending = [r for r in study.runs()
                   if (study.name, r.run_id) not in shared and not is_current(results, study, r)
                   and not (published is not None and is_current(published, study, r))]
        planned += [(study, group) for group in study.groups(group_size, pending)]
    return planned


def _natural_key(name: str) -> tuple:
    parts = re.split(r"(\d+(?:\.\d+)?)", name)  # str, number, str, ..., str: comparable position by position
    return tuple(float(part) if i % 2 else part for i, part in enumerate(parts))


def narrowed(study: Study, tasks: list[str] | None = None, variants: list[str] | None = None,
             source: str = "pipeline config") -> Study:
    """The study with only ``tasks`` and ``variants`` of its own (None: all). Its runs are the same runs as in
    the whole study (same folders, digests and published copies), so a part of a large study can be trained
    and reported first: the three Atari games of the paper scale, PPO before A2C."""
    if tasks is not None:
        unknown = [t for t in tasks if t not in study.tasks]
        if unknown:
            raise ConfigError(f"{source}: field tasks: {show(unknown[0])} is not a task of study {study.name} at "
                              f"scale {study.scale} ({study.path}); its tasks: {list(study.tasks)}")
        study = dataclasses.replace(study, tasks=tuple(t for t in study.tasks if t in tasks))
    if variants is not None:
        names = [v.name for v in study.variants]
        unknown = [v for v in variants if v not in names]
        if unknown:
            raise ConfigError(f"{source}: field variants: {show(unknown[0])} is not a variant of study {study.name} "
                              f"at scale {study.scale} ({study.path}); its variants: {names}")
        if study.anchor not in variants:
            raise ConfigError(f"{source}: field variants must keep the study's anchor {study.anchor!r} ({study.path}): "
                              f"its reports set every variant beside it")
        study = dataclasses.replace(study, variants=tuple(v for v in study.variants if v.name in variants))
    return study


def load_study(name: str, scale: str, seeds: int | None = None, experiments_dir: Path = EXPERIMENTS_DIR) -> Study:
    """Resolve ``experiments/studies/<name>.yaml`` at ``scale``; every error is one line naming the file
    and field. ``seeds`` (the pipeline config's ``seeds``) overrides the scale's number of seeds."""
    path = experiments_dir / "studies" / f"{name}.yaml"
    check_name(name, "study name", f"pipeline config (studies), {path}")
    check_name(scale, "scale", f"pipeline config (scale), {path}")
    data = read_yaml(path)
    kind = data.get("kind", "mujoco")
    if kind not in KINDS:
        raise ConfigError(f"{path}: field kind must be one of {list(KINDS)}, got {show(kind)}")
    if kind == "rlhf":
        return load_rlhf_study(name, scale, data, path, seeds, experiments_dir / "rlhf")
    check_keys(data, STUDY_KEYS, {"tasks", "variants", "scales", "anchor"}, path)
    sc, total_steps, n_seeds = _scale(data, scale, seeds, path)
    tasks = study_tasks = check_name_list(data["tasks"], "tasks", path)
    task_field = f"scales.{scale}.tasks" if "tasks" in sc else "tasks"  # a scale's own list replaces it
    if "tasks" in sc:
        tasks = check_name_list(sc["tasks"], task_field, path)
    for task in tasks:
        family_of(task).check(task, f"{path}: field {task_field}")
    # a scale's own list replaces the study's (a variant that cannot mean itself at that budget is left out)
    variant_field = f"scales.{scale}.variants" if "variants" in sc else "variants"
    names = _variant_names(check_name_list(sc.get("variants", data["variants"]), variant_field, path),
                           variant_field, path, experiments_dir)
    anchor = data["anchor"]
    if not isinstance(anchor, str):
        raise ConfigError(f"{path}: field anchor must be a variant name, got {show(anchor)}")
    if anchor not in names:
        raise ConfigError(f"{path}: field anchor {show(anchor)} is not one of the study's variants {names}")
    presets = _preset_substitutions(data.get("presets", {}), path, experiments_dir)
    selections = _selections(data, path, experiments_dir)
    variants = tuple(load_variant(n, experiments_dir, presets=presets, total_steps=total_steps) for n in names)
    unused = sorted(set(presets) - {v.named_preset for v in variants})
    if unused:  # a typo would otherwise leave the variants on their own preset without a word
        named = sorted({v.named_preset or v.preset.name for v in variants})
        raise ConfigError(f"{path}: field presets: no variant of the study names preset {unused[0]!r} (its variants "
                          f"name {named})")
    _check_rows_and_labels(variants, name)
    _check_tasks_fit(variants, tasks, task_field, path)
    names_of_tasks = {task_name(t) for t in study_tasks}
    for variant in variants:  # a claim about a task the study never trains could never be checked
        unknown = [t for t in (variant.claim.tasks if variant.claim else ()) if t not in names_of_tasks]
        if unknown:
            raise ConfigError(f"{variant.path}: field claim.tasks: {unknown[0]!r} is not a task of study {name} "
                              f"({path}: tasks {sorted(names_of_tasks)})")
    report = data.get("report", "table1")
    if report not in REPORTS:
        raise ConfigError(f"{path}: field report must be one of {list(REPORTS)}, got {show(report)}")
    return Study(name, scale, sc["label"], sc.get("reduced", True), tasks, variants, n_seeds,
                 total_steps, anchor, path, report, tuple(presets.items()), selections)


def load_selection(name: str, selection: str,
                   experiments_dir: Path = EXPERIMENTS_DIR) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tasks, variants) of the selection ``selection`` of ``experiments/studies/<name>.yaml``, read without
    resolving the study at a scale (the shell commands: ./repro atari-three, scripts/paper_grid.sh)."""
    path = experiments_dir / "studies" / f"{name}.yaml"
    check_name(name, "study name", str(path))
    data = read_yaml(path)
    if not isinstance(data, dict) or data.get("kind", "mujoco") != "mujoco":
        raise ConfigError(f"{path}: field selections: only a study of tasks x variants (kind mujoco) names selections")
    return _named_selection(_selections(data, path, experiments_dir), selection, path)


def _selections(data: dict, path: Path, experiments_dir: Path) -> tuple[Selection, ...]:
    """The study file's ``selections``: {name: {tasks: [...], variants: [...]}}, parts of the study named once
    (the three Atari games of ./repro atari-three), each task one of the study's ``tasks`` and each variant one
    its ``variants`` patterns match."""
    value = data.get("selections", {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: field selections must be a mapping {{name: {{tasks: [...], variants: [...]}}}}, "
                          f"got {show(value)}")
    if not value:
        return ()
    tasks = check_name_list(data.get("tasks"), "tasks", path)
    patterns = check_name_list(data.get("variants"), "variants", path)
    variants = _variant_names(patterns, "variants", path, experiments_dir)
    out = []
    for name, entry in value.items():
        check_name(name, "field selections: a selection's name", str(path))
        entry = check_mapping(entry, f"selections.{name}", path)
        check_keys(entry, SELECTION_KEYS, SELECTION_KEYS, path, prefix=f"selections.{name}.")
        chosen = {}
        for field, known in (("tasks", tasks), ("variants", variants)):
            chosen[field] = check_name_list(entry[field], f"selections.{name}.{field}", path)
            unknown = [v for v in chosen[field] if v not in known]
            if unknown:
                raise ConfigError(f"{path}: field selections.{name}.{field}: {show(unknown[0])} is not one of the "
                                  f"study's {field} ({list(known)})")
        out.append((name, chosen["tasks"], chosen["variants"]))
    return tuple(out)


def _named_selection(selections: tuple[Selection, ...], name: str,
                     path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    for known, tasks, variants in selections:
        if known == name:
            return tasks, variants
    raise ConfigError(f"{path}: field selections has no selection {show(name)} (it has {[s[0] for s in selections]})")


def _scale(data: dict, scale: str, seeds: int | None, path: Path) -> tuple[dict, int, int]:
    """The study's ``scales.<scale>`` section checked, its steps per run, and its number of seeds (or
    ``seeds``, the pipeline config's override)."""
    scales = check_mapping(data["scales"], "scales", path)
    if scale not in scales:
        raise ConfigError(f"{path}: scale {scale!r} (config scale) is not defined; "
                          f"defined scales: {sorted(map(str, scales))}")
    sc = check_mapping(scales[scale], f"scales.{scale}", path)
    check_keys(sc, SCALE_KEYS, {"total_steps", "seeds", "label"}, Path(f"{path} (scales.{scale})"))
    if not isinstance(sc["label"], str) or len(sc["label"]) > 500 or not sc["label"].isprintable():
        raise ConfigError(f"{path}: field scales.{scale}.label must be one line of text (at most 500 characters), "
                          f"got {show(sc['label'])}")
    if not isinstance(sc.get("reduced", True), bool):
        raise ConfigError(f"{path}: field scales.{scale}.reduced must be true or false, got {show(sc['reduced'])}")
    total_steps = check_positive_int(sc["total_steps"], f"scales.{scale}.total_steps", path, MAX_TOTAL_STEPS)
    if seeds is None:
        n_seeds = check_positive_int(sc["seeds"], f"scales.{scale}.seeds", path, MAX_SEEDS)
    else:
        n_seeds = check_positive_int(seeds, "seeds", f"pipeline config (overriding {path} scales.{scale}.seeds)", MAX_SEEDS)
        if n_seeds != sc.get("seeds"):  # the label says the scale's seeds; the runs' manifests and reports quote it
            sc = {**sc, "label": f"{sc['label']}; here {n_seeds} seeds (the pipeline config's seeds)"}
    return sc, total_steps, n_seeds


# A study of more variants than the pipeline plans runs (workflow/rules/common.smk MAX_PLANNED_RUNS) is refused
# before any variant file is read: 10,000 files were read and validated for minutes in silence first.
MAX_VARIANTS = 3000


def _variant_names(patterns: list[str], field: str, path: Path, experiments_dir: Path) -> list[str]:
    """The variant files the study's patterns match, in natural order (numbers in names compared as numbers:
    kl_fixed_0.3, _1, _3, _10, the paper's order, not _1, _10, _3); overlapping patterns are fine."""
    available = sorted((p.stem for p in (experiments_dir / "variants").glob("*.yaml")), key=_natural_key)
    matches: dict[str, None] = {}  # ordered and unique
    for pattern in patterns:
        matched = fnmatch.filter(available, pattern)
        if not matched:
            raise ConfigError(f"{path}: field {field}: entry {show(pattern)} matches no file in "
                              f"{experiments_dir / 'variants'}")
        matches.update(dict.fromkeys(matched))
    names = list(matches)
    if len(names) > MAX_VARIANTS:
        raise ConfigError(f"{path}: field {field}: its entries match {len(names):,} variant files, more than the "
                          f"{MAX_VARIANTS:,} runs a plan can hold; name fewer (nothing was read or started)")
    folded = {}
    for variant_name in names:  # one folder on a case-insensitive file system: the runs would overwrite each other
        first = folded.setdefault(variant_name.casefold(), variant_name)
        if first != variant_name:
            raise ConfigError(f"{path}: field {field}: variants {first!r} and {variant_name!r} differ only by "
                              f"case; rename one of experiments/variants/{variant_name}.yaml")
    return names


def _check_rows_and_labels(variants: tuple[Variant, ...], study: str) -> None:
    """A label names a row of every table and a line of every figure, and a paper row (Table 1's number)
    is printed beside one of our rows: each belongs to one variant of the study."""
    labels: dict[str, Variant] = {}
    rows: dict[tuple, Variant] = {}
    for variant in variants:
        if variant.label in labels:
            raise ConfigError(f"{variant.path}: field label {variant.label!r} is already the label of "
                              f"{labels[variant.label].path.name}; each variant of study {study} needs its own")
        labels[variant.label] = variant
        row = (variant.paper_row["setting"], variant.paper_row["param"]) if variant.paper_row else None
        if row in rows:
            raise ConfigError(f"{variant.path}: field paper_row {{setting: {row[0]}, param: {row[1]!r}}} is already "
                              f"claimed by {rows[row].path.name}; each row of Table 1 belongs to one variant of "
                              f"study {study}")
        if row is not None:
            rows[row] = variant


def _check_tasks_fit(variants: tuple[Variant, ...], tasks: tuple[str, ...], task_field: str, path: Path) -> None:
    """Every variant can train every task: an Atari variant needs Atari tasks (a MuJoCo one MuJoCo tasks), and
    discrete actions an algorithm implemented for them."""
    takers = [name for name, spec in specs().items() if spec.discrete_mlp]
    for variant in variants:
        wrong = [t for t in tasks if family_of(t).observation != variant.config.observation]
        if wrong:
            kind = "an Atari" if variant.config.observation == "pixels" else "a vector-observation (MLP)"
            raise ConfigError(f"{path}: field {task_field}: {wrong[0]!r} cannot be trained by variant "
                              f"{variant.name} ({variant.path}), {kind} configuration (network {variant.config.network})")
        discrete = [t for t in tasks if family_of(t).observation == "vector" and family_of(t).discrete(t)]
        if discrete and variant.config.algorithm not in takers:
            raise ConfigError(f"{path}: field {task_field}: {discrete[0]!r} has discrete actions, which variant "
                              f"{variant.name} ({variant.path}) cannot train: algorithm {variant.config.algorithm} is "
                              f"implemented for continuous actions only (discrete: {', '.join(takers)})")


def _preset_substitutions(value, path: Path, experiments_dir: Path) -> dict[str, str]:
    """The study's ``presets`` field: {preset a variant names: preset its overrides apply to instead}, both
    names of files in experiments/presets/. One study runs the same variant files on other tasks' settings
    (classic.yaml: Table 1's variants, written on ppo_mujoco_paper, on ppo_classic)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: field presets must be a mapping {{preset named by variants: preset to use}}, "
                          f"got {show(value)}")
    available = sorted(p.stem for p in (experiments_dir / "presets").glob("*.yaml"))
    for named, used in value.items():
        if named == used:
            raise ConfigError(f"{path}: field presets maps preset {named!r} to itself; leave it out")
        for name in (named, used):
            check_name(name, "field presets: preset", str(path))
            if name not in available:
                raise ConfigError(f"{path}: field presets: no preset {name!r} "
                                  f"({experiments_dir / 'presets' / name}.yaml does not exist); available: {available}")
    return dict(value)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Print a selection of a study file (its field selections), for the "
                                            "shell commands: one line per field asked for.")
    p.add_argument("--study", required=True, help="experiments/studies/<study>.yaml")
    p.add_argument("--selection", required=True, help="a name under the file's selections")
    p.add_argument("--print", nargs="+", choices=("tasks", "variants"), required=True, dest="fields",
                   help="the names, separated by spaces")
    p.add_argument("--as-config", action="store_true", help="as Snakemake's --config values: tasks=[a,b,c]")
    args = p.parse_args(argv)
    try:
        chosen = dict(zip(("tasks", "variants"), load_selection(args.study, args.selection)))
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    for field in args.fields:
        print(f"{field}=[{','.join(chosen[field])}]" if args.as_config else " ".join(chosen[field]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
