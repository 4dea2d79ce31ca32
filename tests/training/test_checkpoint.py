"""A group killed at any point and restarted from its checkpoint ends with records identical to an
uninterrupted group (CPU, one thread)."""
import dataclasses
import json
import time

import pytest
import torch
from killing import Killed, kill_at, sigkill_after_first_checkpoint
from same_records import assert_same_records

import ppo.algorithms.ppo
import ppo.envs.lockstep
import ppo.training.driver
from ppo.config.run_config import RunConfig
from ppo.config.settings import Objective, PPOSettings
from ppo.training import records
from ppo.training.driver import RunSpec, rows_as_columns, rows_from_columns, train_group

CFG = RunConfig(total_steps=1024, horizon=128, ppo=PPOSettings(epochs=2, minibatch_size=32))


def specs():
    adaptive = dataclasses.replace(CFG, ppo=dataclasses.replace(CFG.ppo, objective=Objective(clip_epsilon=None, kl_beta=1.0,
                                                                                      kl_target=0.01)))
    return [RunSpec("a", "Hopper-v5", CFG, 0), RunSpec("b", "Hopper-v5", adaptive, 1)]


@pytest.fixture(scope="module")
def uninterrupted():
    return train_group(specs(), log=lambda _: None)


@pytest.mark.parametrize("where, target, name, after_calls", [
    ("during a rollout", ppo.envs.lockstep.LockstepEnvs, "step", 128 * 5 + 17),       # inside update 6
    ("during an update", ppo.algorithms.ppo, "objective_terms", 8 * 4 + 3),          # inside update 5's epochs
    ("while writing a checkpoint", torch, "save", 2),                         # the second checkpoint
])
def test_resume_gives_identical_records(tmp_path, monkeypatch, uninterrupted, where, target, name, after_calls):
    ckpt = tmp_path / "group.ckpt"
    with monkeypatch.context() as m:
        kill_at(m, target, name, after_calls)
        with pytest.raises(Killed):
            train_group(specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=2)
    assert ckpt.exists(), where  # an earlier checkpoint survived the kill
    assert not list(tmp_path.glob(".*tmp*"))  # a write cut short leaves no half file
    messages = []
    resumed = train_group(specs(), log=messages.append, checkpoint=ckpt, checkpoint_every=2)
    assert any("resumed from" in m for m in messages)
    assert_same_records(uninterrupted, resumed)
    assert not ckpt.exists()  # finished: the checkpoint is gone


def test_checkpoint_seconds_bound_how_often_the_group_saves(tmp_path, monkeypatch, uninterrupted):
    """checkpoint_every=1 saves after each of the 8 updates; with an hour between saves, none of them does (the
    whole group trains in seconds); with a gap of a million times the last save's duration, only the first does.
    The records are the same."""
    saved = []
    write = records.atomic_write
    monkeypatch.setattr(records, "atomic_write", lambda path, fn: (saved.append(path), write(path, fn))[1])
    for seconds, factor, saves in [(0.0, 100, 8), (3600.0, 100, 0), (1e-9, 1e6, 1)]:
        monkeypatch.setattr(ppo.training.driver, "SAVE_TIME_FACTOR", factor)
        saved.clear()
        ckpt = tmp_path / f"every_{seconds}s.ckpt"
        results = train_group(specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=1,
                              checkpoint_seconds=seconds)
        assert len(results[0].updates) == 8 and saved.count(ckpt) == saves, seconds
        assert_same_records(uninterrupted, results)


def test_a_save_stretched_by_a_busy_machine_does_not_hold_the_next_one_off(tmp_path, monkeypatch, uninterrupted):
    """Each save sleeps 0.3 s, as a save does when other work holds the core: wall clock passes, little CPU time. The
    gap after a save is SAVE_TIME_FACTOR times the save's CPU time (here 1x, a few ms, less than an update's), so the
    group still saves after each of its 8 updates; timed by wall clock, 0.3 s would skip most of them."""
    saved = []
    write = records.atomic_write

    def slow_write(path, fn):
        time.sleep(0.3)
        saved.append(path)
        return write(path, fn)

    monkeypatch.setattr(records, "atomic_write", slow_write)
    monkeypatch.setattr(ppo.training.driver, "SAVE_TIME_FACTOR", 1)
    ckpt = tmp_path / "busy.ckpt"
    results = train_group(specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=1, checkpoint_seconds=1e-9)
    assert saved.count(ckpt) == 8
    assert_same_records(uninterrupted, results)


def test_checkpoint_of_other_runs_is_not_used(tmp_path):
    ckpt = tmp_path / "group.ckpt"
    short = dataclasses.replace(CFG, total_steps=512)
    train_group([RunSpec("a", "Hopper-v5", short, 0)], log=lambda _: None, checkpoint=ckpt, checkpoint_every=1)
    assert not ckpt.exists()
    # Leave a checkpoint behind by killing a run, then start a different group at the same path.
    records.atomic_write(ckpt, lambda p: torch.save({"fingerprint": [("x", "Hopper-v5", 9, "{}")]}, p))
    messages = []
    train_group([RunSpec("a", "Hopper-v5", short, 0)], log=messages.append, checkpoint=ckpt, checkpoint_every=1)
    assert any("starting from scratch" in m for m in messages)


def test_corrupt_checkpoint_is_kept_aside_and_the_group_starts_over(tmp_path, uninterrupted):
    ckpt = tmp_path / "group.ckpt"
    ckpt.write_bytes(b"PK\x03\x04 not a whole checkpoint")
    messages = []
    results = train_group(specs(), log=messages.append, checkpoint=ckpt, checkpoint_every=2)
    assert any("unreadable" in m and "group.ckpt" in m for m in messages)
    assert (tmp_path / "group.ckpt.corrupt").read_bytes().startswith(b"PK")
    assert_same_records(uninterrupted, results)


def test_sigkill_of_the_real_job_then_restart(tmp_path):
    """The pipeline's own command, killed with SIGKILL right after its first checkpoint, then re-run."""
    import subprocess
    import sys

    from ppo.pipeline.plan import write_plan
    from ppo.pipeline.study import load_study

    study = load_study("table1", "smoke")
    group = [r for r in study.runs() if r.task == "InvertedPendulum-v5" and r.variant.name in ("clip_0.2", "kl_adaptive_0.01")]

    def command(root):
        plan = write_plan(root / "results", study, "train_InvertedPendulum-ppo-0", group)  # as the planner does
        return [sys.executable, "-m", "ppo.pipeline.job", "--plan", str(plan), "--checkpoint-every", "1"], \
            root / "results/table1/smoke/runs/InvertedPendulum-v5"

    cmd, reference = command(tmp_path / "a")
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    cmd, killed = command(tmp_path / "b")
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert sigkill_after_first_checkpoint(job, tmp_path / "b/results/table1/smoke/checkpoints", 240), \
        "no checkpoint was written before the kill"
    assert not (killed / "clip_0.2/seed0/manifest.json").exists(), "the job finished before it was killed"
    restarted = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    assert "resumed from" in restarted.stdout
    for variant in ("clip_0.2", "kl_adaptive_0.01"):
        for name in ("episodes.parquet", "updates.parquet"):  # byte for byte: no wall-clock column in them
            a = (reference / variant / "seed0" / name).read_bytes()
            assert a == (killed / variant / "seed0" / name).read_bytes(), f"{variant}/{name} differs after the kill"


def test_checkpoint_of_this_group_that_cannot_be_restored_is_kept_aside(tmp_path, monkeypatch, uninterrupted):
    """Readable, the group's own fingerprint, but state of another structure: restoring it fails half-way, so
    the file is set aside and the group starts over from a fresh state (not from the half-restored one), and
    a retry does not fail on the same file."""
    ckpt = tmp_path / "group.ckpt"
    with monkeypatch.context() as m:
        kill_at(m, torch, "save", 2)
        with pytest.raises(Killed):
            train_group(specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=2)
    state = torch.load(ckpt, weights_only=True)
    torch.save({**state, "algorithm": {"params": torch.zeros(3)}}, ckpt)
    messages = []
    results = train_group(specs(), log=messages.append, checkpoint=ckpt, checkpoint_every=2)
    assert any("unreadable" in m and "group.ckpt.corrupt" in m for m in messages), messages
    assert (tmp_path / "group.ckpt.corrupt").exists() and not ckpt.exists()
    assert_same_records(uninterrupted, results)


def killed_in_update_5(tmp_path, monkeypatch) -> tuple:
    """A group killed inside update 5 (checkpoints every 2): its checkpoint's path and contents."""
    ckpt = tmp_path / "group.ckpt"
    with monkeypatch.context() as m:
        kill_at(m, ppo.algorithms.ppo, "objective_terms", 8 * 4 + 3)
        with pytest.raises(Killed):
            train_group(specs(), log=lambda _: None, checkpoint=ckpt, checkpoint_every=2)
    return ckpt, torch.load(ckpt, weights_only=True)


def assert_resumes_as_uninterrupted(ckpt, uninterrupted) -> None:
    """The group resumes from ``ckpt`` and ends with the uninterrupted group's records."""
    messages = []
    resumed = train_group(specs(), log=messages.append, checkpoint=ckpt, checkpoint_every=2)
    assert any("resumed from" in m for m in messages), messages
    assert_same_records(uninterrupted, resumed)


def test_a_group_checkpointed_under_config_schema_1_resumes(tmp_path, monkeypatch, uninterrupted):
    """A group stopped before the record's shape changed (ppo.config.schema) resumes after it: its checkpoint names
    each run's config as schema 1 wrote it, PPO's settings at top level, with no schema number."""
    ckpt, state = killed_in_update_5(tmp_path, monkeypatch)
    schema1_defaults = {"network": "mlp", "env_protocol": None, "clip_schedule": "constant", "vf_clip": None,
                        "target_kl": None, "reward_norm": False, "reward_clip": 10.0, "adv_recompute": False}
    entries = []
    for run_id, task, seed, config, protocol, version in state["fingerprint"]:
        config = json.loads(config)
        flat = {k: v for k, v in config.items() if k != "ppo"} | config["ppo"]
        flat = {k: v for k, v in flat.items() if k not in schema1_defaults or v != schema1_defaults[k]}
        entries.append([run_id, task, seed, json.dumps(flat, sort_keys=True), protocol])
    state["fingerprint"] = entries
    torch.save(state, ckpt)
    assert_resumes_as_uninterrupted(ckpt, uninterrupted)


def test_records_saved_as_columns_come_back_exactly():
    """ppo.training.driver.rows_as_columns: a run's rows as one tensor per field, every value back as it was (type,
    sign of zero, NaN, infinities, int64's range); rows it cannot hold so (mixed types or shapes) stay rows."""
    rows = [{"update": 0, "global_step": 2**62, "loss": -0.0, "kl": float("nan"), "diverged": False},
            {"update": 1, "global_step": 5, "loss": 0.1 + 0.2, "kl": float("inf"), "diverged": True},
            {"update": 2, "global_step": -7, "loss": 5e-324, "kl": -1.5, "diverged": False}]
    saved = rows_as_columns(rows)
    assert saved["names"] == list(rows[0])
    assert [c.dtype for c in saved["columns"]] == [torch.int64, torch.int64, torch.float64, torch.float64, torch.bool]
    back = rows_from_columns(saved)
    assert [[(type(v), repr(v)) for v in row.values()] for row in back] == \
           [[(type(v), repr(v)) for v in row.values()] for row in rows]  # repr: -0.0, nan, 5e-324 exactly
    for odd in ([{"a": 1}, {"a": 1.5}], [{"a": 1}, {"a": 2, "b": 3}], [{"a": 1, "b": 2}, {"a": 1}],
                [{"a": "text"}], [{"a": None}]):
        assert rows_as_columns(odd) is odd and rows_from_columns(odd) is odd
    assert rows_as_columns([]) == [] and rows_from_columns([]) == []


def test_a_checkpoint_holds_its_records_as_columns_and_one_with_rows_still_resumes(tmp_path, monkeypatch,
                                                                                      uninterrupted):
    """Checkpoints before 2026-11-29 held the records as rows (the carried Atari runs among them): they resume, with
    records identical to an uninterrupted group's."""
    ckpt, state = killed_in_update_5(tmp_path, monkeypatch)
    for key in ("update_rows", "timing_rows"):
        assert all(set(saved) == {"names", "columns"} for saved in state[key])
        state[key] = [rows_from_columns(saved) for saved in state[key]]  # as an earlier checkpoint held them
    torch.save(state, ckpt)
    assert_resumes_as_uninterrupted(ckpt, uninterrupted)


def test_the_manifest_keeps_the_groups_cpu_time_over_every_part(tmp_path, monkeypatch):
    """cpu_seconds: the process's CPU time on the group, carried over a checkpoint like wall_seconds; unknown (None)
    when the checkpoint came from a part that did not keep it (written before 2026-12-07)."""
    ckpt, state = killed_in_update_5(tmp_path, monkeypatch)
    assert state["log"]["cpu_elapsed"] > 0

    def resumed_manifest(name, cpu_elapsed):
        folder = tmp_path / name
        if cpu_elapsed is None:
            state["log"].pop("cpu_elapsed")
        else:
            state["log"]["cpu_elapsed"] = cpu_elapsed
        torch.save(state, ckpt)
        messages = []
        train_group([dataclasses.replace(s, out_dir=folder / s.run_id) for s in specs()], log=messages.append,
                    checkpoint=ckpt, checkpoint_every=2)
        assert any("resumed from" in m for m in messages), messages
        return [json.loads((folder / run / "manifest.json").read_text()) for run in ("a", "b")]

    start = time.process_time()
    carried = resumed_manifest("carried", 1000.0)  # an earlier part's 1,000 s of CPU time
    spent = time.process_time() - start
    assert carried[0]["cpu_seconds"] == carried[1]["cpu_seconds"] and carried[0]["wall_seconds"] == carried[1]["wall_seconds"]
    assert 1000.0 < carried[0]["cpu_seconds"] <= 1000.0 + spent
    assert [m["cpu_seconds"] for m in resumed_manifest("unknown", None)] == [None, None]
