"""The RLHF study (experiments/studies/rlhf.yaml): blocks of RLHF variants × reference-KL β × seeds.

A MuJoCo study is tasks × variants × seeds at a number of environment steps; an RLHF run has neither tasks nor
steps, and its grid has an axis of its own (the reference β, a number applied to every surrogate variant), so
the RLHF study has a small schema of its own, with the same error style (one line naming the file and the
field), loaded through ppo.pipeline.study.load_study like every study (``kind: rlhf``):

    kind: rlhf
    description: ...
    report: rlhf
    pipeline_seeds: true          # seed k also seeds the grammar, the SFT model and the reward model (a scale may override)
    blocks:                       # named parts of the grid; a run may belong to several (then it trains once)
      surrogates: {variants: [no_clip, "clip_*"], reference_betas: [0, 0.01, 0.1]}
      best_of_n: {variants: [best_of_n]}          # no reference_betas: the variant's own settings
    scales:
      full: {label: "...", seeds: 3, reduced: false}
      reduced: {label: "...", seeds: 2, overrides: {updates: 60}, blocks: {...}}   # a scale's blocks replace the study's

A *cell* is one variant at one reference β: ``clip_0.2-ref0.1`` (or ``best_of_n`` alone), its config the
variant's on its preset, then the scale's ``overrides``, then ``reference_kl: {beta: β, target: null}``. A run is
a cell and a seed, in ``results/rlhf/<scale>/runs/<preset>/<cell>/seed<k>/`` (ppo.training.layout, the preset standing
for the task). The SFT policy and reward model a run starts from depend only on the settings that
ppo.rlhf.train.models_key digests; the workflow builds each distinct one once (workflow/rules/rlhf.smk).

With ``pipeline_seeds: true`` a run's seed k is added to the cell's ``language.seed``, ``sft.seed`` and
``reward_model.seed`` (ppo.rlhf.config.pipeline_seeded): each seed is a new grammar with new hidden valences, a new
SFT model and a new reward model, then RL, so the spread over seeds is that of the whole pipeline. Runs of one seed
share their starting models (one models key per seed and reward-model setting); seed 0 is the run without it.

A finished run found elsewhere (published with the project, ppo.pipeline.publish: ``published/rlhf/full/runs/...``;
or the same run of another RLHF study) is copied, not trained: the planner writes one copy plan per study and source
(``write_copy_plan``), and ``python -m ppo.pipeline.rlhf_job --copy-plan FILE`` resolves each of its runs again,
checks the source (the run's task, setting, seed and config digest; every record as its manifest hashed it) and
copies them all, or none.
"""
from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..config.errors import ConfigError, check_name, show
from ..config.files import check_keys, check_mapping, check_positive_int
from ..config.schema import settings_digest
from ..rlhf.config import RLHF_DIR, RLHFConfig, load_variant, pipeline_seeded, variant_names
from ..rlhf.train import models_key
from ..training import layout
from ..training.layout import run_id
from ..training.records import write_text_if_changed
from .reports import REPORTS

KIND = "rlhf"
STUDY_KEYS = {"kind", "description", "report", "pipeline_seeds", "blocks", "scales"}
SCALE_KEYS = {"label", "seeds", "reduced", "pipeline_seeds", "overrides", "blocks"}
BLOCK_KEYS = {"variants", "reference_betas", "description"}
RUN_FILES = ("updates.parquet", "samples.parquet", "timing.parquet", "manifest.json")
MAX_SEEDS = 1000


def cell_name(variant: str, beta: float | None) -> str:
    """``clip_0.2`` at β = 0.1 -> ``clip_0.2-ref0.1``; β None (the variant's own setting) -> ``clip_0.2``."""
    if beta is None:
        return variant
    return f"{variant}-ref{int(beta) if float(beta).is_integer() else repr(float(beta))}"


@dataclass(frozen=True)
class Cell:
    """One setting of the grid: a variant file at one reference β (what a MuJoCo study calls a variant)."""

    name: str  # the run folder's name: <variant>-ref<β>
    label: str  # the variant's label, with the β
    variant: str  # experiments/rlhf/variants/<variant>.yaml
    reference_beta: float | None  # None: the variant's own reference_kl
    blocks: tuple[str, ...]  # the parts of the grid it belongs to
    config: RLHFConfig
    path: Path
    preset: str  # the variant's preset: the language and models it starts from (the runs' "task")

    @property
    def models_key(self) -> str:
        return models_key(self.config)


@dataclass(frozen=True)
class RLHFRun:
    task: str  # the variant's preset: the language and models it starts from
    variant: Cell
    seed: int
    pipeline_seeds: bool = False  # the seed also moves the grammar's, SFT's and reward model's seeds

    @property
    def run_id(self) -> str:
        return run_id(self.task, self.variant.name, self.seed)

    @property
    def config(self) -> RLHFConfig:
        """The run's resolved config: the cell's, with pipeline seeds applied when the study asks for them."""
        return pipeline_seeded(self.variant.config, self.seed) if self.pipeline_seeds else self.variant.config

    @property
    def models_key(self) -> str:
        return models_key(self.config)

    @property
    def config_digest(self) -> str:
        """Changes whenever the resolved config changes, so Snakemake re-runs exactly those runs."""
        return settings_digest(self.config.to_dict())


@dataclass(frozen=True)
class RLHFStudy:
    """The fields the workflow, provenance and front page read of any study, and the RLHF grid."""

    name: str
    scale: str
    label: str
    reduced: bool
    variants: tuple[Cell, ...]  # the cells
    seeds: int
    path: Path
    report: str = "rlhf"
    overrides: tuple[tuple[str, str], ...] = ()  # the scale's overrides, as (field, JSON value), for provenance
    kind: str = KIND
    run_files: tuple[str, ...] = RUN_FILES
    anchor: str = ""
    presets: tuple = ()
    pipeline_seeds: bool = False  # seeds vary the grammar, SFT and reward model too (ppo.rlhf.config.pipeline_seeded)

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.preset for c in self.variants))

    @property
    def updates(self) -> int:
        """Updates per PPO run (the largest, should cells differ)."""
        return max((c.config.updates for c in self.variants if c.config.algorithm != "best_of_n"), default=0)

    @property
    def total_steps(self) -> int:
        """Responses sampled per training run: updates × batch size (the nearest thing to environment steps)."""
        return max((c.config.updates * c.config.batch_size for c in self.variants
                    if c.config.algorithm != "best_of_n"), default=0)

    def runs(self) -> list[RLHFRun]:
        return [RLHFRun(c.preset, c, s, self.pipeline_seeds) for c in self.variants for s in range(self.seeds)]

    def cell(self, name: str) -> Cell:
        for c in self.variants:
            if c.name == name:
                return c
        raise ConfigError(f"{self.path}: study {self.name} at scale {self.scale} has no setting {name!r}; "
                          f"its settings: {[c.name for c in self.variants]}")

    def models(self) -> dict[str, RLHFRun]:
        """Each distinct starting-models key, with the first run that needs it (with pipeline seeds, one key per
        seed and reward-model setting; without, per reward-model setting)."""
        out: dict[str, RLHFRun] = {}
        for run in self.runs():
            out.setdefault(run.models_key, run)
        return out


def _betas(value, field: str, path: Path) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path}: field {field} must be a non-empty list of numbers >= 0, got {show(value)}")
    out = []
    for beta in value:
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not (beta >= 0 and math.isfinite(beta)):
            raise ConfigError(f"{path}: field {field} must list numbers >= 0, got {show(beta)}")
        if float(beta) in out:
            raise ConfigError(f"{path}: field {field} lists {beta} more than once")
        out.append(float(beta))
    return tuple(out)


def _blocks(value, field: str, path: Path, available: list[str], rlhf_dir: Path) -> dict[str, tuple[list[str], tuple | None]]:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{path}: field {field} must be a non-empty mapping of block name to "
                          f"{{variants, reference_betas}}, got {show(value)}")
    out = {}
    for name, block in value.items():
        check_name(name, f"field {field}: block name", str(path))
        where = f"{field}.{name}"
        check_keys(block, BLOCK_KEYS, {"variants"}, path, prefix=f"{where}.")
        patterns = block["variants"]
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise ConfigError(f"{path}: field {where}.variants must be a non-empty list of names, got {show(patterns)}")
        names: list[str] = []
        for pattern in patterns:
            matched = fnmatch.filter(available, pattern)
            if not matched:
                raise ConfigError(f"{path}: field {where}.variants: entry {show(pattern)} matches no file in "
                                  f"{rlhf_dir / 'variants'}")
            names += [m for m in matched if m not in names]
        betas = _betas(block["reference_betas"], f"{where}.reference_betas", path) if "reference_betas" in block else None
        out[name] = (names, betas)
    return out


def load_rlhf_study(name: str, scale: str, data: dict, path: Path, seeds: int | None = None,
                    rlhf_dir: Path = RLHF_DIR) -> RLHFStudy:
    """Resolve an RLHF study file (already read as ``data``) at ``scale``; errors name the file and field."""

    check_keys(data, STUDY_KEYS, {"kind", "blocks", "scales"}, path)
    scales = check_mapping(data["scales"], "scales", path)
    if scale not in scales:
        raise ConfigError(f"{path}: scale {scale!r} (config scale) is not defined; "
                          f"defined scales: {sorted(map(str, scales))}")
    sc = check_mapping(scales[scale], f"scales.{scale}", path)
    check_keys(sc, SCALE_KEYS, {"seeds", "label"}, path, prefix=f"scales.{scale}.")
    if not isinstance(sc["label"], str) or len(sc["label"]) > 500 or not sc["label"].isprintable():
        raise ConfigError(f"{path}: field scales.{scale}.label must be one line of text (at most 500 characters), "
                          f"got {show(sc['label'])}")
    if not isinstance(sc.get("reduced", True), bool):
        raise ConfigError(f"{path}: field scales.{scale}.reduced must be true or false, got {show(sc['reduced'])}")
    for where, holder in (("pipeline_seeds", data), (f"scales.{scale}.pipeline_seeds", sc)):
        if not isinstance(holder.get("pipeline_seeds", False), bool):
            raise ConfigError(f"{path}: field {where} must be true or false, got {show(holder['pipeline_seeds'])}")
    pipeline_seeds = sc.get("pipeline_seeds", data.get("pipeline_seeds", False))
    if seeds is None:
        n_seeds = check_positive_int(sc["seeds"], f"scales.{scale}.seeds", path, MAX_SEEDS)
    else:
        n_seeds = check_positive_int(seeds, "seeds", f"pipeline config (overriding {path} scales.{scale}.seeds)", MAX_SEEDS)
    overrides = sc.get("overrides", {})
    if not isinstance(overrides, dict):
        raise ConfigError(f"{path}: field scales.{scale}.overrides must be a mapping of RLHF settings, "
                          f"got {show(overrides)}")
    available = variant_names(rlhf_dir)
    block_field = f"scales.{scale}.blocks" if "blocks" in sc else "blocks"
    blocks = _blocks(sc.get("blocks", data["blocks"]), block_field, path, available, rlhf_dir)
    if "blocks" in sc:  # the study's blocks are checked too: a typo there would surface only at another scale
        _blocks(data["blocks"], "blocks", path, available, rlhf_dir)
    cells: dict[str, dict] = {}
    for block, (names, betas) in blocks.items():
        for variant in names:
            for beta in (None,) if betas is None else betas:
                entry = cells.setdefault(cell_name(variant, beta), {"variant": variant, "beta": beta, "blocks": []})
                entry["blocks"].append(block)
    resolved = []
    for cname, entry in cells.items():
        extra = dict(overrides)
        if entry["beta"] is not None:
            extra = {**extra, "reference_kl": {**extra.get("reference_kl", {}), "beta": entry["beta"], "target": None}}
        try:
            variant = load_variant(entry["variant"], rlhf_dir, **extra)
        except ConfigError as err:  # a scale override the settings refuse: name the study's field
            message = str(err)
            if str(rlhf_dir / "variants") in message and "overrides" not in message:
                message = f"{path}: field scales.{scale}.overrides (applied to {entry['variant']}): " \
                          f"{message.split(': ', 1)[-1]}"
            raise ConfigError(message) from None
        label = variant.label if entry["beta"] is None else f"{variant.label}, ref β = {entry['beta']:g}"
        resolved.append(Cell(cname, label, entry["variant"], entry["beta"], tuple(entry["blocks"]),
                             variant.config, variant.path, variant.preset))
    report = data.get("report", "rlhf")
    if report not in REPORTS:
        raise ConfigError(f"{path}: field report must be one of {list(REPORTS)}, got {show(report)}")
    shown = tuple((k, json.dumps(v, sort_keys=True)) for k, v in overrides.items())
    return RLHFStudy(name, scale, sc["label"], sc.get("reduced", True), tuple(resolved), n_seeds, path, report, shown,
                     pipeline_seeds=pipeline_seeds)


def find_run(study: RLHFStudy, cell: str, seed: int) -> RLHFRun:
    """The run ``cell``/seed ``seed`` of the study (a ConfigError naming the study file if it has none)."""
    c = study.cell(cell)
    if not 0 <= seed < study.seeds:
        raise ConfigError(f"{study.path}: seed {seed} is not one of the study's seeds 0..{study.seeds - 1} "
                          f"at scale {study.scale}")
    return RLHFRun(c.preset, c, seed, study.pipeline_seeds)




def run_fields(study: RLHFStudy, run: RLHFRun) -> dict:
    """What a run's manifest says of its place in ``study`` (ppo.pipeline.rlhf_job writes them beside what trained it;
    a copy of the run, from another study or from published/, gets this study's)."""
    return {"variant": run.variant.name, "variant_label": run.variant.label, "variant_file": run.variant.variant,
            "pipeline_seeds": run.pipeline_seeds, "reference_beta": run.variant.reference_beta,
            "blocks": list(run.variant.blocks), "run_id": run.run_id, "task": run.task, "scale": study.scale,
            "study": study.name, "config_digest": run.config_digest, "scale_overrides": dict(study.overrides)}


COPY_PLAN_FORMAT = 1
COPY_RUN_FIELDS = {"run_id", "cell", "seed", "folder", "source", "config_digest"}


def write_copy_plan(results: Path | str, study: RLHFStudy, job: str, runs: list[RLHFRun], sources: list,
                    seeds: int | None = None) -> Path:
    """The plan of the job named ``job`` (``copy_published``, ``copy_from_<study>``) that copies ``runs`` of ``study``
    into ``results`` from ``sources`` (one finished run's folder each): the study, scale and pipeline ``seeds``
    override it was resolved at, and per run its setting, seed, folder, source and config digest. Written only when
    its content changes (its mtime is the copy job's trigger, as ppo.pipeline.plan.write_plan's). Returns the file."""
    entries = [{"run_id": r.run_id, "cell": r.variant.name, "seed": r.seed, "folder": str(layout.run_dir(results, study, r)),
                "source": str(source), "config_digest": r.config_digest} for r, source in zip(runs, sources)]
    plan = {"format": COPY_PLAN_FORMAT, "kind": KIND, "job": "copy", "study": study.name, "scale": study.scale,
            "seeds": seeds, "results": str(results), "runs": entries}
    path = layout.plan_path(results, study, job, [e["folder"] for e in entries])
    text = json.dumps(plan, indent=1, sort_keys=True) + "\n"
    write_text_if_changed(path, text)
    return path


def read_copy_plan(path: Path, load_study) -> tuple[RLHFStudy, list[tuple[RLHFRun, Path, Path]]]:
    """(the study, [(run, its folder, the folder it is copied from)]) of an RLHF copy plan, each run resolved again
    from the study file (``load_study``: ppo.pipeline.study.load_study) and checked against the plan: a run that no
    longer resolves to the planned digest, or whose folder is not where the study keeps it, is a ConfigError naming
    the plan and the field (plan again)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ConfigError(f"{path}: cannot read the copy job's plan ({type(err).__name__}); plan again (snakemake)") from None
    if not isinstance(data, dict) or data.get("format") != COPY_PLAN_FORMAT or data.get("kind") != KIND \
            or data.get("job") != "copy":
        raise ConfigError(f"{path}: not an RLHF copy plan of format {COPY_PLAN_FORMAT} (fields format, kind, job); "
                          "plan again (snakemake)")
    for field in ("study", "scale"):
        check_name(data.get(field), f"field {field}:", str(path))
    seeds, entries = data.get("seeds"), data.get("runs")
    if seeds is not None and (not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1):
        raise ConfigError(f"{path}: field seeds must be null or a positive integer, got {show(seeds)}")
    if not isinstance(data.get("results"), str) or not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: fields results (a folder) and runs (a non-empty list) are required")
    study = load_study(data["study"], data["scale"], seeds)
    if getattr(study, "kind", None) != KIND:
        raise ConfigError(f"{path}: study {data['study']} is not an RLHF study (kind: rlhf)")
    out = []
    for i, entry in enumerate(entries):
        where = f"{path}: field runs[{i}]"
        if not isinstance(entry, dict) or set(entry) != COPY_RUN_FIELDS:
            raise ConfigError(f"{where} must be a run with fields {sorted(COPY_RUN_FIELDS)}, got {show(entry)}")
        if not isinstance(entry["seed"], int) or isinstance(entry["seed"], bool):
            raise ConfigError(f"{where}.seed must be an integer, got {show(entry['seed'])}")
        if not isinstance(entry["cell"], str) or not isinstance(entry["source"], str) or not entry["source"]:
            raise ConfigError(f"{where}: fields cell and source must be strings")
        run = find_run(study, entry["cell"], entry["seed"])
        if entry["config_digest"] != run.config_digest:
            raise ConfigError(f"{where}.config_digest is {entry['config_digest']!r}, but run {run.run_id} now resolves "
                              f"to {run.config_digest!r}: the experiment files changed since planning; plan again "
                              "(snakemake)")
        folder = layout.run_dir(data["results"], study, run)
        if entry["folder"] != str(folder) or entry["run_id"] != run.run_id:
            raise ConfigError(f"{where}: run {run.run_id} of study {study.name} at scale {study.scale} keeps its "
                              f"records in {str(folder)!r}, not {entry['folder']!r}")
        out.append((run, folder, Path(entry["source"])))
    return study, out
