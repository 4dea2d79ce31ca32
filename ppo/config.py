"""Run configuration: presets, variants and their validation.

A *preset* (``experiments/presets/<name>.yaml``) is a complete set of hyperparameters plus, for every
detail the paper leaves unstated, the choice made and its source. A *variant*
(``experiments/variants/<name>.yaml``) is a preset plus a few overrides: a new ablation is one such
file, never new code. Unknown keys are refused with the file and field named.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS_DIR = PROJECT_ROOT / "experiments"


class ConfigError(ValueError):
    """A configuration file is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Objective:
    """One point of the surrogate family  min(r·A, clip(r, 1±ε)·A) − β·KL[π_old, π] + c2·H.

    Every Table 1 setting is a value of this record, so no setting needs its own code path.
    """

    clip_epsilon: float | None = 0.2  # None = no clipping (ε = ∞)
    kl_beta: float = 0.0  # initial β; 0 = no KL penalty
    kl_target: float | None = None  # d_targ of the adaptive-β rule; None = β stays fixed
    ent_coef: float = 0.0  # c2 of Eq. 9

    def __post_init__(self) -> None:
        if self.clip_epsilon is not None and not self.clip_epsilon > 0:
            raise ValueError(f"objective.clip_epsilon must be > 0 or null, got {self.clip_epsilon}")
        if not (self.kl_beta >= 0 and math.isfinite(self.kl_beta)):
            raise ValueError(f"objective.kl_beta must be a finite number >= 0, got {self.kl_beta}")
        if self.kl_target is not None and not self.kl_target > 0:
            raise ValueError(f"objective.kl_target must be > 0 or null, got {self.kl_target}")
        if self.kl_target is not None and self.kl_beta == 0:
            raise ValueError("objective.kl_target needs kl_beta > 0 (β = 0 can never adapt: 0·2 = 0)")


@dataclass(frozen=True)
class PPOConfig:
    """Everything that defines a PPO run except its task and seed."""

    total_steps: int = 1_000_000  # environment steps per run
    num_envs: int = 1  # actors per run
    horizon: int = 2048  # T: steps per actor per update
    epochs: int = 10  # K
    minibatch_size: int = 64  # M
    learning_rate: float = 3e-4
    lr_schedule: str = "constant"  # "constant" | "linear" (anneal to 0 over total_steps)
    adam_eps: float = 1e-5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    hidden_sizes: tuple[int, ...] = (64, 64)
    init: str = "normc"  # "normc" (baselines ppo1) | "orthogonal" (baselines ppo2, CleanRL)
    log_std_init: float = 0.0
    obs_norm: bool = True  # running mean/std of observations, updated once per batch
    obs_clip: float = 5.0  # clip normalized observations to ±obs_clip
    adv_norm: str = "batch"  # "batch" | "minibatch" | "none"
    vf_coef: float = 1.0  # c1 of Eq. 9; with separate networks it only rescales the value gradient
    max_grad_norm: float | None = None  # per-run global gradient-norm clip; None = off
    time_limit: str = "terminal"  # "terminal" (ppo1) | "bootstrap" (r += γ·V(s_final) on truncation)
    action_clip: bool = True  # clip sampled actions to the action space before env.step
    objective: Objective = field(default_factory=Objective)

    def __post_init__(self) -> None:
        positive = ["total_steps", "num_envs", "horizon", "epochs", "minibatch_size"]
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if not 0 <= self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError("gamma and gae_lambda must lie in [0, 1]")
        choices = {
            "lr_schedule": ("constant", "linear"),
            "init": ("normc", "orthogonal"),
            "adv_norm": ("batch", "minibatch", "none"),
            "time_limit": ("terminal", "bootstrap"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if (self.num_envs * self.horizon) % self.minibatch_size:
            raise ValueError(
                f"minibatch_size {self.minibatch_size} must divide num_envs*horizon "
                f"{self.num_envs * self.horizon}"
            )

    def structural_key(self) -> tuple:
        """Fields that must be equal for runs to share one batched group (everything but the objective)."""
        return tuple(
            (f.name, getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "objective"
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _field_types(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPE_CHECKS = {  # annotation -> (test, what the error says)
    "int": (lambda v: _is_number(v) and float(v).is_integer(), "an integer"),
    "float": (_is_number, "a number"),
    "float | None": (lambda v: v is None or _is_number(v), "a number or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "tuple[int, ...]": (lambda v: isinstance(v, (list, tuple)) and len(v) > 0
                        and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v),
                        "a non-empty list of positive integers"),
}


def _check_types(values: dict, cls, source: str, prefix: str = "") -> None:
    """Refuse a value of the wrong type (a quoted number, a string for a list...) naming the field."""
    fields = _field_types(cls)
    for name, value in values.items():
        check = _TYPE_CHECKS.get(str(fields[name].type))
        if check and not check[0](value):
            raise ConfigError(f"{source}: field {prefix}{name} must be {check[1]}, got {value!r}")


def build_config(data: dict[str, Any], source: str) -> PPOConfig:
    """Build a PPOConfig from a plain mapping, naming ``source`` and the field in every error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of PPO settings, got {type(data).__name__}")
    known = _field_types(PPOConfig)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{source}: unknown field(s) {unknown}; known fields: {sorted(known)}")
    _check_types({k: v for k, v in data.items() if k != "objective"}, PPOConfig, source)
    kwargs = dict(data)
    if "objective" in kwargs:
        obj = kwargs["objective"]
        if not isinstance(obj, dict):
            raise ConfigError(f"{source}: field 'objective' must be a mapping")
        obj_known = _field_types(Objective)
        bad = sorted(set(obj) - set(obj_known))
        if bad:
            raise ConfigError(f"{source}: unknown field(s) objective.{bad}; known: {sorted(obj_known)}")
        _check_types(obj, Objective, source, "objective.")
        try:
            kwargs["objective"] = Objective(**obj)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{source}: {err}") from None
    if "hidden_sizes" in kwargs:
        kwargs["hidden_sizes"] = tuple(kwargs["hidden_sizes"])
    for name in ("total_steps", "num_envs", "horizon", "epochs", "minibatch_size"):
        # YAML reads 1e6 as a float; accept integral floats, refuse 1.5 or "abc".
        value = kwargs.get(name)
        if isinstance(value, float) and value.is_integer():
            kwargs[name] = int(value)
    try:
        return PPOConfig(**kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{source}: {err}") from None


def deep_merge(base: dict, overrides: dict) -> dict:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_yaml(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at top level")
    return data


def _check_keys(data: dict, allowed: set[str], required: set[str], path: Path) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{path}: unknown field(s) {unknown}; allowed: {sorted(allowed)}")
    missing = sorted(required - set(data))
    if missing:
        raise ConfigError(f"{path}: missing field(s) {missing}")


@dataclass(frozen=True)
class Preset:
    name: str
    config: dict  # the preset's settings, as written
    choices: dict  # field -> {"value", "paper_states", "source"}: the documented decisions
    path: Path


def load_preset(name: str, experiments_dir: Path = EXPERIMENTS_DIR) -> Preset:
    path = experiments_dir / "presets" / f"{name}.yaml"
    data = _read_yaml(path)
    _check_keys(data, {"description", "config", "choices"}, {"config", "choices"}, path)
    build_config(data["config"], str(path))  # validate now, so the error names the preset file
    for key, choice in data["choices"].items():
        if not isinstance(choice, dict) or not {"paper_states", "source"} <= set(choice):
            raise ConfigError(f"{path}: choices.{key} needs 'paper_states' and 'source'")
    return Preset(name=name, config=data["config"], choices=data["choices"], path=path)


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    preset: Preset
    overrides: dict
    config: PPOConfig  # preset + overrides, resolved (total_steps is set per study scale)
    paper_row: dict | None  # matching row of reference/ppo2017_table1.csv, if any
    path: Path


def load_variant(name: str, experiments_dir: Path = EXPERIMENTS_DIR, **extra: Any) -> Variant:
    """Load ``experiments/variants/<name>.yaml``; ``extra`` overrides (e.g. total_steps) apply last."""
    path = experiments_dir / "variants" / f"{name}.yaml"
    data = _read_yaml(path)
    _check_keys(data, {"label", "preset", "overrides", "paper_row"}, {"label", "preset"}, path)
    preset = load_preset(data["preset"], experiments_dir)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{path}: field 'overrides' must be a mapping")
    merged = deep_merge(deep_merge(preset.config, overrides), extra)
    config = build_config(merged, str(path))
    paper_row = data.get("paper_row")
    if paper_row is not None:
        _check_keys(paper_row, {"setting", "param"}, {"setting", "param"}, path)
    return Variant(name, data["label"], preset, overrides, config, paper_row, path)
