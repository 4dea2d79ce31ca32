"""The settings records of a run config: the PPO surrogate (:class:`Objective`, every Table 1 setting is a
value of it) and each baseline's section (``trpo: {max_kl: 0.01}``). Each record is a frozen pydantic
dataclass: a field's annotation says what it accepts (the types below), checked on construction, and
``__post_init__`` checks the rules that join fields. Which algorithm reads which record is declared by the
algorithm (ppo/algorithms/<name>.py SPEC.settings)."""
from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from pydantic import AfterValidator, AllowInfNan, BeforeValidator, ConfigDict, Field, Strict, WrapValidator
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError

from .errors import show


def within(low: float, high: float) -> AfterValidator:
    """Bounds of a size that would exhaust memory or never finish, or of a coefficient whose sign the
    algorithms assume."""
    def check(value):
        if not low <= value <= high:
            raise PydanticCustomError("range", f"must lie in [{low:g}, {high:g}]")
        return value
    return AfterValidator(check)


def _bounds(value: tuple) -> tuple:
    if len(value) != 2 or not 0 < value[0] < value[1]:
        raise PydanticCustomError("bounds", "must be [min, max] with 0 < min < max")
    return value


def listing(what: str) -> BeforeValidator:
    """A list of ``what`` (the error says so), read as a tuple: YAML has lists, records have tuples; a set
    (!!set) or a string is not a list."""
    def check(value):
        if not isinstance(value, (list, tuple)):
            raise PydanticCustomError("list", f"must be a list of {what}")
        return tuple(value)
    return BeforeValidator(check)


def _keep_int(value, check):
    """An int stays an int once checked as a number: 10, not 10.0, so a record and its digest keep what was
    written."""
    checked = check(value)
    return value if type(value) is int else checked


# Strict types: no text read as a number or a bool, no bool as a number.
Num = Annotated[float, Strict(), AllowInfNan(False), WrapValidator(_keep_int)]  # finite; 10**400 is not
# An integer: YAML reads 1e6 as a float, so an integral float is read as that int.
Int = Annotated[int, BeforeValidator(lambda v: int(v) if isinstance(v, float) and v.is_integer() else v), Strict()]
Bool = Annotated[bool, Strict()]
Str = Annotated[str, Strict()]
Pos = Annotated[Num, Field(gt=0)]
Fraction = Annotated[Num, within(0, 1)]
Coef = Annotated[Num, within(0, 1e3)]
Schedule = Literal["constant", "linear"]
Steps = Annotated[Int, within(1, 10**10)]
Epochs = Annotated[Int, within(1, 1000)]
Batch = Annotated[Int, within(1, 2**20)]
Layers = Annotated[tuple[Annotated[int, Strict(), within(1, 4096)], ...], listing("1 to 16 integers in [1, 4096]"),
                   Field(min_length=1, max_length=16)]
RECORD = ConfigDict(extra="forbid")  # an unknown field is refused, with the known ones


@dataclass(frozen=True, config=RECORD)
class Objective:
    """One point of the surrogate family  min(r·A, clip(r, 1±ε)·A) − β·KL[π_old, π] + c2·H.

    Every Table 1 setting is a value of this record, so no setting needs its own code path.
    """

    clip_epsilon: Pos | None = 0.2  # None = no clipping (ε = ∞)
    kl_beta: Annotated[Num, Field(ge=0)] = 0.0  # initial β; 0 = no KL penalty
    kl_target: Pos | None = None  # d_targ of the adaptive-β rule; None = β stays fixed
    ent_coef: Coef = 0.0  # c2 of Eq. 9

    def __post_init__(self) -> None:
        if self.kl_target is not None and self.kl_beta == 0:
            raise ValueError("objective.kl_target needs kl_beta > 0 (β = 0 can never adapt: 0·2 = 0)")


@dataclass(frozen=True, config=RECORD)
class PPOSettings:
    """PPO's section of the run config (ppo/algorithms/ppo.py): Table 3's K, M and Adam step size, the
    surrogate (:class:`Objective`), and the implementation details of later PPO code (baselines ppo2, CleanRL,
    Andrychowicz et al. 2021), off by default as in ppo1 and the paper."""

    epochs: Epochs = 10  # K
    minibatch_size: Batch = 64  # M
    learning_rate: Pos = 3e-4
    lr_schedule: Schedule = "constant"  # "linear": anneal to 0 over total_steps
    adam_eps: Pos = 1e-5
    # c1 of Eq. 9; with separate networks it only rescales the value gradient
    vf_coef: Coef = 1.0
    max_grad_norm: Pos | None = None  # per-run global gradient-norm clip; None = off
    clip_schedule: Schedule = "constant"  # "linear": ε·α, α annealed 1 → 0 like the lr (Table 5)
    # ε_v: value loss max((V − R)², (V_old + clip(V − V_old, ±ε_v) − R)²); None = plain
    vf_clip: Annotated[Num, within(0, 1e6), Field(gt=0)] | None = None
    # a run's update stops after an epoch whose last minibatch had approx KL above it
    target_kl: Annotated[Num, within(0, 1e3), Field(gt=0)] | None = None
    reward_norm: Bool = False  # learner's rewards divided by a running std of the discounted return, per run
    reward_clip: Annotated[Num, within(0, 1e6), Field(gt=0)] = 10.0  # with reward_norm: scaled rewards clipped to ±it
    adv_recompute: Bool = False  # GAE again with the current value network before every epoch
    objective: Objective = field(default_factory=Objective)

    def __post_init__(self) -> None:
        if not self.reward_norm and self.reward_clip != 10.0:
            raise ValueError(f"reward_clip {self.reward_clip} has no effect without reward_norm: true (it clips the "
                             "scaled rewards); set reward_norm: true or remove reward_clip")


# Hyperparameters of the Figure 3 baselines: one record per algorithm, a section of the run config named
# after it (``trpo: {max_kl: 0.01}``). The values a preset uses, and their sources, live in the preset.


@dataclass(frozen=True, config=RECORD)
class A2CSettings:
    """Synchronous advantage actor-critic (Mnih et al. 2016), optionally with ACER's trust region
    (Wang et al. 2016, Sec. 3.3). One optimizer step per collected batch (ppo/algorithms/a2c.py)."""

    learning_rate: Pos = 7e-4
    lr_schedule: Schedule = "linear"
    lr_decay_steps: Steps | None = None  # env steps over which "linear" reaches 0 (None: total_steps)
    # torch.optim.RMSprop | RMSProp as TensorFlow 1 ran it (ppo.nn.optim.TFStyleRMSprop: baselines' A2C) | Adam
    optimizer: Literal["rmsprop", "rmsprop_tf", "adam"] = "rmsprop"
    rmsprop_alpha: Fraction = 0.99  # RMSprop's decay of the squared-gradient average
    optimizer_eps: Pos = 1e-5
    vf_coef: Annotated[Coef, Field(gt=0)] = 0.5
    ent_coef: Coef = 0.01
    max_grad_norm: Pos | None = 0.5  # per-run global gradient-norm clip; None = off
    return_norm: Bool = False  # value targets divided by a running std of the λ-returns (Tianshou)
    trust_region: Bool = False  # ACER's efficient trust-region step (Wang et al. 2016, Sec. 3.3)
    trust_region_delta: Pos = 1.0  # δ: bound on the linearised KL to the average policy
    average_policy_decay: Fraction = 0.99  # α: θ_avg ← α θ_avg + (1 − α) θ


@dataclass(frozen=True, config=RECORD)
class ACERSettings:
    """Actor-critic with experience replay (Wang et al. 2016) for discrete actions: per iteration one on-policy
    step on the fresh segment, then Poisson(replay_ratio) steps on segments replayed from each run's buffer
    (ppo/algorithms/acer.py). Buffer sizes count agent steps per actor, as baselines acer's Buffer does."""

    learning_rate: Pos = 7e-4
    lr_schedule: Schedule = "constant"
    lr_decay_steps: Steps | None = None  # env steps over which "linear" reaches 0 (None: total_steps)
    # RMSProp as TensorFlow 1 ran it in baselines' ACER (ppo.nn.optim.TFStyleRMSprop) | torch.optim.RMSprop
    optimizer: Literal["rmsprop_tf", "rmsprop"] = "rmsprop_tf"
    rmsprop_alpha: Fraction = 0.99  # RMSprop's decay of the squared-gradient average
    optimizer_eps: Pos = 1e-5
    q_coef: Coef = 0.5  # weight of the Q loss ½(Q_ret − Q(s, a))²
    ent_coef: Coef = 0.01
    max_grad_norm: Pos | None = 10.0  # per-run global gradient-norm clip; None = off
    # replay capacity in agent steps per actor (kept as whole horizon-long segments)
    buffer_size: Annotated[Int, within(1, 10**6)] = 50_000
    # replay steps per on-policy step: Poisson with this mean; 0 = on-policy only
    replay_ratio: Annotated[Num, within(0, 100)] = 4.0
    replay_start: Annotated[Int, within(0, 10**6)] = 10_000  # replay once every actor holds this many steps
    # c: importance weights truncated at min(c, ρ), bias correction beyond
    truncation_c: Annotated[Num, within(0, 1e6), Field(gt=0)] = 10.0
    trust_region: Bool = True  # efficient trust region w.r.t. the average policy (Sec. 3.3)
    trust_region_delta: Pos = 1.0  # δ: bound on the linearised KL to the average policy
    average_policy_decay: Fraction = 0.99  # α: θ_avg ← α θ_avg + (1 − α) θ after every step

    def __post_init__(self) -> None:
        if self.replay_start > self.buffer_size:
            raise ValueError(f"replay_start {self.replay_start} exceeds buffer_size {self.buffer_size}: replay "
                             "would never start")


@dataclass(frozen=True, config=RECORD)
class TRPOSettings:
    """Trust region policy optimization (Schulman et al. 2015), value function fitted separately."""

    max_kl: Annotated[Coef, Field(gt=0)] = 0.01  # δ of the KL constraint
    cg_iters: Annotated[Int, within(1, 1000)] = 10
    cg_damping: Annotated[Num, within(0, 1e6)] = 0.1  # Fisher-vector products use F + damping·I
    cg_residual_tol: Pos = 1e-10  # a run's conjugate gradient stops once its |r|² falls below this
    # Fisher-vector products on every k-th sample of the batch (1 = all)
    fvp_subsample: Annotated[Int, within(1, 2**20)] = 5
    line_search_steps: Annotated[Int, within(1, 100)] = 10  # backtracking halvings of the natural step
    line_search_kl_factor: Pos = 1.5  # accept a step only if its mean KL <= factor · max_kl
    line_search_accept: Fraction = 0.0  # required fraction of the linearly expected improvement (0: any >= 0)
    vf_learning_rate: Pos = 1e-3
    vf_epochs: Epochs = 5
    vf_minibatch_size: Batch = 64
    vf_adam_eps: Pos = 1e-8
    ent_coef: Coef = 0.0


@dataclass(frozen=True, config=RECORD)
class VPGSettings:
    """Vanilla policy gradient; Adam step size adapted from the KL of each update (PPO paper Fig. 3)."""

    learning_rate: Pos = 1e-3  # initial Adam step size of the policy
    kl_target: Pos | None = 2e-3  # adapt the step size towards this KL; None = fixed step size
    # KL > target·band: step size / lr_factor; KL < target/band: step size · lr_factor
    kl_band: Annotated[Num, Field(gt=1)] = 2.0
    lr_factor: Annotated[Num, Field(gt=1)] = 1.5  # multiply/divide the step size by this
    # keep the step size in [min, max]
    lr_bounds: Annotated[tuple[Num, ...], listing("two numbers"), AfterValidator(_bounds)] = (1e-6, 1e-1)
    adam_eps: Pos = 1e-8  # the policy's Adam
    vf_learning_rate: Pos = 1e-3
    vf_epochs: Epochs = 10
    vf_minibatch_size: Batch = 64
    vf_adam_eps: Pos = 1e-8
    ent_coef: Coef = 0.0

    def __post_init__(self) -> None:
        if not self.lr_bounds[0] <= self.learning_rate <= self.lr_bounds[1]:
            raise ValueError(f"learning_rate {show(self.learning_rate)} must lie within lr_bounds "
                             f"{show(list(self.lr_bounds))}")


@dataclass(frozen=True, config=RECORD)
class CEMSettings:
    """Noisy cross-entropy method over the policy's parameters (Szita & Lőrincz 2006).

    The population is the run's ``num_envs``: each generation every actor evaluates one candidate
    parameter vector (ppo/algorithms/cem.py), so there is no separate population field to disagree with
    it. The elite count is round(elite_fraction · num_envs), checked when the algorithm is built.
    """

    # share of the population whose parameters refit the Gaussian
    elite_fraction: Annotated[Fraction, Field(gt=0)] = 0.2
    # initial standard deviation of every parameter (the mean is the network's init)
    init_std: Annotated[Num, within(0, 1e6), Field(gt=0)] = 1.0
    extra_noise: Annotated[Num, Field(ge=0)] = 0.0  # Z_0: variance added to every parameter's refitted variance
    extra_noise_decay_generations: Annotated[Int, within(1, 10**9)] = 100  # Z_t = Z_0 · max(0, 1 − t / this)
    # fitness = mean undiscounted return over this many episodes
    episodes_per_candidate: Annotated[Int, within(1, 1000)] = 1
