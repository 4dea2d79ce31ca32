"""RLHF run settings as YAML data, like the MuJoCo presets and variants.

A preset (``experiments/rlhf/presets/<name>.yaml``) holds every knob and, under ``choices``, where each
value comes from; a variant (``experiments/rlhf/variants/<name>.yaml``) is a preset plus overrides. They
live apart from ``experiments/variants`` so that Table 1's glob patterns (``clip_*``, ``kl_fixed_*``) never
pick up an RLHF file. Errors are ppo.config.errors.ConfigError naming the file and the dotted field.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..config.errors import ConfigError, show
from ..config.files import EXPERIMENTS_DIR, deep_merge, read_yaml
from ..config.settings import Objective

RLHF_DIR = EXPERIMENTS_DIR / "rlhf"
ALGORITHMS = ("ppo", "grpo", "rloo", "remax", "best_of_n")


def _positive(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _fraction(obj, *names: str, open_top: bool = False) -> None:
    for name in names:
        value = getattr(obj, name)
        if not (0 <= value < 1 if open_top else 0 <= value <= 1):
            raise ValueError(f"{name} must lie in [0, 1{')' if open_top else ']'}, got {value!r}")


@dataclass(frozen=True)
class LanguageSettings:
    """The synthetic language and its gold reward (ppo/rlhf/language.py)."""

    seed: int = 0  # draws the grammar and the hidden valences: the task, like an environment id
    num_words: int = 24  # content tokens (the vocabulary adds BOS and EOS)
    successors: int = 4  # allowed next words per word
    dirichlet_alpha: float = 0.7  # concentration of each word's successor probabilities
    prompt_length: int = 3  # words after BOS
    max_response_length: int = 16  # tokens generated per response, EOS included
    min_response_length: int = 4  # words before EOS may appear in the data
    eos_prob: float = 0.12  # per step once min_response_length words are out
    max_count: int = 2  # a word's valence counts at most this many times per response
    violation_penalty: float = 1.0  # gold reward lost per ungrammatical transition
    repeat_penalty: float = 0.0  # gold reward lost per occurrence beyond max_count

    def __post_init__(self) -> None:
        _positive(self, "num_words", "successors", "prompt_length", "max_response_length", "max_count",
                   "dirichlet_alpha")
        _non_negative(self, "min_response_length", "violation_penalty", "repeat_penalty")
        _fraction(self, "eos_prob")
        if self.successors >= self.num_words:
            raise ValueError(f"successors must be < num_words {self.num_words} (else nothing is "
                             f"ungrammatical), got {self.successors}")
        if self.min_response_length >= self.max_response_length:
            raise ValueError(f"min_response_length must be < max_response_length {self.max_response_length}, "
                             f"got {self.min_response_length}")


@dataclass(frozen=True)
class ModelSettings:
    """A pre-LN decoder-only transformer (ppo/rlhf/model.py)."""

    d_model: int = 64
    n_layer: int = 2
    n_head: int = 2

    def __post_init__(self) -> None:
        _positive(self, "d_model", "n_layer", "n_head")
        if self.d_model % self.n_head:
            raise ValueError(f"n_head {self.n_head} must divide d_model {self.d_model}")


@dataclass(frozen=True)
class SFTSettings:
    """Supervised pretraining from scratch on grammar samples: the SFT policy and the frozen reference."""

    seed: int = 0
    steps: int = 800
    batch_size: int = 128
    learning_rate: float = 1e-3

    def __post_init__(self) -> None:
        _positive(self, "steps", "batch_size", "learning_rate")


@dataclass(frozen=True)
class RewardModelSettings:
    """The proxy: Bradley-Terry on pairs of SFT responses labelled by the gold reward."""

    seed: int = 0
    pairs: int = 4000  # labelled comparisons
    label_noise: float = 0.1  # probability that a label is flipped
    epochs: int = 1
    batch_size: int = 64
    learning_rate: float = 3e-4
    normalise_samples: int = 2048  # SFT samples on which the score is shifted and scaled to mean 0, std 1
    model: ModelSettings | None = None  # None: the policy's size, trunk initialised from the SFT policy

    def __post_init__(self) -> None:
        _positive(self, "pairs", "epochs", "batch_size", "learning_rate", "normalise_samples")
        _fraction(self, "label_noise", open_top=True)
        if self.normalise_samples < 2:
            raise ValueError(f"normalise_samples must be >= 2 (a standard deviation), got {self.normalise_samples}")


PLACEMENTS = ("reward", "loss")


@dataclass(frozen=True)
class ReferenceKL:
    """The KL(π‖π_ref) that holds the policy near the reference, against over-optimisation; a different KL
    from the trust-region KL(π_old‖π) of ``objective``. With a target, Ziegler et al.'s controller adapts β.

    ``placement``: where β·KL enters. "reward" (Ziegler et al. 2019, InstructGPT): −β·(log π − log π_ref) of
    the sampled token in each token's reward, so it reaches the policy through the advantages. "loss"
    (DeepSeekMath's GRPO, Shao et al. 2024, arXiv:2402.03300, eq. 3-4): the reward is the score alone and the
    policy loss adds β times the k3 estimate π_ref/π − log(π_ref/π) − 1 of the current policy per valid token
    (ppo.rlhf.losses.reference_kl_loss)."""

    beta: float = 0.0
    target: float | None = None  # KL(π‖π_ref) per response, in nats; None = β stays fixed
    horizon: int = 10000  # the controller's horizon, in responses
    placement: str = "reward"  # "reward" | "loss"

    def __post_init__(self) -> None:
        _non_negative(self, "beta")
        _positive(self, "horizon")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {self.placement!r}")
        if self.target is not None and not self.target > 0:
            raise ValueError(f"target must be > 0 or null, got {self.target}")
        if self.target is not None and self.beta == 0:
            raise ValueError("target needs beta > 0 (the controller multiplies β, so 0 stays 0)")


@dataclass(frozen=True)
class BestOfNSettings:
    ns: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    prompts: int = 256

    def __post_init__(self) -> None:
        _positive(self, "prompts")
        if not self.ns or any(not isinstance(n, int) or n < 1 for n in self.ns):
            raise ValueError(f"ns must be a non-empty list of integers >= 1, got {list(self.ns)}")


@dataclass(frozen=True)
class SampleSettings:
    """Sampled responses kept as text: the first ``count`` of the batch every ``every`` updates and last."""

    every: int = 25
    count: int = 8

    def __post_init__(self) -> None:
        _positive(self, "every")
        _non_negative(self, "count")


@dataclass(frozen=True)
class HeldOutSettings:
    """Gold on a fixed held-out prompt set: ``prompts`` prompts drawn once per run from the run's seed (apart
    from the training streams), answered by the policy every ``every`` updates and after the last, each time
    with the same sampling seed (common random numbers: the change between two evaluations is the policy's).
    ``every`` 0: never (the records then have no held-out columns)."""

    every: int = 0
    prompts: int = 256

    def __post_init__(self) -> None:
        _non_negative(self, "every")
        _positive(self, "prompts")


@dataclass(frozen=True)
class RLHFConfig:
    """Everything that defines an RLHF run except its seed."""

    algorithm: str = "ppo"  # "ppo" (GAE + critic) | "grpo" | "rloo" | "remax" | "best_of_n" (no training)
    updates: int = 100
    batch_size: int = 64  # responses per update
    group_size: int = 4  # responses per prompt for grpo and rloo (the others: 1)
    epochs: int = 4
    minibatch_size: int = 16  # responses per minibatch
    learning_rate: float = 1e-4  # policy and value model
    adam_eps: float = 1e-5
    max_grad_norm: float | None = 1.0  # per model; None = off
    temperature: float = 1.0  # logits / T for sampling and for every log-probability
    gamma: float = 1.0
    gae_lambda: float = 0.95
    whiten_advantages: bool = True
    vf_coef: float = 0.1
    value_clip: float | None = 0.2  # None = unclipped value loss
    missing_eos_penalty: float = 1.0  # subtracted from the score of a response without EOS
    objective: Objective = field(default_factory=Objective)  # the trust-region surrogate family of Table 1
    reference_kl: ReferenceKL = field(default_factory=ReferenceKL)
    best_of_n: BestOfNSettings = field(default_factory=BestOfNSettings)
    samples: SampleSettings = field(default_factory=SampleSettings)
    held_out: HeldOutSettings = field(default_factory=HeldOutSettings)
    language: LanguageSettings = field(default_factory=LanguageSettings)
    policy_model: ModelSettings = field(default_factory=ModelSettings)
    sft: SFTSettings = field(default_factory=SFTSettings)
    reward_model: RewardModelSettings = field(default_factory=RewardModelSettings)

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        _positive(self, "updates", "batch_size", "group_size", "epochs", "minibatch_size", "learning_rate",
                  "adam_eps", "temperature")
        _non_negative(self, "vf_coef", "missing_eos_penalty")
        _fraction(self, "gamma", "gae_lambda")
        for name in ("max_grad_norm", "value_clip"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0 or null, got {value!r}")
        if self.batch_size % self.minibatch_size:
            raise ValueError(f"minibatch_size {self.minibatch_size} must divide batch_size {self.batch_size}")
        if self.algorithm in ("grpo", "rloo"):
            if self.group_size < 2:
                raise ValueError(f"algorithm {self.algorithm} compares responses to one prompt: group_size "
                                 f"must be >= 2, got {self.group_size}")
            if self.batch_size % self.group_size:
                raise ValueError(f"group_size {self.group_size} must divide batch_size {self.batch_size}")

    @property
    def prompts_per_update(self) -> int:
        return self.batch_size // self.group_size if self.algorithm in ("grpo", "rloo") else self.batch_size

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PIPELINE_SEEDS = ("language", "sft", "reward_model")  # the sections whose seed a pipeline seed also moves


def pipeline_seeded(cfg: RLHFConfig, seed: int) -> RLHFConfig:
    """``cfg`` with the run's seed added to the grammar's, the SFT model's and the reward model's seeds, so that
    seed k varies the whole pipeline (a new grammar and valences, SFT model and reward model, then RL), not only
    RL's sampling. Seed 0 leaves the config unchanged: its run is the one without pipeline seeds."""
    sections = {name: getattr(cfg, name) for name in PIPELINE_SEEDS}
    return dataclasses.replace(cfg, **{name: dataclasses.replace(section, seed=section.seed + seed)
                                       for name, section in sections.items()})


# Dataclass fields that are sections, and the record each is built into.
SECTIONS = {"objective": Objective, "reference_kl": ReferenceKL, "best_of_n": BestOfNSettings,
            "samples": SampleSettings, "held_out": HeldOutSettings, "language": LanguageSettings,
            "policy_model": ModelSettings, "sft": SFTSettings, "reward_model": RewardModelSettings,
            "model": ModelSettings}


def _type_ok(annotation: str, value) -> tuple[bool, str]:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    checks = {
        "int": (number and float(value).is_integer(), "an integer"),
        "float": (number, "a number"),
        "float | None": (value is None or number, "a number or null"),
        "bool": (isinstance(value, bool), "true or false"),
        "str": (isinstance(value, str), "a string"),
        "tuple[int, ...]": (isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                                              for x in value), "a list of integers"),
    }
    return checks.get(annotation, (True, ""))


def build(cls, data, source: str, prefix: str = ""):
    """Build ``cls`` from a mapping: unknown fields, wrong types and failed checks raise ConfigError
    naming ``source`` and the dotted field."""
    where = prefix.rstrip(".") or "(top level)"
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: field {where} must be a mapping, got {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{source}: unknown field(s) {[prefix + k for k in unknown]}; known: {sorted(fields)}")
    kwargs = {}
    for name, value in data.items():
        annotation = str(fields[name].type)
        if name in SECTIONS and not (value is None and annotation.endswith("| None")):
            kwargs[name] = build(SECTIONS[name], value, source, f"{prefix}{name}.")
            continue
        ok, what = _type_ok(annotation, value)
        if not ok:
            raise ConfigError(f"{source}: field {prefix}{name} must be {what}, got {value!r}")
        if annotation == "int":
            value = int(value)  # YAML reads 1e4 as a float
        elif annotation.startswith("float") and value is not None:
            value = float(value)  # 1 and 1.0 are one setting
        kwargs[name] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**kwargs)
    except ValidationError as err:  # a pydantic record (ppo.config.settings.Objective): its first error, on one line
        error = err.errors()[0]
        message = (str(error["ctx"]["error"]) if error["type"] == "value_error" else
                   f"{'.'.join(map(str, error['loc']))}: {error['msg'].lower()}, got {show(error['input'])}")
        if prefix and not message.startswith(prefix):
            message = f"{prefix}{message}"
        raise ConfigError(f"{source}: field {message}") from None
    except ValueError as err:
        message = str(err)
        if prefix and not message.startswith(prefix):
            message = f"{prefix}{message}"  # Objective's messages already say "objective."
        raise ConfigError(f"{source}: field {message}") from None


@dataclass(frozen=True)
class RLHFVariant:
    name: str
    label: str
    preset: str
    overrides: dict
    config: RLHFConfig
    choices: dict  # the preset's documented decisions: field -> {"source"}
    path: Path


def load_preset(name: str, rlhf_dir: Path = RLHF_DIR) -> tuple[dict, dict]:
    """The preset's settings as written (validated) and its documented choices."""
    path = rlhf_dir / "presets" / f"{name}.yaml"
    data = read_yaml(path)
    unknown = sorted(set(data) - {"description", "config", "choices"})
    if unknown or "config" not in data or "choices" not in data:
        raise ConfigError(f"{path}: a preset has fields description, config and choices; "
                          f"unknown {unknown}, missing {sorted({'config', 'choices'} - set(data))}")
    build(RLHFConfig, data["config"], str(path))
    if not isinstance(data["choices"], dict) or not all(isinstance(c, dict) and "source" in c
                                                        for c in data["choices"].values()):
        raise ConfigError(f"{path}: field choices must map each setting to {{source: ...}}")
    return data["config"], data["choices"]


def load_variant(name: str, rlhf_dir: Path = RLHF_DIR, **extra: Any) -> RLHFVariant:
    """``experiments/rlhf/variants/<name>.yaml`` resolved on its preset; ``extra`` overrides apply last
    (a study's scale, a test's sizes), as dotted sections: ``extra={"updates": 20}``."""
    path = rlhf_dir / "variants" / f"{name}.yaml"
    data = read_yaml(path)
    unknown = sorted(set(data) - {"label", "preset", "overrides"})
    if unknown:
        raise ConfigError(f"{path}: unknown field(s) {unknown}; allowed: ['label', 'overrides', 'preset']")
    for key in ("label", "preset"):
        if not isinstance(data.get(key), str):
            raise ConfigError(f"{path}: field {key} must be a string, got {data.get(key)!r}")
    available = sorted(p.stem for p in (rlhf_dir / "presets").glob("*.yaml"))
    if data["preset"] not in available:
        raise ConfigError(f"{path}: field preset: no preset {data['preset']!r}; available: {available}")
    preset, choices = load_preset(data["preset"], rlhf_dir)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{path}: field overrides must be a mapping, got {overrides!r}")
    config = build(RLHFConfig, deep_merge(deep_merge(preset, overrides), extra), str(path))
    return RLHFVariant(name, data["label"], data["preset"], overrides, config, choices, path)


def variant_names(rlhf_dir: Path = RLHF_DIR) -> list[str]:
    return sorted(p.stem for p in (rlhf_dir / "variants").glob("*.yaml"))
