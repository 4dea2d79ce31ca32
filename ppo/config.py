"""The run config (:class:`RunConfig`) and its validation from plain data (:func:`build_config`): every
error names the source and the field. The settings records are in ppo/settings.py, the files they are
read from (presets, variants) in ppo/experiments.py."""
from __future__ import annotations

import dataclasses
import math
import re
import reprlib
from dataclasses import dataclass, field
from typing import Any

from .settings import A2CSettings, ACERSettings, CEMSettings, Objective, PPOSettings, TRPOSettings, VPGSettings


class ConfigError(ValueError):
    """A configuration file is malformed; the message names the file and the field."""


_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxtuple, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxset = 2, 6, 6, 4, 4
_SHOW.maxstring, _SHOW.maxlong, _SHOW.maxother = 60, 40, 60


def show(value) -> str:
    """A value as an error message quotes it: short and one line, whatever its size or depth (reprlib
    never expands more than a few items, so an alias bomb or a cyclic list costs nothing to print)."""
    text = " ".join(_SHOW.repr(value).split())
    return text if len(text) <= 120 else text[:117] + "..."


# Names that become folder names and words of shell commands (variants, studies, scales, presets,
# protocols): letters, digits, '_', '.', '-', not starting with '.' or '-', so no quoting, globbing, '..'
# or option can come from them.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def check_name(name, what: str, source: str) -> str:
    """``name`` if it is a safe name (see _NAME), else a ConfigError naming ``source`` and ``what``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ConfigError(f"{source}: {what} {show(name)} is not a valid name: use letters, digits, '_', '.' "
                          "and '-' (at most 100, not starting with '.' or '-', no '..')")
    return name


# algorithm -> its settings record, the config section of the same name
ALGORITHM_SETTINGS = {"ppo": PPOSettings, "a2c": A2CSettings, "acer": ACERSettings, "trpo": TRPOSettings,
                      "vpg": VPGSettings, "cem": CEMSettings}
ALGORITHMS = tuple(ALGORITHM_SETTINGS)  # those with a section here; ppo.algorithms.specs() has all
NETWORKS = ("mlp", "cnn_mnih2016", "cnn_nature")
# The shape of a run's record (RunConfig.to_dict). A change to it that keeps every run's behaviour gets a
# new number and a migration (ppo.schema), so that records written before it stay current.
SCHEMA_VERSION = 2


def setting(default=dataclasses.MISSING, *, read_by: str | None = None, network: str | None = None,
            default_factory=dataclasses.MISSING):
    """A field of the run config with what its record needs to know, declared where the field is:
    ``read_by``: the one algorithm that reads it (other algorithms' records omit it); ``network``: the one
    network family that reads it ("mlp": an Atari run's record omits it)."""
    meta = {"read_by": read_by, "network": network}
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run except its task and seed: the settings every algorithm reads (budget,
    rollout, network, observation handling) and one section per algorithm (``ppo``, ``a2c``, ...), of which
    only the run's algorithm's is set. Each field declares which algorithm and network read it
    (:func:`setting`), and a run's record and digest (:meth:`to_dict`) hold exactly those."""

    algorithm: str = "ppo"  # "ppo" | "a2c" | "acer" | "trpo" | "vpg" | "cem"
    total_steps: int = 1_000_000  # environment steps per run
    num_envs: int = 1  # actors per run
    horizon: int = 2048  # T: steps per actor per update
    gamma: float = 0.99
    gae_lambda: float = 0.95
    hidden_sizes: tuple[int, ...] = setting((64, 64), network="mlp")
    init: str = setting("normc", network="mlp")  # "normc" (baselines ppo1) | "orthogonal" (baselines ppo2, CleanRL)
    log_std_init: float = setting(0.0, network="mlp")
    obs_norm: bool = setting(True, network="mlp")  # running mean/std of observations, updated once per batch
    obs_clip: float = setting(5.0, network="mlp")  # clip normalized observations to ±obs_clip
    adv_norm: str = "batch"  # "batch" | "minibatch" | "none"
    time_limit: str = "terminal"  # "terminal" (ppo1) | "bootstrap" (r += γ·V(s_final) on truncation)
    action_clip: bool = setting(True, network="mlp")  # clip sampled actions to the action space before env.step
    # Atari (image observations): a shared convolutional torso with policy and value heads, and the
    # environment protocol named in experiments/protocols/.
    network: str = "mlp"  # "mlp" (separate policy and value MLPs) | "cnn_mnih2016" | "cnn_nature"
    env_protocol: str | None = None  # Atari tasks only: experiments/protocols/<name>.yaml
    ppo: PPOSettings | None = setting(None, read_by="ppo")
    a2c: A2CSettings | None = setting(None, read_by="a2c")
    acer: ACERSettings | None = setting(None, read_by="acer")
    trpo: TRPOSettings | None = setting(None, read_by="trpo")
    vpg: VPGSettings | None = setting(None, read_by="vpg")
    cem: CEMSettings | None = setting(None, read_by="cem")

    def __post_init__(self) -> None:
        from .algorithms import algorithm_spec, specs  # not at import: the algorithms' modules import this one
        spec = algorithm_spec(self.algorithm)  # every algorithm that declares itself (ppo/algorithms/)
        for name, cls in ALGORITHM_SETTINGS.items():
            if name == self.algorithm and getattr(self, name) is None:
                object.__setattr__(self, name, cls())  # the section's defaults
            elif name != self.algorithm and getattr(self, name) is not None:
                raise ValueError(f"section {name} is for algorithm {name}; this config's algorithm is {self.algorithm}")
        for name in ("total_steps", "num_envs", "horizon"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("gamma", "gae_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")
        if not self.obs_clip > 0:
            raise ValueError(f"obs_clip must be > 0, got {self.obs_clip}")
        choices = {
            "init": ("normc", "orthogonal"),
            "adv_norm": ("batch", "minibatch", "none"),
            "time_limit": ("terminal", "bootstrap"),
            "network": NETWORKS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if (self.network == "mlp") != (self.env_protocol is None):
            raise ValueError("env_protocol is required with a convolutional network (Atari) and refused with "
                             f"network 'mlp' (MuJoCo); got network {self.network!r}, env_protocol {self.env_protocol!r}")
        if self.network not in spec.networks:
            takers = [name for name, other in specs().items() if self.network in other.networks]
            raise ValueError(f"algorithm {self.algorithm} is implemented with network(s) {list(spec.networks)}, not "
                             f"{self.network!r} (which {', '.join(takers)} take)")
        if self.network != "mlp" and self.algorithm == "a2c" and (self.a2c.trust_region or self.a2c.return_norm):
            raise ValueError("a2c.trust_region and a2c.return_norm are implemented for MuJoCo (network 'mlp') only")
        if self.algorithm == "ppo":
            if self.is_atari and (self.ppo.reward_norm or self.ppo.adv_recompute):
                raise ValueError("ppo.reward_norm and ppo.adv_recompute are implemented for MuJoCo (network 'mlp') "
                                 "only; an Atari protocol shapes the rewards itself (reward_clip, life_loss_signal)")
            if (self.num_envs * self.horizon) % self.ppo.minibatch_size:
                raise ValueError(f"ppo.minibatch_size {self.ppo.minibatch_size} must divide num_envs*horizon "
                                 f"{self.num_envs * self.horizon}")

    @property
    def is_atari(self) -> bool:
        return self.network != "mlp"

    @property
    def algorithm_key(self) -> str:
        """The line this run is in the records and reports (the manifest's ``algorithm``): its algorithm, or a
        mode the paper draws apart (a2c_trust_region, vpg_adaptive); declared by ppo/algorithms/<name>.py."""
        from .algorithms import algorithm_spec
        return algorithm_spec(self.algorithm).line(self)

    @property
    def settings(self):
        """The algorithm's own section (None for an algorithm without one)."""
        return getattr(self, self.algorithm, None)

    def structural_key(self) -> tuple:
        """Fields that must be equal for runs to share one batched group: for PPO everything but the
        objective (ε, β, d_targ and c2 are per run), for the baselines everything."""
        record = self.to_dict()
        if self.algorithm == "ppo":
            record["ppo"] = {k: v for k, v in record["ppo"].items() if k != "objective"}
        return tuple(sorted((k, repr(v)) for k, v in record.items()))

    def to_dict(self) -> dict[str, Any]:
        """The settings this run reads, as its record and digest hold them (schema SCHEMA_VERSION): each
        field's declaration (:func:`setting`) says which algorithm and network read it."""
        values = dataclasses.asdict(self)
        out = {}
        for f in dataclasses.fields(self):
            read_by, network = f.metadata.get("read_by"), f.metadata.get("network")
            if read_by not in (None, self.algorithm) or network not in (None, self.network):
                continue
            out[f.name] = values[f.name]
        return out




def _field_types(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def is_number(value) -> bool:
    """An int or a finite float: NaN and infinities are refused wherever a number is read."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or isinstance(value, float) and math.isfinite(value)


_TYPE_CHECKS = {  # annotation -> (test, what the error says)
    "int": (lambda v: is_number(v) and (isinstance(v, int) or v.is_integer()), "an integer"),
    "float": (is_number, "a finite number"),
    "float | None": (lambda v: v is None or is_number(v), "a finite number or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "str | None": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "tuple[int, ...]": (lambda v: isinstance(v, (list, tuple)) and 0 < len(v) <= 16
                        and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 4096 for x in v),
                        "a list of 1 to 16 integers in [1, 4096]"),
    "tuple[float, ...]": (lambda v: isinstance(v, (list, tuple)) and len(v) <= 16 and all(is_number(x) for x in v),
                          "a list of at most 16 finite numbers"),
}
# Ranges of numeric fields, by field name in whichever section: sizes that would exhaust memory or never
# finish, and coefficients whose sign the algorithms assume. The dataclasses check the finer rules.
_RANGES = {
    "total_steps": (1, 10**10), "num_envs": (1, 1024), "horizon": (1, 100_000), "epochs": (1, 1000),
    "minibatch_size": (1, 2**20), "cg_iters": (1, 1000), "line_search_steps": (1, 100), "vf_epochs": (1, 1000),
    "vf_minibatch_size": (1, 2**20), "fvp_subsample": (1, 2**20), "buffer_size": (1, 10**6),
    "replay_start": (0, 10**6), "lr_decay_steps": (1, 10**10), "extra_noise_decay_generations": (1, 10**9),
    "episodes_per_candidate": (1, 1000), "ent_coef": (0, 1e3), "vf_coef": (0, 1e3), "q_coef": (0, 1e3),
    "log_std_init": (-20, 20), "cg_damping": (0, 1e6), "max_kl": (0, 1e3), "obs_clip": (0, 1e6),
    "replay_ratio": (0, 100), "truncation_c": (0, 1e6), "init_std": (0, 1e6), "vf_clip": (0, 1e6),
    "target_kl": (0, 1e3), "reward_clip": (0, 1e6),
}
MAX_BATCH = 2**20  # num_envs * horizon: the steps one update holds in memory (CEM's 200 x 2048 = 409,600)


def _check_types(values: dict, cls, source: str, prefix: str = "") -> None:
    """Refuse a value of the wrong type (a quoted number, a string for a list...) naming the field."""
    fields = _field_types(cls)
    for name, value in values.items():
        check = _TYPE_CHECKS.get(str(fields[name].type))
        if check and not check[0](value):
            raise ConfigError(f"{source}: field {prefix}{name} must be {check[1]}, got {show(value)}")
        low, high = _RANGES.get(name, (-math.inf, math.inf))
        if is_number(value) and not low <= value <= high:
            raise ConfigError(f"{source}: field {prefix}{name} must lie in [{low:g}, {high:g}], got {show(value)}")


# Sections within a section: PPO's objective.
_NESTED = {PPOSettings: {"objective": Objective}}


def _build_section(values, cls, source: str, path: str):
    """A settings record from its mapping ``values`` at ``path`` (``ppo``, ``ppo.objective``), naming
    ``source`` and the field in every error."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: field '{path}' must be a mapping")
    known_fields = _field_types(cls)
    bad = sorted(set(values) - set(known_fields))
    if bad:
        raise ConfigError(f"{source}: unknown field(s) {path}.{bad}; known: {sorted(known_fields)}")
    nested = _NESTED.get(cls, {})
    _check_types({k: v for k, v in values.items() if k not in nested}, cls, source, f"{path}.")
    section = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    for key, value in section.items():
        if key in nested:
            section[key] = _build_section(value, nested[key], source, f"{path}.{key}")
        elif str(known_fields[key].type) == "int" and isinstance(value, float):
            section[key] = int(value)  # YAML reads 1e6 as a float; _check_types refused 1.5
    try:
        return cls(**section)
    except (TypeError, ValueError) as err:
        text, (parent, _, leaf) = str(err), path.rpartition(".")
        # a record names its own field ("must be > 0") or itself with it ("objective.kl_target needs ...")
        text = (f"{parent}.{text}" if parent else text) if text.startswith(f"{leaf}.") else f"{path}.{text}"
        raise ConfigError(f"{source}: {text}") from None


def is_setting(name: str) -> bool:
    """Whether ``name`` (``horizon``, ``ppo.epochs``, ``ppo.objective``, ``trpo.max_kl``) is a field of the run
    config or of one of its sections."""
    cls = RunConfig
    for part in name.split("."):
        fields = _field_types(cls) if cls is not None else {}
        if part not in fields:
            return False
        cls = ALGORITHM_SETTINGS.get(part) if cls is RunConfig else _NESTED.get(cls, {}).get(part)
    return True


def build_config(data: dict[str, Any], source: str) -> RunConfig:
    """Build a RunConfig from a plain mapping, naming ``source`` and the field in every error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of run settings, got {type(data).__name__}")
    known = _field_types(RunConfig)
    unknown = sorted(set(data) - set(known))
    moved = [name for name in unknown if name in _field_types(PPOSettings)]
    if moved:  # written for config schema 1, where PPO's settings were at top level
        raise ConfigError(f"{source}: field(s) {moved} are PPO's settings: they belong in section 'ppo' "
                          f"(ppo: {{{moved[0]}: ...}})")
    if unknown:
        raise ConfigError(f"{source}: unknown field(s) {unknown}; known fields: {sorted(known)}")
    _check_types({k: v for k, v in data.items() if k not in ALGORITHM_SETTINGS}, RunConfig, source)
    kwargs = dict(data)
    for name, cls in ALGORITHM_SETTINGS.items():
        if name in kwargs:
            kwargs[name] = _build_section(kwargs[name], cls, source, name)
    if "hidden_sizes" in kwargs:
        kwargs["hidden_sizes"] = tuple(kwargs["hidden_sizes"])
    for name in ("total_steps", "num_envs", "horizon"):
        # YAML reads 1e6 as a float; accept integral floats, refuse 1.5 or "abc".
        value = kwargs.get(name)
        if isinstance(value, float) and value.is_integer():
            kwargs[name] = int(value)
    try:
        config = RunConfig(**kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{source}: {err}") from None
    if config.num_envs * config.horizon > MAX_BATCH:
        raise ConfigError(f"{source}: field horizon: num_envs * horizon = {config.num_envs * config.horizon:,} steps "
                          f"per update exceeds the limit of {MAX_BATCH:,}")
    if config.env_protocol is not None:
        check_name(config.env_protocol, "field env_protocol", source)
    return config
