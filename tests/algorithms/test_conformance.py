"""Every algorithm through the same checks, from what it declares (ppo/algorithms/<name>.py SPEC): its
declaration agrees with the config and the variant files, its state round-trips, a run's records do not
depend on its group, a run killed mid-rollout resumes bit-identically, and it learns. Adding an algorithm
adds its cases here without touching this file; its algorithm-specific checks live in its own test file."""
from __future__ import annotations

import io
import typing

import numpy as np
import pandas as pd
import pytest
import torch
from killing import kill_then_resume
from same_records import assert_same_records

import ppo.envs.atari
import ppo.envs.lockstep
from ppo.algorithms.base import ActorCriticAlgorithm
from ppo.algorithms.rollout import group_context
from ppo.config.experiments import load_variant
from ppo.config.registry import MLP, Algorithm, AlgorithmSpec, Line, lines, specs
from ppo.config.run_config import ALGORITHMS, RunConfig, build_config
from ppo.config import run_config as config_module
from ppo.training.driver import RunSpec, train_group

LINES = [(spec, line) for spec, line in lines().values() if line.variant is not None]
LINE_IDS = [line.key for _, line in LINES]
CHECKS = [(spec, check) for spec in specs().values() for check in spec.learning]
CHECK_IDS = [f"{check.variant}-{check.task}" for _, check in CHECKS]


def merged(base: dict, changes: dict) -> dict:
    """``changes`` over ``base``, one level into sections (``{"a2c": {"ent_coef": 0}}`` keeps a2c's others)."""
    out = dict(base)
    for key, value in changes.items():
        out[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return out


def variant_config(variant: str, changes: dict) -> RunConfig:
    return build_config(merged(load_variant(variant).config.to_dict(), changes), f"{variant} + {changes}")


def tiny(spec, line) -> RunConfig:
    return variant_config(line.variant, spec.tiny)


# ---------------------------------------------------------------- the declarations


def test_every_algorithm_of_the_config_is_declared_once_with_its_section():
    assert set(specs()) == set(ALGORITHMS)
    sections = typing.get_type_hints(RunConfig, vars(config_module))
    for name, spec in specs().items():
        if spec.settings is None:  # an algorithm without settings has no section
            assert name not in sections
        else:
            assert sections[name] == spec.settings | None, name
        assert isinstance(spec.build, type) and all(callable(getattr(spec.build, m)) for m in
                                                    ("iterate", "finite", "state_dict", "load_state_dict", "run_model"))


@pytest.mark.parametrize("spec, line", LINES, ids=LINE_IDS)
def test_a_lines_variant_file_is_that_line(spec, line):
    cfg = load_variant(line.variant).config
    assert cfg.algorithm == spec.name and cfg.algorithm_key == line.key
    assert cfg.network in spec.networks


def test_a_network_the_algorithm_does_not_declare_is_refused():
    with pytest.raises(ValueError, match=r"algorithm trpo is implemented with network\(s\) \['mlp'\], not "
                                         r"'cnn_nature' \(which ppo, a2c, acer take\)"):
        RunConfig(algorithm="trpo", network="cnn_nature", env_protocol="paper2017")


# ---------------------------------------------------------------- the mechanics, on seconds-long runs


@pytest.mark.parametrize("spec, line", LINES, ids=LINE_IDS)
def test_state_round_trips_through_a_weights_only_file(spec, line):
    check_state_round_trip(spec, tiny(spec, line))


def check_state_round_trip(spec, cfg):
    """After one iteration, the algorithm's state saved and loaded (as a checkpoint is: weights_only) into
    a fresh instance gives back the same state, and that instance satisfies the Algorithm protocol."""
    first = group_context(spec.tiny_task, [cfg, cfg], [0, 1])
    second = group_context(spec.tiny_task, [cfg, cfg], [0, 1])
    try:
        algo = spec.build(first)
        algo.iterate(0)
        buffer = io.BytesIO()
        torch.save(algo.state_dict(), buffer)
        buffer.seek(0)
        fresh: Algorithm = spec.build(second)
        fresh.load_state_dict(torch.load(buffer, weights_only=True))
        assert_same_state(algo.state_dict(), fresh.state_dict())
        assert fresh.finite().shape == (2,) and fresh.finite().all()
    finally:
        first.envs.close()
        second.envs.close()


def assert_same_state(a, b, where="state"):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            assert_same_state(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), where  # NaN equals NaN here


@pytest.mark.parametrize("spec, line", LINES, ids=LINE_IDS)
def test_records_do_not_depend_on_the_group(spec, line):
    check_group_independence(spec, tiny(spec, line))


def check_group_independence(spec, cfg):
    alone = train_group([RunSpec("t", spec.tiny_task, cfg, 7)], log=lambda _: None)[0]
    grouped = train_group([RunSpec("o1", spec.tiny_task, cfg, 1), RunSpec("t", spec.tiny_task, cfg, 7),
                           RunSpec("o2", spec.tiny_task, cfg, 2)], log=lambda _: None)[1]
    assert len(alone.updates) > 1  # (Pong ends no episode within a tiny ACER run: its updates carry the check)
    pd.testing.assert_frame_equal(alone.episodes, grouped.episodes, check_exact=True)
    if spec.group_exact:
        pd.testing.assert_frame_equal(alone.updates, grouped.updates, check_exact=True)
    else:
        # A grouped convolution may sum in another order (tests/nn/test_convnet.py): the statistics agree to 1e-4
        # relative. Two are differences of nearly equal terms, whose relative error is the terms' divided by a
        # number near 0: explained variance, 1 − a ratio ≈ 1 (1.7e-4 relative at EV = 0.08 on an AMD EPYC), and
        # the KL to the average policy, Σ p (log p − log q) with |log p| ≈ 1–2 (2e-3 relative at 1.7e-5). They
        # are held to the terms' precision, 1e-4 of a term of size ≈ 1, as an absolute error.
        near_zero = [c for c in ("explained_variance", "kl_average") if c in alone.updates]
        pd.testing.assert_frame_equal(alone.updates.drop(columns=near_zero), grouped.updates.drop(columns=near_zero),
                                      check_exact=False, rtol=1e-4)
        np.testing.assert_allclose(alone.updates[near_zero], grouped.updates[near_zero], rtol=0, atol=1e-4)
    assert alone.status == grouped.status == "completed"


@pytest.mark.parametrize("spec, line", LINES, ids=LINE_IDS)
def test_a_run_killed_mid_rollout_resumes_bit_identically(spec, line, tmp_path, monkeypatch):
    check_kill_and_resume(spec, tiny(spec, line), tmp_path, monkeypatch)


def check_kill_and_resume(spec, cfg, tmp_path, monkeypatch):
    runs = [RunSpec("a", spec.tiny_task, cfg, 0), RunSpec("b", spec.tiny_task, cfg, 1)]
    uninterrupted = train_group(runs, log=lambda _: None)
    envs = ppo.envs.atari.AtariLockstepEnvs if cfg.observation == "pixels" else ppo.envs.lockstep.LockstepEnvs
    calls = int(0.6 * cfg.total_steps / cfg.num_envs) + 3  # in a rollout after a few checkpoints
    resumed = kill_then_resume(monkeypatch, train_group, runs, tmp_path / "group.ckpt", envs, "step", calls)
    assert_same_records(uninterrupted, resumed)
    assert all(r.status == "completed" for r in resumed)  # the same, and not the same divergence


# ---------------------------------------------------------------- it learns


@pytest.mark.slow
@pytest.mark.parametrize("spec, check", CHECKS, ids=CHECK_IDS)
def test_it_learns(spec, check):
    cfg = variant_config(check.variant, {**check.overrides, "total_steps": check.steps})
    assert cfg.algorithm == spec.name
    runs = train_group([RunSpec(f"seed{s}", check.task, cfg, s) for s in check.seeds], log=lambda _: None)
    for run in runs:
        returns = run.episodes["episode_return"]
        start, best = returns.iloc[:check.start_window].mean(), returns.rolling(check.window).mean().max()
        assert run.status == "completed"
        assert start < check.start_below, f"{run.spec.run_id}: first episodes average {start:.1f} ({check.why})"
        assert best >= check.threshold, \
            f"{run.spec.run_id}: best {check.window}-episode mean {best:.1f} < {check.threshold} ({check.why})"


def test_every_algorithm_that_trains_vector_tasks_has_a_learning_check():
    """Atari-only algorithms (ACER) are exempt: no game learns within a test's budget; their losses are
    checked by hand in their own test file and their numerics by a golden record."""
    missing = [name for name, spec in specs().items() if "mlp" in spec.networks and not spec.learning]
    assert not missing


# ---------------------------------------------------------------- adding an algorithm


class RandomPolicy(ActorCriticAlgorithm):
    """A toy algorithm: the initial policy, never updated (the random-policy baseline), recording only its
    batch's explained variance. It exists to show what adding an algorithm takes: this class and its SPEC."""

    def iterate(self, iteration: int) -> dict:
        batch = self.collect()
        return {"explained_variance": batch.explained_variance, "rollout_seconds": batch.rollout_seconds}


TOY = AlgorithmSpec(name="random_policy", build=RandomPolicy, settings=None,
                    summary="the initial policy, never updated", lines=(Line("random_policy", "Random policy"),),
                    networks=MLP,
                    nan_allowed=frozenset({"explained_variance"}))


def test_a_new_algorithm_is_its_class_and_its_spec(tmp_path, monkeypatch):
    """Registered (as a module of ppo/algorithms with SPEC would be), the toy is accepted by the config,
    trained by the driver, named in the records, and passes the conformance checks; no other file changes."""
    monkeypatch.setitem(specs(), TOY.name, TOY)
    cfg = build_config({"algorithm": "random_policy", "total_steps": 512, "horizon": 128}, "toy")
    assert cfg.algorithm_key == "random_policy" and "epochs" not in cfg.to_dict()
    run = train_group([RunSpec("toy", "Hopper-v5", cfg, 0)], log=lambda _: None)[0]
    assert run.status == "completed" and len(run.updates) == 4 and len(run.episodes) > 3
    check_state_round_trip(TOY, cfg)
    check_group_independence(TOY, cfg)
    check_kill_and_resume(TOY, cfg, tmp_path, monkeypatch)
    with pytest.raises(ValueError, match="random_policy is implemented with network"):
        build_config({"algorithm": "random_policy", "network": "cnn_nature", "env_protocol": "paper2017"}, "toy")
