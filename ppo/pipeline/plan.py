"""A job's plan: the resolved runs one training group (or one copy job) writes, as the planner resolved them.

    <results>/<study>/<scale>/plans/<job>-<key>.json      (ppo.training.layout.plan_path)

The planner (workflow/rules/common.smk; ppo.pipeline.remote) resolves a study once (ppo.pipeline.study) and writes
each pending job's runs into its plan: for each run its task, variant, seed, record folder, full resolved config,
the settings of the environment protocol it names, its config digest, what its manifest says of its place in the
study, and for a copy the finished run it copies. ``python -m ppo.pipeline.job --plan <file>`` reads the plan
(``read_plan``) and trains or copies exactly those runs: it reads no study, variant or preset file and parses no
path. The plan is a Snakemake input of its job, so it is rewritten only when its content changes (``write_plan``):
an unchanged plan keeps its mtime and retrains nothing, a changed one (a run's settings changed) is newer than
the job's outputs.

``read_plan`` checks the plan before anything is written, each refusal one line naming the file and the field:
the plan's format, each run's config (validated as a config file is), its name and folder as
ppo.training.layout makes them from its task, variant and seed, the protocol file it names still holding the
planned settings (the environments read that file), and its config digest recomputed from the config the plan
holds: a plan that no longer matches the experiment files or this code is refused, not trained.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from ..config.errors import ConfigError, check_name, show
from ..config.run_config import ALGORITHM_SETTINGS, RunConfig, build_config
from ..envs import family_of
from ..training import layout
from ..training.records import write_text_if_changed
from .study import Run, Study, config_digest, protocol_settings

PLAN_FORMAT = 1  # the shape of a plan file; a plan of another format is refused (plan again)
JOBS = ("train", "copy")
RUN_FIELDS = {"run_id", "task", "variant", "seed", "folder", "config", "env_protocol", "config_digest", "meta"}


def run_meta(study: Study, run: Run, digest: str | None = None) -> dict:
    """What the manifest says about the run's place in its study, beside what trained it (``digest``: the run's
    config digest, when the caller has it)."""
    return {"study": study.name, "scale": study.scale, "scale_label": study.label, "reduced": study.reduced,
            "variant": run.variant.name, "variant_label": run.variant.label, "paper_row": run.variant.paper_row,
            "preset": run.variant.preset.name, "overrides": run.variant.overrides,
            # the preset the variant file names, when the study applies its overrides to another (field presets)
            **({"variant_preset": run.variant.named_preset} if run.variant.named_preset else {}),
            "config_digest": run.config_digest if digest is None else digest}


def config_fields(config: RunConfig) -> dict:
    """Every field of ``config`` (the sections of other algorithms, unset, left out): what ``build_config`` turns
    back into the same RunConfig."""
    return {k: v for k, v in dataclasses.asdict(config).items() if not (k in ALGORITHM_SETTINGS and v is None)}


def make_plan(results: Path | str, study: Study, runs: list[Run], sources: list[Path | str] | None = None) -> dict:
    """The plan of the job that trains ``runs`` of ``study`` into ``results`` or, with ``sources`` (one finished
    run's folder per run), copies them from there."""
    entries, protocols = [], {}  # a protocol file read once per plan: 441 Atari jobs, 1,323 reads otherwise
    for i, run in enumerate(runs):
        config = run.variant.config
        if config.env_protocol not in protocols:
            protocols[config.env_protocol] = protocol_settings(config)
        protocol = protocols[config.env_protocol]
        digest = config_digest(config, protocol)  # = run.config_digest
        entry = {"run_id": run.run_id, "task": run.task, "variant": run.variant.name, "seed": run.seed,
                 "folder": str(layout.run_dir(results, study, run)), "config": config_fields(config),
                 "env_protocol": protocol, "config_digest": digest, "meta": run_meta(study, run, digest)}
        if sources is not None:
            entry["source"] = str(sources[i])
        entries.append(entry)
    return {"format": PLAN_FORMAT, "job": "train" if sources is None else "copy", "study": study.name,
            "scale": study.scale, "results": str(results), "runs": entries}


def write_plan(results: Path | str, study: Study, job: str, runs: list[Run],
               sources: list[Path | str] | None = None) -> Path:
    """Write the plan of the job named ``job`` (``train_<group>``, ``copy_<source>``) to its file, only if the
    file does not already hold it: its mtime moves only when its content does. Returns the file."""
    plan = make_plan(results, study, runs, sources)
    path = layout.plan_path(results, study, job, [entry["folder"] for entry in plan["runs"]])
    text = json.dumps(plan, indent=1, sort_keys=True, default=str) + "\n"
    write_text_if_changed(path, text)
    return path


@dataclass(frozen=True)
class PlannedRun:
    """One run of a plan, checked: what the driver trains (ppo.training.driver.RunSpec) or the copy checks."""

    run_id: str
    task: str
    variant: str
    seed: int
    folder: Path
    config: RunConfig
    config_digest: str
    meta: dict
    source: Path | None = None  # a copy job's: the finished run copied


@dataclass(frozen=True)
class Plan:
    path: Path
    job: str  # "train" | "copy"
    name: str  # the study's
    scale: str
    results: Path
    runs: tuple[PlannedRun, ...]

    @property
    def checkpoint(self) -> Path:
        """The group's checkpoint (a training job's)."""
        return layout.checkpoint_path(self.results, self, self.runs[0].task, [r.folder for r in self.runs])


def read_plan(path: Path) -> Plan:
    """The plan in ``path``, checked (see the module's docstring); else ConfigError, one line naming the file and
    the field, ending in what to do."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or type(err).__name__
        raise ConfigError(f"{path}: cannot read the job's plan ({why}); plan again (snakemake)") from None
    except (ValueError, RecursionError) as err:
        raise ConfigError(f"{path}: not a job's plan: not valid JSON ({type(err).__name__})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a job's plan (a JSON object), got {show(data)}")
    if data.get("format") != PLAN_FORMAT:
        raise ConfigError(f"{path}: field format is {show(data.get('format'))}, this code reads plans of format "
                          f"{PLAN_FORMAT}: plan again (snakemake)")
    unknown = sorted(map(str, set(data) - {"format", "job", "study", "scale", "results", "runs"}))
    if unknown:
        raise ConfigError(f"{path}: unknown field(s) {unknown} in a job's plan")
    if data.get("job") not in JOBS:
        raise ConfigError(f"{path}: field job must be one of {list(JOBS)}, got {show(data.get('job'))}")
    for field in ("study", "scale"):
        check_name(data.get(field), f"field {field}:", str(path))
    if not isinstance(data.get("results"), str) or not data["results"]:
        raise ConfigError(f"{path}: field results must be the results folder (a path), got {show(data.get('results'))}")
    entries = data.get("runs")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: field runs must be a non-empty list of runs, got {show(entries)}")
    plan = Plan(Path(path), data["job"], data["study"], data["scale"], Path(data["results"]), ())
    runs = tuple(_planned_run(plan, i, entry) for i, entry in enumerate(entries))
    seen: dict[Path, int] = {}
    for i, run in enumerate(runs):
        if run.folder in seen:
            raise ConfigError(f"{path}: field runs[{i}].folder: {run.folder} is also runs[{seen[run.folder]}]'s")
        seen[run.folder] = i
        if plan.job == "train" and run.task != runs[0].task:
            raise ConfigError(f"{path}: field runs[{i}].task is {run.task!r}, but runs[0]'s is {runs[0].task!r}: a "
                              "training group trains one task")
    return dataclasses.replace(plan, runs=runs)


def _planned_run(plan: Plan, i: int, entry) -> PlannedRun:
    """Runs[i] of ``plan``, checked."""
    where = f"{plan.path}: field runs[{i}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a run (a JSON object), got {show(entry)}")
    fields = RUN_FIELDS | ({"source"} if plan.job == "copy" else set())
    unknown, missing = sorted(map(str, set(entry) - fields)), sorted(fields - set(entry))
    if unknown or missing:
        wrong = f"unknown field(s) {unknown}" if unknown else f"missing field(s) {missing}"
        raise ConfigError(f"{where}: {wrong} (a {plan.job} job's run has {sorted(fields)})")
    for name in ("run_id", "task", "variant", "folder", "config_digest", *(("source",) if plan.job == "copy" else ())):
        if not isinstance(entry[name], str) or not entry[name]:
            raise ConfigError(f"{where}.{name} must be a non-empty string, got {show(entry[name])}")
    seed = entry["seed"]
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"{where}.seed must be an integer >= 0, got {show(seed)}")
    family_of(entry["task"]).check(entry["task"], f"{where}.task")
    for name in ("config", "meta"):
        if not isinstance(entry[name], dict):
            raise ConfigError(f"{where}.{name} must be a mapping, got {show(entry[name])}")
    config = build_config(entry["config"], f"{plan.path} (runs[{i}].config)")
    name = layout.run_id(entry["task"], entry["variant"], seed)
    if entry["run_id"] != name:
        raise ConfigError(f"{where}.run_id is {entry['run_id']!r}, but its task, variant and seed name {name!r}")
    folder = layout.runs_dir(plan.results, plan) / name
    if entry["folder"] != str(folder):
        raise ConfigError(f"{where}.folder is {entry['folder']!r}, but run {name} of study {plan.name} at scale "
                          f"{plan.scale} keeps its records in {str(folder)!r}")
    # The environments read the protocol file the config names: it must still hold the planned settings.
    planned = entry["env_protocol"]
    now = _as_json(protocol_settings(config))
    if _as_json(planned) != now:
        if not isinstance(planned, dict) or now is None:
            raise ConfigError(f"{where}.env_protocol is {show(planned)}, but config.env_protocol "
                              f"{show(config.env_protocol)} gives {show(now)}")
        key = next(k for k in sorted(set(planned) | set(now)) if planned.get(k) != now.get(k))
        raise ConfigError(f"{where}.env_protocol.{key} is {show(planned.get(key))}, but protocol "
                          f"{config.env_protocol!r} (experiments/protocols/) now has {show(now.get(key))}: the "
                          "experiment files changed since planning; plan again (snakemake)")
    digest = config_digest(config, planned)
    if entry["config_digest"] != digest:
        raise ConfigError(f"{where}.config_digest is {entry['config_digest']!r}, but the run's config in the plan "
                          f"digests to {digest!r} under this code: the plan no longer matches its runs; plan again "
                          "(snakemake)")
    meta = entry["meta"]
    for key, value in (("study", plan.name), ("scale", plan.scale), ("variant", entry["variant"]),
                       ("config_digest", digest)):
        if meta.get(key) != value:
            raise ConfigError(f"{where}.meta.{key} is {show(meta.get(key))}, but the run's is {value!r}")
    return PlannedRun(name, entry["task"], entry["variant"], seed, folder, config, digest, meta,
                      Path(entry["source"]) if plan.job == "copy" else None)


def _as_json(value):
    """``value`` as it reads back from a plan file (tuples as lists)."""
    return json.loads(json.dumps(value, default=str))
