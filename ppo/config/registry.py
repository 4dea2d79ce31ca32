"""What an algorithm is, declared once beside its code: the interface the driver calls (:class:`Algorithm`)
and the facts the rest of the suite reads (:class:`AlgorithmSpec`).

Each module ``ppo/algorithms/<name>.py`` ends with ``SPEC = AlgorithmSpec(...)``, which ppo.algorithms registers here.
The declarations hold no torch code, so the config layer reads them without the algorithms' modules. Config validation (which
networks and action spaces it takes), the driver (which statistics may be NaN), the workflow (memory per
job), the reports (its lines, their labels, order and published reference) and the conformance suite
(tests/algorithms/test_conformance.py: its tiny config and its learning check) read that declaration; nothing else
lists the algorithms. Adding one is that module, a preset and a variant file.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# What the declarations are about, for the annotations: ppo.config.run_config.RunConfig (which imports this module),
# ppo.algorithms.rollout.GroupContext and torch tensors (layers above this one).
RunConfig = GroupContext = Tensor = Any

MLP = ("mlp",)
CONVNETS = ("cnn_mnih2016", "cnn_nature")


class Algorithm(Protocol):
    """One algorithm training every run of a group at once (built from a GroupContext, ppo/algorithms/rollout.py)."""

    num_iterations: int | None  # iterations to run; None: until every run has spent its step budget

    def iterate(self, iteration: int) -> dict[str, Any]:
        """One iteration for every run: {statistic: tensor or array of shape [G]} (``rollout_seconds``: a
        scalar, the rollout's share of the wall time)."""

    def finite(self) -> Tensor:
        """[G] bool: whether each run's parameters are all finite (else it diverged)."""

    def state_dict(self) -> dict:
        """Everything needed to resume bit-identically: tensors and plain data only (loaded weights_only)."""

    def load_state_dict(self, state: dict) -> None: ...

    def run_model(self, g: int) -> dict:
        """What model.pt keeps of run ``g``."""


@dataclass(frozen=True)
class Line:
    """One name an algorithm's runs carry in the records and reports (the manifest's ``algorithm``): an
    algorithm, or one of its modes that the paper draws as its own line (A2C + trust region)."""

    key: str
    label: str  # how the reports name it
    variant: str | None = None  # experiments/variants/<variant>.yaml: this line at its paper settings
    reference: str | None = None  # leading token of its rows in reference/mujoco_reference_scores.csv


@dataclass(frozen=True)
class LearningCheck:
    """A short real learning test (tests/algorithms/test_conformance.py): the variant with ``overrides`` trained for
    ``steps`` on ``task``; every seed's first ``start_window`` episodes average below ``start_below`` (it starts
    near the random policy) and its best mean over ``window`` consecutive episodes reaches ``threshold``.
    ``why`` says what was measured when the numbers were chosen."""

    variant: str
    task: str
    steps: int
    threshold: float
    start_below: float
    window: int
    seeds: tuple[int, ...]
    why: str
    overrides: dict = field(default_factory=dict)
    start_window: int = 20


def default_memory_mb(cfg: RunConfig, num_runs: int, total_steps: int) -> int:
    """An on-policy algorithm holds one batch per run: small for vector observations, frames for Atari."""
    return 1000 + (500 if cfg.observation == "pixels" else 40) * num_runs


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str  # the config's ``algorithm``
    build: Callable[[GroupContext], Algorithm]  # usually the class
    summary: str  # one line with its source
    settings: type | None  # the record of its config section (None: an algorithm without settings)
    lines: tuple[Line, ...]  # the first is the default; ``line_of`` picks another
    networks: tuple[str, ...]  # "mlp" (vector observations) and/or the convolutional networks (Atari)
    continuous: bool = True  # Gaussian policy on continuous actions (MuJoCo)
    discrete_mlp: bool = False  # categorical MLP policy on discrete-action vector tasks (classic control)
    nan_allowed: frozenset[str] = frozenset()  # statistics that are NaN by definition for some runs
    line_of: Callable[[RunConfig], str] | None = None  # which line a config is (None: the first)
    memory_mb: Callable[[RunConfig, int, int], int] = default_memory_mb  # (cfg, runs in the job, steps)
    order: int = 100  # position in the reports' tables and legends, smallest first
    # The conformance suite's seconds-long runs: these overrides on each line's variant, on tiny_task.
    tiny: dict = field(default_factory=dict)
    tiny_task: str = "Hopper-v5"
    # Whether a run's statistics are bit-identical alone and in a group; False where a grouped convolution
    # may sum in another order (episodes and actions stay identical, statistics agree to float tolerance).
    group_exact: bool = True
    learning: tuple[LearningCheck, ...] = ()

    def line(self, cfg: RunConfig) -> str:
        return self.line_of(cfg) if self.line_of is not None else self.lines[0].key

    def __post_init__(self) -> None:
        unknown = set(self.networks) - set(MLP + CONVNETS)
        if unknown or not self.networks:
            raise ValueError(f"algorithm {self.name}: networks must be among {MLP + CONVNETS}, got {self.networks}")
        if not self.lines or len({line.key for line in self.lines}) != len(self.lines):
            raise ValueError(f"algorithm {self.name}: lines must be non-empty with distinct keys")


# name -> spec of every algorithm, in report order: filled by ppo.algorithms (each module's SPEC), which the
# package ppo imports first, so that any config validation sees every algorithm; read through specs().
_REGISTRY: dict[str, AlgorithmSpec] = {}


def register(spec: AlgorithmSpec) -> None:
    """Add an algorithm (ppo/algorithms/__init__.py does, for each module with a SPEC)."""
    if spec.name in _REGISTRY and _REGISTRY[spec.name] is not spec:
        raise ValueError(f"algorithm {spec.name!r} is declared twice")
    ordered = sorted({**_REGISTRY, spec.name: spec}.values(), key=lambda s: (s.order, s.name))
    _REGISTRY.clear()
    _REGISTRY.update((s.name, s) for s in ordered)


def specs() -> dict[str, AlgorithmSpec]:
    """name -> spec of every registered algorithm, in report order (the registry itself)."""
    return _REGISTRY


def algorithm_spec(name: str) -> AlgorithmSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"algorithm must be one of {tuple(_REGISTRY)}, got {name!r}") from None


def algorithm_class(name: str):
    """What builds the algorithm ``name`` from a GroupContext."""
    return algorithm_spec(name).build


def lines() -> dict[str, tuple[AlgorithmSpec, Line]]:
    """Every line key the records may carry (the manifest's ``algorithm``) -> its algorithm and line, in
    report order."""
    return {line.key: (spec, line) for spec in _REGISTRY.values() for line in spec.lines}
