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
from ..training.layout import run_id
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


