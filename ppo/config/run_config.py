"""The run config (:class:`RunConfig`) and its validation from plain data (:func:`build_config`): every
error names the source and the field, in one line. The settings records and the types their fields accept
are in ppo/config/settings.py, the files they are read from (presets, variants) in ppo/config/experiments.py."""
from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, ValidationError
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError

from .errors import ConfigError, check_name, show
from .registry import algorithm_spec, specs
from .settings import (RECORD, A2CSettings, ACERSettings, Bool, CEMSettings, Fraction, Int, Layers, Num, Objective,
                       PPOSettings, Str, TRPOSettings, VPGSettings, within)

# algorithm -> its settings record, the config section of the same name
ALGORITHM_SETTINGS = {"ppo": PPOSettings, "a2c": A2CSettings, "acer": ACERSettings, "trpo": TRPOSettings,
                      "vpg": VPGSettings, "cem": CEMSettings}
ALGORITHMS = tuple(ALGORITHM_SETTINGS)  # those with a section here; ppo.config.registry.specs() has all
Network = Literal["mlp", "cnn_mnih2016", "cnn_nature"]
NETWORKS = get_args(Network)
# The shape of a run's record (RunConfig.to_dict). A change to it that keeps every run's behaviour gets a
# new number and a migration (ppo.config.schema), so that records written before it stay current.
SCHEMA_VERSION = 3


def setting(default=dataclasses.MISSING, *, read_by: str | None = None, network: str | None = None,
            default_factory=dataclasses.MISSING):
    """A field of the run config with what its record needs to know, declared where the field is:
    ``read_by``: the one algorithm that reads it (other algorithms' records omit it); ``network``: the one
    network family that reads it ("mlp": an Atari run's record omits it)."""
    meta = {"read_by": read_by, "network": network}
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def _registered(name: str) -> str:
    if name not in specs():
        raise PydanticCustomError("choice", f"must be one of {tuple(specs())}")
    return name


@dataclass(frozen=True, config=RECORD)
class RunConfig:
    """Everything that defines a run except its task and seed: the settings every algorithm reads (budget,
    rollout, network, observation handling) and one section per algorithm (``ppo``, ``a2c``, ...), of which
    only the run's algorithm's is set. Each field declares which algorithm and network read it
    (:func:`setting`), and a run's record and digest (:meth:`to_dict`) hold exactly those."""

    algorithm: Annotated[Str, AfterValidator(_registered)] = "ppo"  # ppo.config.registry.specs(): "ppo", "a2c", ...
    total_steps: Annotated[Int, within(1, 10**10)] = 1_000_000  # environment steps per run
    num_envs: Annotated[Int, within(1, 1024)] = 1  # actors per run
    horizon: Annotated[Int, within(1, 100_000)] = 2048  # T: steps per actor per update
    gamma: Fraction = 0.99
    gae_lambda: Fraction = 0.95
    hidden_sizes: Layers = setting((64, 64), network="mlp")
    # "normc" (baselines ppo1) | "orthogonal" (baselines ppo2, CleanRL)
    init: Literal["normc", "orthogonal"] = setting("normc", network="mlp")
    log_std_init: Annotated[Num, within(-20, 20)] = setting(0.0, network="mlp")
    # The policy's output layer at initialisation: its columns' norm (normc) or its orthogonal gain. 0.01 (ppo1,
    # ppo2, CleanRL) makes the first policy near uniform; baselines' A2C of 2017 used 1.0 (a2c_atari.yaml).
    policy_init_scale: Annotated[Num, within(0, 100), Field(gt=0)] = 0.01
    obs_norm: Bool = setting(True, network="mlp")  # running mean/std of observations, updated once per batch
    # clip normalized observations to ±obs_clip
    obs_clip: Annotated[Num, within(0, 1e6), Field(gt=0)] = setting(5.0, network="mlp")
    adv_norm: Literal["batch", "minibatch", "none"] = "batch"
    # "terminal" (ppo1) | "bootstrap" (r += γ·V(s_final) on truncation)
    time_limit: Literal["terminal", "bootstrap"] = "terminal"
    action_clip: Bool = setting(True, network="mlp")  # clip sampled actions to the action space before env.step
    # Atari (image observations): a shared convolutional torso with policy and value heads, and the
    # environment protocol named in experiments/protocols/.
    network: Network = "mlp"  # "mlp": separate policy and value MLPs
    env_protocol: Str | None = None  # Atari tasks only: experiments/protocols/<name>.yaml
    # None: not given (build_config refuses an explicit null); the run's algorithm's is filled in below
    ppo: PPOSettings | None = setting(None, read_by="ppo")
    a2c: A2CSettings | None = setting(None, read_by="a2c")
    acer: ACERSettings | None = setting(None, read_by="acer")
    trpo: TRPOSettings | None = setting(None, read_by="trpo")
    vpg: VPGSettings | None = setting(None, read_by="vpg")
    cem: CEMSettings | None = setting(None, read_by="cem")

    def __post_init__(self) -> None:
        spec = algorithm_spec(self.algorithm)  # every algorithm ppo.algorithms registered
        for name, cls in ALGORITHM_SETTINGS.items():
            if name == self.algorithm and getattr(self, name) is None:
                object.__setattr__(self, name, cls())  # the section's defaults
            elif name != self.algorithm and getattr(self, name) is not None:
                raise ValueError(f"section {name} is for algorithm {name}; this config's algorithm is {self.algorithm}")
        if (self.network == "mlp") != (self.env_protocol is None):
            raise ValueError("env_protocol is required with a convolutional network (Atari) and refused with network "
                             f"'mlp' (MuJoCo); got network {self.network!r}, env_protocol {show(self.env_protocol)}")
        if self.network not in spec.networks:
            takers = [name for name, other in specs().items() if self.network in other.networks]
            raise ValueError(f"algorithm {self.algorithm} is implemented with network(s) {list(spec.networks)}, not "
                             f"{self.network!r} (which {', '.join(takers)} take)")
        if self.network != "mlp" and self.algorithm == "a2c" and (self.a2c.trust_region or self.a2c.return_norm):
            raise ValueError("a2c.trust_region and a2c.return_norm are implemented for MuJoCo (network 'mlp') only")
        if self.algorithm == "ppo":
            if self.observation == "pixels" and (self.ppo.reward_norm or self.ppo.adv_recompute):
                raise ValueError("ppo.reward_norm and ppo.adv_recompute are implemented for MuJoCo (network 'mlp') "
                                 "only; an Atari protocol shapes the rewards itself (reward_clip, life_loss_signal)")
            if (self.num_envs * self.horizon) % self.ppo.minibatch_size:
                raise ValueError(f"ppo.minibatch_size {self.ppo.minibatch_size} must divide num_envs*horizon "
                                 f"{self.num_envs * self.horizon}")

    @property
    def observation(self) -> str:
        """What the network takes: "pixels" (a convolutional network: frames, scaled by the network) or
        "vector" (MLPs, with a running normaliser). A task's environment family must give the same
        (ppo/envs/family.py; the study checks it)."""
        return "vector" if self.network == "mlp" else "pixels"

    @property
    def algorithm_key(self) -> str:
        """The line this run is in the records and reports (the manifest's ``algorithm``): its algorithm, or a
        mode the paper draws apart (a2c_trust_region, vpg_adaptive); declared by ppo/algorithms/<name>.py."""
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


MAX_BATCH = 2**20  # num_envs * horizon: the steps one update holds in memory (CEM's 200 x 2048 = 409,600)


# The records within a record: each algorithm's section, PPO's objective.
_SECTIONS = {RunConfig: ALGORITHM_SETTINGS, PPOSettings: {"objective": Objective}}


def _record(path) -> type | None:
    """The record at ``path`` (() for RunConfig, ("ppo", "objective") for Objective), None if none is."""
    cls = RunConfig
    for name in path:
        cls = _SECTIONS.get(cls, {}).get(name)
    return cls


def is_setting(name: str) -> bool:
    """Whether ``name`` (``horizon``, ``ppo.epochs``, ``ppo.objective``, ``trpo.max_kl``) is a field of the run
    config or of one of its sections."""
    *path, leaf = name.split(".")
    cls = _record(path)
    return cls is not None and leaf in cls.__pydantic_fields__


# What a field must be, by pydantic's error type; a validator of ours says it itself (within: "must lie in").
_MUST = {"int_type": "be an integer", "float_type": "be a finite number", "finite_number": "be a finite number",
         "bool_type": "be true or false", "string_type": "be a string",
         "dataclass_type": "be a mapping", "greater_than": "be > {gt:g}", "greater_than_equal": "be >= {ge:g}",
         "too_short": "have {min_length} or more entries", "too_long": "have {max_length} or fewer entries"}


def _describe(error: dict, errors: list[dict], data: dict) -> str:
    """A pydantic error as this project writes one: the dotted field, what it must be, the value shown short."""
    loc, kind = error["loc"], error["type"]
    path = tuple(p for p in loc if isinstance(p, str))
    if kind == "unexpected_keyword_argument":  # every unknown field of that record, and the known ones
        unknown = sorted(e["loc"][-1] for e in errors if e["type"] == kind and e["loc"][:-1] == loc[:-1])
        known = sorted(_record(path[:-1]).__pydantic_fields__)
        moved = [name for name in unknown if not path[:-1] and name in PPOSettings.__pydantic_fields__]
        if moved:  # written for config schema 1, where PPO's settings were at top level
            return f"field(s) {moved} are PPO's settings: they belong in section 'ppo' (ppo: {{{moved[0]}: ...}})"
        if path[:-1]:
            return f"unknown field(s) {'.'.join(path[:-1])}.{unknown}; known: {known}"
        return f"unknown field(s) {unknown}; known fields: {known}"
    if kind == "invalid_key":
        return f"field names in {'.'.join(map(str, loc[:-1]))} must be text, got {show(error['input'])}"
    if kind == "value_error":  # a record's __post_init__: a rule joining its fields
        text, leaf = str(error["ctx"]["error"]), (path[-1] if path else "")
        # a record names its own field ("reward_clip ... has no effect") or itself with it ("objective.kl_target")
        return ".".join((*path[:-1], text) if text.startswith(f"{leaf}.") else (*path, text))
    annotation = _record(path[:-1]).__pydantic_fields__[path[-1]].annotation
    if kind == "literal_error":
        must = f"must be one of {get_args(annotation)}"
    elif kind in _MUST:
        must = "must " + _MUST[kind].format(**error.get("ctx", {}))
        # null is a value of the field (a section's null means "not given", refused in a file: build_config)
        must += " or null" if type(None) in get_args(annotation) and kind != "dataclass_type" else ""
    else:  # a validator of ours (within, _registered, _bounds), or pydantic's own words
        must = error["msg"]
    entry = "".join(f"[{p}]" for p in loc if isinstance(p, int))  # an entry of a list: the list too
    whole = f" in {show(_at(data, path))}" if entry else ""
    return f"field {'.'.join(path)}{entry} {must}, got {show(error['input'])}{whole}"


def _at(data, path):
    for name in path:
        data = data[name]
    return data


def build_config(data: dict[str, Any], source: str) -> RunConfig:
    """Build a RunConfig from a plain mapping, naming ``source`` and the field in every error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of run settings, got {type(data).__name__}")
    for name, value in data.items():
        if not isinstance(name, str):  # a keyword argument below
            raise ConfigError(f"{source}: field names must be text, got {show(name)}")
        if name in ALGORITHM_SETTINGS and value is None:  # RunConfig's "not given"; a file gives a mapping or nothing
            raise ConfigError(f"{source}: field {name} must be a mapping, got None")
    try:
        config = RunConfig(**data)
    except ValidationError as err:
        errors = sorted(err.errors(), key=lambda e: e["type"] != "unexpected_keyword_argument")  # unknown first
        raise ConfigError(f"{source}: {_describe(errors[0], errors, data)}") from None
    if config.num_envs * config.horizon > MAX_BATCH:
        raise ConfigError(f"{source}: field horizon: num_envs * horizon = {config.num_envs * config.horizon:,} steps "
                          f"per update exceeds the limit of {MAX_BATCH:,}")
    if config.env_protocol is not None:
        check_name(config.env_protocol, "field env_protocol", source)
    return config
