"""The settings records of a run config: the PPO surrogate (:class:`Objective`, every Table 1 setting is a
value of it) and each baseline's section (``trpo: {max_kl: 0.01}``), each checking its own rules. Which
algorithm reads which record is declared by the algorithm (ppo/algorithms/<name>.py SPEC.settings)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field


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
class PPOSettings:
    """PPO's section of the run config (ppo/algorithms/ppo.py): Table 3's K, M and Adam step size, the
    surrogate (:class:`Objective`), and the implementation details of later PPO code (baselines ppo2, CleanRL,
    Andrychowicz et al. 2021), off by default as in ppo1 and the paper."""

    epochs: int = 10  # K
    minibatch_size: int = 64  # M
    learning_rate: float = 3e-4
    lr_schedule: str = "constant"  # "constant" | "linear" (anneal to 0 over total_steps)
    adam_eps: float = 1e-5
    # c1 of Eq. 9; with separate networks it only rescales the value gradient
    vf_coef: float = 1.0
    max_grad_norm: float | None = None  # per-run global gradient-norm clip; None = off
    clip_schedule: str = "constant"  # "constant" | "linear" (ε·α, α annealed 1 → 0 like the lr: Table 5)
    # ε_v: value loss max((V − R)², (V_old + clip(V − V_old, ±ε_v) − R)²); None = plain
    vf_clip: float | None = None
    # a run's update stops after an epoch whose last minibatch had approx KL above it
    target_kl: float | None = None
    reward_norm: bool = False  # learner's rewards divided by a running std of the discounted return, per run
    reward_clip: float = 10.0  # with reward_norm: scaled rewards clipped to ±reward_clip
    adv_recompute: bool = False  # GAE again with the current value network before every epoch
    objective: Objective = field(default_factory=Objective)

    def __post_init__(self) -> None:
        for name in ("epochs", "minibatch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"learning_rate must be a finite number > 0, got {self.learning_rate}")
        _check_positive(self, "adam_eps", "reward_clip")
        _check_choice(self, lr_schedule=("constant", "linear"), clip_schedule=("constant", "linear"))
        for name in ("max_grad_norm", "vf_clip", "target_kl"):
            if getattr(self, name) is not None and not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 or null, got {getattr(self, name)}")
        if not self.reward_norm and self.reward_clip != 10.0:
            raise ValueError(f"reward_clip {self.reward_clip} has no effect without reward_norm: true (it clips the "
                             "scaled rewards); set reward_norm: true or remove reward_clip")


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
