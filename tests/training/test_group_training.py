"""The group execution model: a run's records do not depend on who shares its group; same seed, same run;
a diverging run is recorded and the rest of the group goes on."""
import dataclasses

import numpy as np
import torch
from same_records import assert_same_records

import ppo.algorithms.ppo
from ppo.config.run_config import RunConfig
from ppo.config.settings import Objective, PPOSettings
from ppo.training.driver import RunSpec, train_group

# Small but complete: several updates, episode ends by termination (Hopper falls) and by the time limit.
TINY = RunConfig(total_steps=768, horizon=128, ppo=PPOSettings(epochs=2, minibatch_size=32))


def spec(name, seed, task="Hopper-v5", **objective):
    cfg = dataclasses.replace(TINY, ppo=dataclasses.replace(TINY.ppo, objective=Objective(**objective))) if objective else TINY
    return RunSpec(name, task, cfg, seed)


def test_records_do_not_depend_on_the_group():
    target = spec("adaptive", 7, clip_epsilon=None, kl_beta=1.0, kl_target=0.01)
    alone = train_group([target], log=lambda _: None)[0]
    others = [spec("clip", 1), target, spec("fixed", 2, clip_epsilon=None, kl_beta=3.0), spec("noclip", 3, clip_epsilon=None)]
    shared = train_group(others, log=lambda _: None)[1]
    assert len(alone.episodes) > 3 and len(alone.updates) == 6
    assert_same_records(alone, shared)  # bit-identical on CPU, one thread
    assert alone.updates["beta"].nunique() > 1  # the adaptive rule really acted


def test_same_seed_same_run_and_different_seed_differs(tmp_path):
    runs = [dataclasses.replace(spec("x", s), out_dir=tmp_path / name) for name, s in (("a", 5), ("b", 5), ("c", 6))]
    a, b, c = (train_group([r], log=lambda _: None)[0] for r in runs)
    assert_same_records(a, b)
    # The files themselves are byte-identical; only timing.parquet (wall-clock) may differ.
    for name in ("episodes.parquet", "updates.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "timing.parquet").exists()
    assert (tmp_path / "a" / "episodes.parquet").read_bytes() != (tmp_path / "c" / "episodes.parquet").read_bytes()
    assert not a.episodes["episode_return"].equals(c.episodes["episode_return"])


def test_time_limit_bootstrap_changes_only_the_targets():
    # InvertedPendulum with a 1000-step limit would need long runs; Reacher ends every episode by truncation
    # at 50 steps, so the two time-limit treatments must give different updates from the same seed.
    runs = {}
    for mode in ("terminal", "bootstrap"):
        cfg = dataclasses.replace(TINY, time_limit=mode)
        runs[mode] = train_group([RunSpec(mode, "Reacher-v5", cfg, 0)], log=lambda _: None)[0]
    first = {m: r.episodes.iloc[0] for m, r in runs.items()}
    assert first["terminal"]["episode_length"] == 50  # truncated by the time limit, not terminated
    # Same first rollout (same seed, same initial policy) ...
    assert first["terminal"]["episode_return"] == first["bootstrap"]["episode_return"]
    # ... but different value targets, hence different losses.
    assert runs["terminal"].updates["value_loss"].iloc[0] != runs["bootstrap"].updates["value_loss"].iloc[0]


def test_diverging_run_is_recorded_and_the_group_goes_on(monkeypatch):
    real = ppo.algorithms.ppo.objective_terms
    calls = {"n": 0}

    def poisoned(ratio, *args):
        # From the 20th minibatch on, run 1's loss is NaN (as a blown-up ratio would make it).
        calls["n"] += 1
        loss, surr = real(ratio, *args)
        if calls["n"] >= 20:
            loss = loss.clone()
            loss[1] = loss[1] * torch.nan
        return loss, surr

    monkeypatch.setattr(ppo.algorithms.ppo, "objective_terms", poisoned)
    ok, bad = train_group([spec("ok", 0), spec("bad", 1)], log=lambda _: None)
    assert ok.status == "completed" and len(ok.updates) == 6
    assert bad.status == "diverged"
    # 128/32 minibatches x 2 epochs = 8 per update: the 20th is in the third update, which ends at step 384
    assert bad.diverged_at_step == 3 * 128
    assert bad.updates["diverged"].iloc[-1] and not bad.updates["diverged"].iloc[:-1].any()
    assert np.isfinite(bad.episodes["episode_return"]).all() and len(bad.episodes) > 0
