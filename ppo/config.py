"""Run configuration: presets, variants and their validation.

A *preset* (``experiments/presets/<name>.yaml``) is a complete set of hyperparameters plus, for every
detail the paper leaves unstated, the choice made and its source. A *variant*
(``experiments/variants/<name>.yaml``) is a preset plus a few overrides: a new ablation is one such
file, never new code. Unknown keys are refused with the file and field named.
"""
from __future__ import annotations

import dataclasses
import math
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS_DIR = PROJECT_ROOT / "experiments"


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


# Hyperparameters of the Figure 3 baselines: one record per algorithm, a section of the run config named
# after it (``trpo: {max_kl: 0.01}``). The values a preset uses, and their sources, live in the preset.


@dataclass(frozen=True)
class A2CSettings:
    """Synchronous advantage actor-critic (Mnih et al. 2016), optionally with ACER's trust region
    (Wang et al. 2016, Sec. 3.3). One optimizer step per collected batch (ppo/algorithms/a2c.py)."""

    learning_rate: float = 7e-4
    lr_schedule: str = "linear"  # "constant" | "linear"
    lr_decay_steps: int | None = None  # env steps over which "linear" reaches 0 (None: total_steps)
    optimizer: str = "rmsprop"  # "rmsprop" (torch.optim.RMSprop) | "adam"
    rmsprop_alpha: float = 0.99  # RMSprop's decay of the squared-gradient average
    optimizer_eps: float = 1e-5
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float | None = 0.5  # per-run global gradient-norm clip; None = off
    return_norm: bool = False  # value targets divided by a running std of the λ-returns (Tianshou)
    trust_region: bool = False  # ACER's efficient trust-region step (Wang et al. 2016, Sec. 3.3)
    trust_region_delta: float = 1.0  # δ: bound on the linearised KL to the average policy
    average_policy_decay: float = 0.99  # α: θ_avg ← α θ_avg + (1 − α) θ

    def __post_init__(self) -> None:
        _check_positive(self, "learning_rate", "optimizer_eps", "vf_coef", "trust_region_delta")
        _check_choice(self, lr_schedule=("constant", "linear"), optimizer=("rmsprop", "adam"))
        _check_fraction(self, "rmsprop_alpha", "average_policy_decay")
        if self.ent_coef < 0:
            raise ValueError(f"ent_coef must be >= 0, got {self.ent_coef}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or null, got {self.max_grad_norm}")
        steps = self.lr_decay_steps
        if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0):
            raise ValueError(f"lr_decay_steps must be a positive integer or null, got {steps!r}")


@dataclass(frozen=True)
class ACERSettings:
    """Actor-critic with experience replay (Wang et al. 2016) for discrete actions: per iteration one on-policy
    step on the fresh segment, then Poisson(replay_ratio) steps on segments replayed from each run's buffer
    (ppo/algorithms/acer.py). Buffer sizes count agent steps per actor, as baselines acer's Buffer does."""

    learning_rate: float = 7e-4
    lr_schedule: str = "constant"  # "constant" | "linear"
    lr_decay_steps: int | None = None  # env steps over which "linear" reaches 0 (None: total_steps)
    rmsprop_alpha: float = 0.99  # RMSprop's decay of the squared-gradient average
    optimizer_eps: float = 1e-5
    q_coef: float = 0.5  # weight of the Q loss ½(Q_ret − Q(s, a))²
    ent_coef: float = 0.01
    max_grad_norm: float | None = 10.0  # per-run global gradient-norm clip; None = off
    buffer_size: int = 50_000  # replay capacity in agent steps per actor (kept as whole horizon-long segments)
    replay_ratio: float = 4.0  # replay steps per on-policy step: Poisson with this mean; 0 = on-policy only
    replay_start: int = 10_000  # replay once every actor holds this many steps
    truncation_c: float = 10.0  # c: importance weights truncated at min(c, ρ), bias correction beyond
    trust_region: bool = True  # efficient trust region w.r.t. the average policy (Sec. 3.3)
    trust_region_delta: float = 1.0  # δ: bound on the linearised KL to the average policy
    average_policy_decay: float = 0.99  # α: θ_avg ← α θ_avg + (1 − α) θ after every step

    def __post_init__(self) -> None:
        _check_positive(self, "learning_rate", "optimizer_eps", "buffer_size", "truncation_c", "trust_region_delta")
        _check_choice(self, lr_schedule=("constant", "linear"))
        _check_fraction(self, "rmsprop_alpha", "average_policy_decay")
        for name in ("q_coef", "ent_coef", "replay_ratio", "replay_start"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")
        for name in ("buffer_size", "replay_start"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.replay_start > self.buffer_size:
            raise ValueError(f"replay_start {self.replay_start} exceeds buffer_size {self.buffer_size}: replay "
                             "would never start")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or null, got {self.max_grad_norm}")
        steps = self.lr_decay_steps
        if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0):
            raise ValueError(f"lr_decay_steps must be a positive integer or null, got {steps!r}")


@dataclass(frozen=True)
class TRPOSettings:
    """Trust region policy optimization (Schulman et al. 2015), value function fitted separately."""

    max_kl: float = 0.01  # δ of the KL constraint
    cg_iters: int = 10
    cg_damping: float = 0.1  # Fisher-vector products use F + damping·I
    cg_residual_tol: float = 1e-10  # a run's conjugate gradient stops once its |r|² falls below this
    fvp_subsample: int = 5  # Fisher-vector products on every k-th sample of the batch (1 = all)
    line_search_steps: int = 10  # backtracking halvings of the natural step
    line_search_kl_factor: float = 1.5  # accept a step only if its mean KL <= factor · max_kl
    line_search_accept: float = 0.0  # required fraction of the linearly expected improvement (0: any >= 0)
    vf_learning_rate: float = 1e-3
    vf_epochs: int = 5
    vf_minibatch_size: int = 64
    vf_adam_eps: float = 1e-8
    ent_coef: float = 0.0

    def __post_init__(self) -> None:
        _check_positive(self, "max_kl", "cg_iters", "cg_residual_tol", "fvp_subsample", "line_search_steps",
                        "line_search_kl_factor", "vf_learning_rate", "vf_epochs", "vf_minibatch_size",
                        "vf_adam_eps")
        _check_fraction(self, "line_search_accept")
        if self.cg_damping < 0:
            raise ValueError(f"cg_damping must be >= 0, got {self.cg_damping}")


@dataclass(frozen=True)
class VPGSettings:
    """Vanilla policy gradient; Adam step size adapted from the KL of each update (PPO paper Fig. 3)."""

    learning_rate: float = 1e-3  # initial Adam step size of the policy
    kl_target: float | None = 2e-3  # adapt the step size towards this KL; None = fixed step size
    kl_band: float = 2.0  # KL > target·band: step size / lr_factor; KL < target/band: step size · lr_factor
    lr_factor: float = 1.5  # multiply/divide the step size by this
    lr_bounds: tuple[float, ...] = (1e-6, 1e-1)  # keep the step size in [min, max]
    adam_eps: float = 1e-8  # the policy's Adam
    vf_learning_rate: float = 1e-3
    vf_epochs: int = 10
    vf_minibatch_size: int = 64
    vf_adam_eps: float = 1e-8
    ent_coef: float = 0.0

    def __post_init__(self) -> None:
        _check_positive(self, "learning_rate", "adam_eps", "vf_learning_rate", "vf_epochs", "vf_minibatch_size",
                        "vf_adam_eps")
        if self.kl_target is not None and not self.kl_target > 0:
            raise ValueError(f"kl_target must be > 0 or null, got {self.kl_target}")
        if not self.kl_band > 1:
            raise ValueError(f"kl_band must be > 1, got {self.kl_band}")
        if not self.lr_factor > 1:
            raise ValueError(f"lr_factor must be > 1, got {self.lr_factor}")
        if len(self.lr_bounds) != 2 or not 0 < self.lr_bounds[0] < self.lr_bounds[1]:
            raise ValueError(f"lr_bounds must be [min, max] with 0 < min < max, got {list(self.lr_bounds)}")
        if not self.lr_bounds[0] <= self.learning_rate <= self.lr_bounds[1]:
            raise ValueError(f"learning_rate {self.learning_rate} must lie within lr_bounds {list(self.lr_bounds)}")


@dataclass(frozen=True)
class CEMSettings:
    """Noisy cross-entropy method over the policy's parameters (Szita & Lőrincz 2006).

    The population is the run's ``num_envs``: each generation every actor evaluates one candidate
    parameter vector (ppo/algorithms/cem.py), so there is no separate population field to disagree with
    it. The elite count is round(elite_fraction · num_envs), checked when the algorithm is built.
    """

    elite_fraction: float = 0.2  # share of the population whose parameters refit the Gaussian
    init_std: float = 1.0  # initial standard deviation of every parameter (the mean is the network's init)
    extra_noise: float = 0.0  # Z_0: variance added to every parameter's refitted variance
    extra_noise_decay_generations: int = 100  # Z_t = Z_0 · max(0, 1 − t / this)
    episodes_per_candidate: int = 1  # fitness = mean undiscounted return over this many episodes

    def __post_init__(self) -> None:
        _check_positive(self, "init_std", "extra_noise_decay_generations", "episodes_per_candidate")
        if not 0 < self.elite_fraction <= 1:
            raise ValueError(f"elite_fraction must be in (0, 1], got {self.elite_fraction}")
        if not (self.extra_noise >= 0 and math.isfinite(self.extra_noise)):
            raise ValueError(f"extra_noise must be a finite number >= 0, got {self.extra_noise}")
        if not math.isfinite(self.init_std):
            raise ValueError(f"init_std must be finite, got {self.init_std}")


def _check_positive(obj, *names: str) -> None:
    for name in names:
        if not getattr(obj, name) > 0:
            raise ValueError(f"{name} must be > 0, got {getattr(obj, name)}")


def _check_fraction(obj, *names: str) -> None:
    for name in names:
        if not 0 <= getattr(obj, name) <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {getattr(obj, name)}")


def _check_choice(obj, **allowed: tuple) -> None:
    for name, values in allowed.items():
        if getattr(obj, name) not in values:
            raise ValueError(f"{name} must be one of {values}, got {getattr(obj, name)!r}")


# algorithm -> its settings record (the config section of the same name); PPO's live at top level.
ALGORITHM_SETTINGS = {"a2c": A2CSettings, "acer": ACERSettings, "trpo": TRPOSettings, "vpg": VPGSettings,
                      "cem": CEMSettings}
ALGORITHMS = ("ppo", *ALGORITHM_SETTINGS)
NETWORKS = ("mlp", "cnn_mnih2016", "cnn_nature")
# Fields added after the first published runs (with Atari, then PPO's implementation details of issue 18); at
# these defaults they are left out of a run's settings (and so of its digest), so earlier records stay current.
ADDED_FIELDS = {"network": "mlp", "env_protocol": None, "clip_schedule": "constant",
                "vf_clip": None, "target_kl": None, "reward_norm": False, "reward_clip": 10.0, "adv_recompute": False}
# Settings of the MLP policy and its observation handling that an image-observation run does not read.
MUJOCO_ONLY = ("hidden_sizes", "init", "log_std_init", "obs_norm", "obs_clip", "action_clip")
PPO_ONLY = ("epochs", "minibatch_size", "learning_rate", "lr_schedule", "adam_eps", "vf_coef", "max_grad_norm",
            "objective", "clip_schedule", "vf_clip", "target_kl", "reward_norm", "reward_clip", "adv_recompute")


@dataclass(frozen=True)
class PPOConfig:
    """Everything that defines a run except its task and seed: PPO's settings at top level, shared ones
    (budget, rollout, network, observation handling) too, and a baseline's own in its section."""

    algorithm: str = "ppo"  # "ppo" | "a2c" | "acer" | "trpo" | "vpg" | "cem"
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
    # Atari (image observations): a shared convolutional torso with policy and value heads, the
    # environment protocol named in experiments/protocols/, and Table 5's annealing of ε with α.
    network: str = "mlp"  # "mlp" (separate policy and value MLPs) | "cnn_mnih2016" | "cnn_nature"
    env_protocol: str | None = None  # Atari tasks only: experiments/protocols/<name>.yaml
    clip_schedule: str = "constant"  # "constant" | "linear" (ε·α, α annealed 1 → 0 like the lr)
    # Implementation details of later PPO code (baselines ppo2, CleanRL, Andrychowicz et al. 2021), off by default
    # as in ppo1 and the paper; ppo/algorithms/ppo.py applies them in its one update.
    vf_clip: float | None = None  # ε_v: value loss max((V − R)², (V_old + clip(V − V_old, ±ε_v) − R)²); None = plain
    target_kl: float | None = None  # a run's update stops after an epoch whose last minibatch had approx KL above it
    reward_norm: bool = False  # learner's rewards divided by a running std of the discounted return, per run
    reward_clip: float = 10.0  # with reward_norm: scaled rewards clipped to ±reward_clip
    adv_recompute: bool = False  # GAE again with the current value network before every epoch
    objective: Objective = field(default_factory=Objective)
    a2c: A2CSettings | None = None
    acer: ACERSettings | None = None
    trpo: TRPOSettings | None = None
    vpg: VPGSettings | None = None
    cem: CEMSettings | None = None

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        for name, cls in ALGORITHM_SETTINGS.items():
            if name == self.algorithm and getattr(self, name) is None:
                object.__setattr__(self, name, cls())  # the section's defaults
            elif name != self.algorithm and getattr(self, name) is not None:
                raise ValueError(f"section {name} is for algorithm {name}; this config's algorithm is {self.algorithm}")
        positive = ["total_steps", "num_envs", "horizon", "epochs", "minibatch_size"]
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        for name in ("gamma", "gae_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")
        if not math.isfinite(self.learning_rate):
            raise ValueError(f"learning_rate must be finite, got {self.learning_rate}")
        for name in ("adam_eps", "obs_clip"):
            if not (getattr(self, name) > 0):
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("max_grad_norm", "vf_clip", "target_kl"):
            if getattr(self, name) is not None and not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 or null, got {getattr(self, name)}")
        if not self.reward_clip > 0:
            raise ValueError(f"reward_clip must be > 0, got {self.reward_clip}")
        if not self.reward_norm and self.reward_clip != 10.0:
            raise ValueError(f"reward_clip {self.reward_clip} has no effect without reward_norm: true (it clips the "
                             "scaled rewards); set reward_norm: true or remove reward_clip")
        if self.is_atari and (self.reward_norm or self.adv_recompute):
            raise ValueError("reward_norm and adv_recompute are implemented for MuJoCo (network 'mlp') only; an Atari "
                             "protocol shapes the rewards itself (reward_clip, life_loss_signal)")
        choices = {
            "lr_schedule": ("constant", "linear"),
            "init": ("normc", "orthogonal"),
            "adv_norm": ("batch", "minibatch", "none"),
            "time_limit": ("terminal", "bootstrap"),
            "network": NETWORKS,
            "clip_schedule": ("constant", "linear"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if (self.network == "mlp") != (self.env_protocol is None):
            raise ValueError("env_protocol is required with a convolutional network (Atari) and refused with "
                             f"network 'mlp' (MuJoCo); got network {self.network!r}, env_protocol {self.env_protocol!r}")
        from .algorithms import algorithm_spec, specs  # not at import: the algorithms' modules import this one
        spec = algorithm_spec(self.algorithm)
        if self.network not in spec.networks:
            takers = [name for name, other in specs().items() if self.network in other.networks]
            raise ValueError(f"algorithm {self.algorithm} is implemented with network(s) {list(spec.networks)}, not "
                             f"{self.network!r} (which {', '.join(takers)} take)")
        if self.network != "mlp" and self.algorithm == "a2c" and (self.a2c.trust_region or self.a2c.return_norm):
            raise ValueError("a2c.trust_region and a2c.return_norm are implemented for MuJoCo (network 'mlp') only")
        if self.algorithm == "ppo" and (self.num_envs * self.horizon) % self.minibatch_size:
            raise ValueError(
                f"minibatch_size {self.minibatch_size} must divide num_envs*horizon "
                f"{self.num_envs * self.horizon}"
            )

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
        """The algorithm's own section (None for PPO, whose settings are the top-level fields)."""
        return getattr(self, self.algorithm, None)

    def structural_key(self) -> tuple:
        """Fields that must be equal for runs to share one batched group: for PPO everything but the
        objective (ε, β, d_targ and c2 are per run), for the baselines everything."""
        per_run = ("objective",) if self.algorithm == "ppo" else ()
        return tuple(sorted((k, repr(v)) for k, v in self.to_dict().items() if k not in per_run))

    def to_dict(self) -> dict[str, Any]:
        """The settings this run uses: a baseline's record omits PPO's fields and other sections."""
        out = dataclasses.asdict(self)
        for name, default in ADDED_FIELDS.items():
            if out[name] == default:  # a record written before the field existed keeps its digest
                del out[name]
        if self.is_atari:
            for name in MUJOCO_ONLY:
                del out[name]
        for name in ALGORITHM_SETTINGS:
            if name != self.algorithm:
                del out[name]
        if self.algorithm != "ppo":
            for name in PPO_ONLY:
                out.pop(name, None)
        return out


def _field_types(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _is_number(value) -> bool:
    """An int or a finite float: NaN and infinities are refused wherever a number is read."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or isinstance(value, float) and math.isfinite(value)


_TYPE_CHECKS = {  # annotation -> (test, what the error says)
    "int": (lambda v: _is_number(v) and (isinstance(v, int) or v.is_integer()), "an integer"),
    "float": (_is_number, "a finite number"),
    "float | None": (lambda v: v is None or _is_number(v), "a finite number or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "str | None": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "tuple[int, ...]": (lambda v: isinstance(v, (list, tuple)) and 0 < len(v) <= 16
                        and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 4096 for x in v),
                        "a list of 1 to 16 integers in [1, 4096]"),
    "tuple[float, ...]": (lambda v: isinstance(v, (list, tuple)) and len(v) <= 16 and all(_is_number(x) for x in v),
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
        if _is_number(value) and not low <= value <= high:
            raise ConfigError(f"{source}: field {prefix}{name} must lie in [{low:g}, {high:g}], got {show(value)}")


def build_config(data: dict[str, Any], source: str) -> PPOConfig:
    """Build a PPOConfig from a plain mapping, naming ``source`` and the field in every error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of PPO settings, got {type(data).__name__}")
    known = _field_types(PPOConfig)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{source}: unknown field(s) {unknown}; known fields: {sorted(known)}")
    sections = {"objective": Objective, **ALGORITHM_SETTINGS}
    _check_types({k: v for k, v in data.items() if k not in sections}, PPOConfig, source)
    kwargs = dict(data)
    algorithm = kwargs.get("algorithm", "ppo")
    if algorithm != "ppo":
        stray = sorted(set(kwargs) & set(PPO_ONLY))
        if stray:
            raise ConfigError(f"{source}: field(s) {stray} are PPO's; algorithm {algorithm} takes its "
                              f"settings from section '{algorithm}'")
    for name, cls in sections.items():
        if name not in kwargs:
            continue
        section = kwargs[name]
        if not isinstance(section, dict):
            raise ConfigError(f"{source}: field '{name}' must be a mapping")
        known_fields = _field_types(cls)
        bad = sorted(set(section) - set(known_fields))
        if bad:
            raise ConfigError(f"{source}: unknown field(s) {name}.{bad}; known: {sorted(known_fields)}")
        _check_types(section, cls, source, f"{name}.")
        section = {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}
        for key, value in section.items():
            if str(known_fields[key].type) == "int" and isinstance(value, float):
                section[key] = int(value)
        try:
            kwargs[name] = cls(**section)
        except (TypeError, ValueError) as err:
            message = str(err) if str(err).startswith(f"{name}.") else f"{name}.{err}"
            raise ConfigError(f"{source}: {message}") from None
    if "hidden_sizes" in kwargs:
        kwargs["hidden_sizes"] = tuple(kwargs["hidden_sizes"])
    for name in ("total_steps", "num_envs", "horizon", "epochs", "minibatch_size"):
        # YAML reads 1e6 as a float; accept integral floats, refuse 1.5 or "abc".
        value = kwargs.get(name)
        if isinstance(value, float) and value.is_integer():
            kwargs[name] = int(value)
    try:
        config = PPOConfig(**kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{source}: {err}") from None
    if config.num_envs * config.horizon > MAX_BATCH:
        raise ConfigError(f"{source}: field horizon: num_envs * horizon = {config.num_envs * config.horizon:,} steps "
                          f"per update exceeds the limit of {MAX_BATCH:,}")
    if config.env_protocol is not None:
        check_name(config.env_protocol, "field env_protocol", source)
    return config


def deep_merge(base: dict, overrides: dict) -> dict:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


MAX_YAML_BYTES = 1_000_000
MAX_YAML_DEPTH = 20


class _StrictLoader(yaml.SafeLoader):
    """yaml.safe_load for experiment files, refusing what could exhaust memory or break the readers:
    aliases (an alias bomb of a few hundred bytes expands to gigabytes when printed or written; a cyclic
    alias never ends), nesting deeper than MAX_YAML_DEPTH, mapping keys that are not strings, and a key
    given twice in one mapping (instead of: the last one wins)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in experiment files",
                                              self.peek_event().start_mark)
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise yaml.constructor.ConstructorError(
                    None, None, f"field names must be text, got {show(key)}", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"field {show(key)} is given more than once (duplicate key)", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _read_yaml(path: Path) -> dict:
    """A YAML file's top-level mapping; any failure is one ConfigError naming the file (and line)."""
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read it ({err.strerror or type(err).__name__})") from None
    if len(raw) > MAX_YAML_BYTES:
        raise ConfigError(f"{path}: {len(raw):,} bytes, more than the limit of {MAX_YAML_BYTES:,} for an experiment file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[err.start]:02x} at line {line})") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        context, start = getattr(err, "context", None), getattr(err, "context_mark", None)
        if context and start:  # where the unfinished construct began, often the line to fix
            problem += f" ({context} started at line {start.line + 1})"
        raise ConfigError(f"{path}: not valid YAML{where}: {' '.join(problem.split())[:200]}") from None
    except (ValueError, OverflowError, RecursionError) as err:  # e.g. an integer of 5000 digits
        raise ConfigError(f"{path}: not valid YAML: {type(err).__name__}: {' '.join(str(err).split())[:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at top level")
    return data


def _check_keys(data: dict, allowed: set[str], required: set[str], path: Path, prefix: str = "") -> None:
    """Refuse unknown and missing fields of a mapping; ``prefix`` names where it sits ("settings.")."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: field {prefix.rstrip('.') or '(top level)'} must be a mapping, got {show(data)}")
    unknown = sorted(map(str, set(data) - allowed))
    if unknown:
        raise ConfigError(f"{path}: unknown field(s) {show([prefix + k for k in unknown] if prefix else unknown)}; "
                          f"allowed: {sorted(allowed)}")
    missing = sorted(required - set(data))
    if missing:
        raise ConfigError(f"{path}: missing field(s) {[prefix + k for k in missing] if prefix else missing}")


_CHOICE_KEY = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")
MAX_LABEL = 100
MAX_DESCRIPTION = 1000


def check_label(label, source: str) -> str:
    """A label names a row of every table and a line of every figure, so it must render in both:
    one line of printable text, no '$' (matplotlib reads it as mathematics), no '|' (it splits a markdown
    table's cell), not starting with '_' (matplotlib leaves such a line out of the legend)."""
    if not isinstance(label, str) or not label.strip():
        raise ConfigError(f"{source}: field label must be a non-empty string, got {show(label)}")
    if len(label) > MAX_LABEL or not label.isprintable() or "$" in label or "|" in label or label.startswith("_"):
        raise ConfigError(f"{source}: field label {show(label)} cannot be shown in tables and figures: use one line "
                          f"of at most {MAX_LABEL} printable characters without '$' or '|', not starting with '_'")
    return label


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
    if not isinstance(data["choices"], dict):
        raise ConfigError(f"{path}: field choices must be a mapping of setting -> {{paper_states, source}}")
    for key, choice in data["choices"].items():  # each becomes a row of the report's deviations table
        if not _CHOICE_KEY.fullmatch(key):
            raise ConfigError(f"{path}: field choices: key {show(key)} is not a setting name (e.g. horizon, trpo.max_kl)")
        if not isinstance(choice, dict) or not {"paper_states", "source"} <= set(choice):
            raise ConfigError(f"{path}: choices.{key} needs 'paper_states' and 'source'")
        if not isinstance(choice["paper_states"], bool) or not isinstance(choice["source"], str):
            raise ConfigError(f"{path}: field choices.{key}: paper_states must be true or false and source a text, "
                              f"got {show(choice['paper_states'])}, {show(choice['source'])}")
    return Preset(name=name, config=data["config"], choices=data["choices"], path=path)


# A variant's claim, in a form a report can check (the ``details`` report; analysis/details.py): the direction of
# the effect on the normalised score against the study's anchor and, optionally, the mechanism the claim names,
# as one per-update statistic of the runs compared with a number or with the anchor's value. It is read by the
# reports only: it never enters a run's settings or digest, so writing one re-trains nothing.
CLAIM_DIRECTIONS = ("better", "worse", "none")  # the score rises | falls | hardly moves (|effect| < margin)
CLAIM_STATS = ("approx_kl", "kl", "clipfrac", "entropy", "explained_variance", "early_stop_fraction",
               "diverged_fraction")  # updates.parquet columns, mean per run; and two fractions (analysis/details.py)
CLAIM_OPS = ("<", ">")
_ENV_NAME = re.compile(r"[A-Z][A-Za-z0-9]{0,49}")  # a task without its version: HalfCheetah, Pong


@dataclass(frozen=True)
class Mechanism:
    stat: str  # one of CLAIM_STATS
    op: str  # "<" | ">"
    value: float | str  # a number, or "anchor": the anchor's value of the same statistic


@dataclass(frozen=True)
class Claim:
    direction: str  # one of CLAIM_DIRECTIONS: the predicted effect on the score against the anchor
    tasks: tuple[str, ...] = ()  # the tasks the claim is about, without version ("HalfCheetah"); () = all
    margin: float | None = None  # direction "none" only: the largest |effect| that is "little change"
    mechanism: Mechanism | None = None

    def text(self) -> str:
        """The prediction in a few words, as the claims table prints it."""
        if self.direction == "none":
            score = f"score within ±{self.margin:g} of the anchor"
        else:
            score = f"score {'above' if self.direction == 'better' else 'below'} the anchor"
        where = f" on {', '.join(self.tasks)}" if self.tasks else ""
        return score + where + (f"; {self.mechanism_text()}" if self.mechanism else "")

    def mechanism_text(self) -> str:
        m = self.mechanism
        return "" if m is None else f"{m.stat} {m.op} {m.value if isinstance(m.value, str) else f'{m.value:g}'}"


def load_claim(data, path: Path, config: PPOConfig) -> Claim:
    """Validate a variant's ``claim`` mapping; every error names the file and the field."""
    _check_keys(data, {"direction", "tasks", "margin", "mechanism"}, {"direction"}, path, "claim.")
    direction = data["direction"]
    if direction not in CLAIM_DIRECTIONS:
        raise ConfigError(f"{path}: field claim.direction must be one of {list(CLAIM_DIRECTIONS)}, "
                          f"got {show(direction)}")
    tasks = data.get("tasks", [])
    if (not isinstance(tasks, list) or len(tasks) > 100
            or not all(isinstance(t, str) and _ENV_NAME.fullmatch(t) for t in tasks)):
        raise ConfigError(f"{path}: field claim.tasks must be a list of task names without version "
                          f"(e.g. [HalfCheetah, Swimmer]), got {show(tasks)}")
    if len(set(tasks)) != len(tasks):
        raise ConfigError(f"{path}: field claim.tasks names a task twice: {show(tasks)}")
    margin = data.get("margin")
    if direction == "none" and margin is None:
        raise ConfigError(f"{path}: field claim.margin is needed with direction none: the largest change of the "
                          "normalised score (random = 0, best = 1) that counts as little change, e.g. 0.1")
    if direction != "none" and margin is not None:
        raise ConfigError(f"{path}: field claim.margin applies to direction none only (this claim is {direction})")
    if margin is not None and not (_is_number(margin) and 0 < margin <= 1):
        raise ConfigError(f"{path}: field claim.margin must be a number in (0, 1], got {show(margin)}")
    mechanism = data.get("mechanism")
    if mechanism is not None:
        _check_keys(mechanism, {"stat", "op", "value"}, {"stat", "op", "value"}, path, "claim.mechanism.")
        stat, op, value = mechanism["stat"], mechanism["op"], mechanism["value"]
        if stat not in CLAIM_STATS:
            raise ConfigError(f"{path}: field claim.mechanism.stat must be one of {list(CLAIM_STATS)}, "
                              f"got {show(stat)}")
        if op not in CLAIM_OPS:
            raise ConfigError(f"{path}: field claim.mechanism.op must be one of {list(CLAIM_OPS)}, got {show(op)}")
        if value != "anchor" and not _is_number(value):
            raise ConfigError(f"{path}: field claim.mechanism.value must be a finite number or 'anchor', "
                              f"got {show(value)}")
        if stat == "early_stop_fraction" and config.target_kl is None:
            raise ConfigError(f"{path}: field claim.mechanism.stat early_stop_fraction needs target_kl, which this "
                              "variant does not set")
        mechanism = Mechanism(stat, op, value if isinstance(value, str) else float(value))
    return Claim(direction, tuple(tasks), None if margin is None else float(margin), mechanism)


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    preset: Preset
    overrides: dict
    config: PPOConfig  # preset + overrides, resolved (total_steps is set per study scale)
    paper_row: dict | None  # matching row of reference/ppo2017_table1.csv, if any
    path: Path
    description: str | None = None  # the claim the variant tests, in a sentence or two (optional)
    named_preset: str = ""  # the preset the variant file names, when a study put another in its place
    claim: Claim | None = None  # the same claim, machine-readable (optional; never part of the run's settings)


def table1_row(config: PPOConfig) -> dict[str, str] | None:
    """The row of reference/ppo2017_table1.csv that a PPO config's surrogate is (setting, param), or None:
    Table 1 varies one term of the objective at a time and has no entropy bonus."""
    o = config.objective
    if config.algorithm != "ppo" or o.ent_coef != 0:
        return None
    if o.kl_beta == 0:
        if o.clip_epsilon is None:
            return {"setting": "no_clipping_or_penalty", "param": ""}
        return {"setting": "clipping", "param": f"epsilon={o.clip_epsilon:g}"}
    if o.clip_epsilon is not None:
        return None  # clipping and a KL penalty together: no row
    if o.kl_target is not None:
        return {"setting": "adaptive_kl", "param": f"d_targ={o.kl_target:g}"}
    return {"setting": "fixed_kl", "param": f"beta={o.kl_beta:g}"}


def check_paper_row(paper_row: dict, overrides: dict, config: PPOConfig, path: Path) -> None:
    """A variant's paper_row must be the Table 1 row its overrides make, and they may change only the
    surrogate: the report prints the paper's number beside ours on the strength of this claim."""
    derived = table1_row(config)
    if derived != paper_row:
        what = (f"Table 1's row {{setting: {derived['setting']}, param: {derived['param']!r}}}" if derived
                else "no row of Table 1")
        raise ConfigError(f"{path}: field paper_row {{setting: {paper_row['setting']}, param: "
                          f"{paper_row['param']!r}}} does not match the variant's objective, which is {what}")
    other = sorted(set(overrides) - {"objective"})
    if other:
        raise ConfigError(f"{path}: field overrides.{other[0]}: a variant with a paper_row may change only the "
                          "objective (Table 1 varies the surrogate alone); remove paper_row or the override")


def load_variant(name: str, experiments_dir: Path = EXPERIMENTS_DIR, *, presets: dict[str, str] | None = None,
                 **extra: Any) -> Variant:
    """Load ``experiments/variants/<name>.yaml``; ``extra`` overrides (e.g. total_steps) apply last.

    ``presets`` (a study's ``presets`` field) maps the preset a variant names to the one it is applied to
    instead: the same ablation on other tasks' settings (the Table 1 variants on ppo_classic)."""
    path = experiments_dir / "variants" / f"{name}.yaml"
    check_name(name, "variant name", str(path))
    data = _read_yaml(path)
    _check_keys(data, {"label", "preset", "overrides", "paper_row", "description", "claim"}, {"label", "preset"},
                path)
    check_label(data["label"], str(path))
    description = data.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > MAX_DESCRIPTION
                                    or not " ".join(description.split()).isprintable()):
        raise ConfigError(f"{path}: field description must be text of at most {MAX_DESCRIPTION} characters, "
                          f"got {show(description)}")
    available = sorted(p.stem for p in (experiments_dir / "presets").glob("*.yaml"))
    named = check_name(data["preset"], "field preset", str(path))
    preset_name = (presets or {}).get(named, named)
    if preset_name not in available:
        raise ConfigError(f"{path}: field preset: no preset {preset_name!r} "
                          f"({experiments_dir / 'presets' / preset_name}.yaml does not exist); available: {available}")
    preset = load_preset(preset_name, experiments_dir)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{path}: field 'overrides' must be a mapping")
    replaced = sorted(set(extra) & set(overrides))
    if replaced:  # the study's scale sets these; an override would be silently replaced
        raise ConfigError(f"{path}: field overrides.{replaced[0]} is set by the study's scale; remove it here")
    merged = deep_merge(deep_merge(preset.config, overrides), extra)
    config = build_config(merged, str(path) if named == preset_name else f"{path} (applied to preset {preset_name})")
    if config.is_atari:
        from .atari import load_protocol  # ppo.atari imports this module
        try:
            load_protocol(config.env_protocol, experiments_dir)
        except ConfigError as err:
            raise ConfigError(f"{path}: field env_protocol: {err}") from None
    paper_row = data.get("paper_row")
    if paper_row is not None and not isinstance(paper_row, dict):
        raise ConfigError(f"{path}: field paper_row must be a mapping {{setting, param}}, got {show(paper_row)}")
    if paper_row is not None:
        _check_keys(paper_row, {"setting", "param"}, {"setting", "param"}, path)
        for key, value in paper_row.items():  # written to every manifest, read back by the reports
            if not isinstance(value, str) or len(value) > MAX_LABEL or not value.isprintable():
                raise ConfigError(f"{path}: field paper_row.{key} must be one line of text, got {show(value)}")
        check_paper_row(paper_row, overrides, config, path)
    claim = load_claim(data["claim"], path, config) if data.get("claim") is not None else None
    return Variant(name, data["label"], preset, overrides, config, paper_row, path,
                   description=" ".join(description.split()) if description else None,
                   named_preset=named if named != preset_name else "", claim=claim)
