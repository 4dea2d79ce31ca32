"""ppo.pipeline.carry: unfinished groups' checkpoints travel to the next machine through grid-state/, the furthest wins."""
import json
import subprocess
from pathlib import Path

import pytest
import torch
from killing import Killed, kill_at

import ppo.envs.lockstep
from ppo.config.run_config import SCHEMA_VERSION, RunConfig
from ppo.config.settings import PPOSettings
from ppo.pipeline import carry
from ppo.training.driver import RunSpec, train_group

CFG = RunConfig(total_steps=1024, horizon=128, ppo=PPOSettings(epochs=1, minibatch_size=64))
CKPT = "table1/paper/checkpoints/Hopper-v5-abc.pt"


@pytest.fixture(autouse=True)
def nothing_published(tmp_path, monkeypatch):
    """The repository's published/ grows as the grids publish (Pong's PPO seed 1 on 2026-11-28 turned three of these
    tests red): here no run is published unless a test says so."""
    monkeypatch.setattr(carry, "PUBLISHED", tmp_path / "published")


def spec(grid):
    return RunSpec("Hopper-v5/clip_0.2/seed7", "Hopper-v5", CFG, 0,
                   out_dir=grid / "results/table1/paper/runs/Hopper-v5/clip_0.2/seed7")


def train_until_killed(grid, monkeypatch, steps):
    with monkeypatch.context() as m:
        kill_at(m, ppo.envs.lockstep.LockstepEnvs, "step", steps)
        with pytest.raises(Killed):
            train_group([spec(grid)], log=lambda _: None, checkpoint=grid / "results" / CKPT, checkpoint_every=1)


def test_the_furthest_checkpoint_travels_and_a_finished_group_leaves(tmp_path, monkeypatch):
    machine_a, machine_b, state = tmp_path / "a", tmp_path / "b", tmp_path / "grid-state"
    train_until_killed(machine_a, monkeypatch, 128 * 3 + 5)  # checkpoint after iteration 3
    assert [c.split(" (")[0] for c in carry.save(machine_a, state)] == [CKPT]
    assert (carry.read(state / CKPT).iteration, carry.read(state / CKPT).runs) == (3, ("Hopper-v5/clip_0.2/seed7",))

    assert carry.resumable(machine_a) == [Path("results/table1/paper/runs/Hopper-v5/clip_0.2/seed7/manifest.json")]
    assert carry.resumable(machine_b) == []

    # machine B has none: it gets A's; it trains further and saves; A, back again, takes B's over its own
    assert len(carry.restore(machine_b, state)) == 1
    messages = []
    with monkeypatch.context() as m:
        kill_at(m, ppo.envs.lockstep.LockstepEnvs, "step", 128 * 2 + 5)
        with pytest.raises(Killed):
            train_group([spec(machine_b)], log=messages.append, checkpoint=machine_b / "results" / CKPT,
                        checkpoint_every=1)
    assert any("resumed from" in m for m in messages)
    carry.save(machine_b, state)
    assert carry.read(state / CKPT).iteration == 5
    assert len(carry.restore(machine_a, state)) == 1 and carry.read(machine_a / "results" / CKPT).iteration == 5
    assert carry.restore(machine_a, state) == []  # as far already: nothing to copy
    # how far it got, in agent steps (5 iterations x 128 steps x 1 env of the 1,024) and where: A's part, then B's
    [line] = carry.unfinished(machine_a)
    assert line.startswith("Hopper-v5/clip_0.2/seed7: 640 of 1,024 agent steps (62%), iteration 5, 2 part(s) on ")

    # A finishes the group: its checkpoint is gone, its records written; the carried copy is removed
    train_group([spec(machine_a)], log=lambda _: None, checkpoint=machine_a / "results" / CKPT, checkpoint_every=1)
    manifest = json.loads((spec(machine_a).out_dir / "manifest.json").read_text())
    assert [p["from_iteration"] for p in manifest["training_parts"]] == [0, 3, 5]  # A, then B, then A again
    assert carry.save(machine_a, state) == [f"{CKPT}: removed (its group finished)"]
    assert not (state / CKPT).exists()
    assert carry.resumable(machine_a) == []  # finished: nothing to put first
    assert carry.unfinished(machine_a) == []


def test_a_leftover_checkpoint_of_finished_runs_is_not_restored(tmp_path, monkeypatch):
    grid, state = tmp_path / "grid", tmp_path / "grid-state"
    train_until_killed(grid, monkeypatch, 128 * 2 + 5)
    carry.save(grid, state)
    train_group([spec(grid)], log=lambda _: None, checkpoint=grid / "results" / CKPT, checkpoint_every=1)
    assert carry.restore(grid, state) == []  # its run has its manifest here


def test_no_grid_is_one_line(tmp_path, capsys):
    assert carry.main(["save", "--from", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_each_grid_carries_its_own_studies(tmp_path, monkeypatch):
    grid, state = tmp_path / "grid", tmp_path / "grid-state"
    train_until_killed(grid, monkeypatch, 128 * 2 + 5)
    carry.save(grid, state)
    # another grid (the Atari one) saves and restores: Table 1's checkpoint is neither removed nor copied into it
    other = tmp_path / "atari-grid"
    (other / "results").mkdir(parents=True)
    assert carry.save(other, state, studies=["atari"]) == [] and (state / CKPT).exists()
    assert carry.restore(other, state, studies=["atari"]) == [] and not (other / "results" / CKPT).exists()
    # why the scope matters: unscoped, a grid that lacks the checkpoint takes it for finished
    assert carry.save(other, state) == [f"{CKPT}: removed (its group finished)"]


def fake_checkpoint(path, run, iteration, num_envs, horizon, total_steps, commits=()):
    """Only what carry reads: the iteration, each run's fingerprint (id first, resolved config fourth) and the
    commit of each part of the training (ppo.training.driver.training_part)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    config = json.dumps({"num_envs": num_envs, "horizon": horizon, "total_steps": total_steps})
    parts = [{"from_iteration": 0, "commit": commit} for commit in commits]
    fingerprint = [(run, "", 0, config, "{}", SCHEMA_VERSION)]  # as ppo.training.driver.train_group writes it
    torch.save({"iteration": iteration, "fingerprint": fingerprint, "parts": parts}, path)


def test_revision_is_the_commit_the_carried_groups_last_trained_at(tmp_path, capsys):
    """paper_grid.sh start says when the carried runs last trained with other code than the grid's revision."""
    state = tmp_path / "grid-state"
    assert carry.revision(state) == (None, {})  # nothing carried: the caller takes HEAD
    at = state / "atari/paper/checkpoints"
    fake_checkpoint(at / "a.pt", "ALE/Pong-v5/atari_ppo/seed1", 310, 8, 128, 10_000_000, commits=("old", "b44"))
    fake_checkpoint(at / "b.pt", "ALE/Pong-v5/atari_a2c/seed0", 5200, 8, 5, 10_000_000, commits=("b44",))
    fake_checkpoint(at / "c.pt", "ALE/Breakout-v5/atari_ppo/seed2", 250, 8, 128, 10_000_000, commits=("old",))
    fake_checkpoint(at / "d.pt", "ALE/Breakout-v5/atari_a2c/seed0", 10, 8, 5, 10_000_000)  # no part names a commit
    fake_checkpoint(state / "atari_checks/paper/checkpoints/e.pt", "ALE/Breakout-v5/atari_ppo_nature_cnn/seed0", 780,
                    8, 128, 10_000_000, commits=("fde", "fde"))
    commit, counts = carry.revision(state, ["atari"])
    assert commit == "b44" and counts == {"b44": 2, "old": 1}  # the last part counts, not the first
    assert carry.revision(state, ["atari_checks"])[0] == "fde"


def test_resumable_puts_the_largest_share_of_budget_first_of_the_grids_variants(tmp_path):
    checkpoints = tmp_path / "results/atari/paper/checkpoints"
    # A2C's 5-step iterations outnumber PPO's 128-step ones at a smaller share of the budget: 40 % against 60 %
    fake_checkpoint(checkpoints / "a.pt", "ALE/Pong-v5/atari_a2c/seed0", 20_000, 8, 5, 2_000_000)
    fake_checkpoint(checkpoints / "b.pt", "ALE/Pong-v5/atari_ppo/seed1", 1_172, 8, 128, 2_000_000)
    manifest = "results/atari/paper/runs/ALE/Pong-v5/{}/manifest.json".format
    assert carry.resumable(tmp_path) == [Path(manifest("atari_ppo/seed1")), Path(manifest("atari_a2c/seed0"))]
    # a run of a variant the grid does not train is not asked for (Snakemake would fail: no rule makes it)
    assert carry.resumable(tmp_path, ["atari_ppo"]) == [Path(manifest("atari_ppo/seed1"))]


def test_train_priority_puts_resumed_groups_first_the_furthest_first_then_new_ones_by_study_seed_longest_first(tmp_path):
    """The order the grid's Snakemake starts training jobs in (workflow/rules/train.smk): resumed groups, then new
    ones a study at a time where the grid asks for it (Table 1 before Figure 3), a seed at a time, so that a stopped
    ten-seed grid leaves whole seeds; the longest first within a seed."""
    far, near = tmp_path / "far.pt", tmp_path / "near.pt"
    fake_checkpoint(far, "ALE/Pong-v5/atari_ppo/seed1", 6_030, 8, 128, 10_000_000)  # 62 % of its budget
    fake_checkpoint(near, "ALE/Breakout-v5/atari_ppo/seed2", 250, 8, 128, 10_000_000)  # 2.6 %
    at_start = tmp_path / "at_start.pt"
    fake_checkpoint(at_start, "ALE/Pong-v5/atari_a2c/seed0", 0, 8, 5, 10_000_000)  # nothing trained: a new group
    not_a_checkpoint = tmp_path / "broken.pt"
    not_a_checkpoint.write_bytes(b"not a checkpoint")
    absent = tmp_path / "absent.pt"
    priorities = {name: carry.train_priority(seconds, path, seed, rank, variant)
                  for name, seconds, path, seed, rank, variant in [
        ("far", 100, far, 5, 1, 0), ("near", 50_000, near, 0, 0, 0), ("long", 90_000, absent, 0, 0, 0),
        ("short", 1_000.7, absent, 0, 0, 0), ("at_start", 20_000, at_start, 0, 0, 0),
        ("broken", 10, not_a_checkpoint, 0, 0, 0), ("second variant, longest", 10**8, absent, 0, 0, 2),
        ("variant 12", 7, absent, 0, 0, 12), ("seed 1, longer", 95_000, absent, 1, 0, 0),
        ("seed 3", 10**8, absent, 3, 0, 0), ("seed 150", 10**8, absent, 150, 0, 0), ("seed 99", 5, absent, 99, 0, 0),
        ("second study, seed 0, longest", 10**8, absent, 0, 1, 0), ("rank 20", 10**8, absent, 0, 20, 0),
        ("rank 9", 5, absent, 0, 9, 0)]}
    assert sorted(priorities, key=priorities.get, reverse=True) == [
        "far", "near", "long", "at_start", "short", "broken", "second variant, longest", "variant 12", "seed 1, longer",
        "seed 3", "seed 150", "seed 99", "second study, seed 0, longest", "rank 20", "rank 9"]
    assert priorities["far"] == carry.RESUMED_PRIORITY + 617_472  # 6,030 × 8 × 128 of 10M steps, in millionths
    # study tier 9 (rank 0) × 10^8 + seed wave 99 (seed 0) × 10^6 + variant 9 (rank 0) × 10^5 + expected seconds
    assert priorities["short"] == 999_901_000 and priorities["broken"] == 999_900_010
    # variant rank 2: 7 × 10^5, the expected seconds capped below the next variant's; ranks from 9 share the last
    assert priorities["second variant, longest"] == 999_799_999 and priorities["variant 12"] == 999_000_007
    assert priorities["seed 3"] == 996_999_999  # wave 96; the expected seconds capped below the next wave's
    assert priorities["seed 150"] == 900_999_999 and priorities["seed 99"] == 900_900_005  # seeds from 99: the last wave
    assert priorities["second study, seed 0, longest"] == 899_999_999  # tier 8: after every seed of the first study
    assert priorities["rank 20"] == 99_999_999 and priorities["rank 9"] == 99_900_005  # ranks from 9: the last tier
    # the largest a new group can get stays below a resumed group's
    assert carry.new_group_priority(10**12, -1, -1) == 999_999_999 < carry.RESUMED_PRIORITY


def test_a_checkpoint_too_large_for_the_repository_stays_on_its_machine(tmp_path, monkeypatch):
    """ACER's checkpoint holds its replay buffer (GBs at baselines' settings): save names it and commits nothing."""
    grid, state = tmp_path / "grid", tmp_path / "grid-state"
    checkpoints = grid / "results/atari/paper/checkpoints"
    fake_checkpoint(checkpoints / "acer.pt", "ALE/Pong-v5/atari_acer/seed0", 100, 16, 20, 10_000_000)
    fake_checkpoint(checkpoints / "ppo.pt", "ALE/Pong-v5/atari_ppo/seed1", 1_172, 8, 128, 10_000_000)
    monkeypatch.setattr(carry, "MAX_CARRIED_BYTES", (checkpoints / "ppo.pt").stat().st_size)
    (checkpoints / "acer.pt").write_bytes((checkpoints / "acer.pt").read_bytes() + bytes(4096))  # a larger file
    changes = carry.save(grid, state)
    assert sorted(p.name for p in (state / "atari/paper/checkpoints").iterdir()) == ["ppo.pt"]
    assert [c for c in changes if "acer" in c] == [
        "atari/paper/checkpoints/acer.pt: not carried (0.0 GiB, above 0 MiB): it resumes on this machine only"]


def test_save_carries_the_variants_trained_now_and_leaves_the_others(tmp_path):
    grid, state = tmp_path / "grid", tmp_path / "grid-state"
    checkpoints = grid / "results/atari/paper/checkpoints"
    fake_checkpoint(checkpoints / "a2c.pt", "ALE/Pong-v5/atari_a2c/seed0", 20_000, 8, 5, 2_000_000)
    fake_checkpoint(checkpoints / "ppo.pt", "ALE/Pong-v5/atari_ppo/seed1", 1_172, 8, 128, 2_000_000)
    # an A2C checkpoint committed earlier, of a run this grid no longer has: not the PPO grid's to remove
    fake_checkpoint(state / "atari/paper/checkpoints/old_a2c.pt", "ALE/Breakout-v5/atari_a2c/seed1", 10, 8, 5, 2_000_000)
    changes = carry.save(grid, state, variants=["atari_ppo"])
    assert [c.split(" (")[0] for c in changes] == ["atari/paper/checkpoints/ppo.pt"]
    assert sorted(p.name for p in (state / "atari/paper/checkpoints").iterdir()) == ["old_a2c.pt", "ppo.pt"]
    # without a scope every unfinished checkpoint is the grid's: the A2C one is carried, the stale one removed
    changes = carry.save(grid, state)
    assert sorted(p.name for p in (state / "atari/paper/checkpoints").iterdir()) == ["a2c.pt", "ppo.pt"]


def test_a_checkpoint_of_other_settings_is_neither_older_nor_newer(tmp_path):
    """A preset changed (2026-11-28: A2C's optimizer) under the same run folders, so the same checkpoint name: the
    committed checkpoint of the old settings has more iterations than the new one the grid trains. `save` replaces it
    with the grid's (iterations alone kept it for ever, restored on every new machine, the job starting afresh each
    time); `restore` leaves a grid checkpoint of other settings alone (the job sets one aside itself)."""
    grid, state = tmp_path / "grid", tmp_path / "grid-state"
    name = "atari/paper/checkpoints/ALE_Pong-v5-65707be22dc57d54.pt"
    run = "ALE/Pong-v5/atari_a2c/seed0"
    fake_checkpoint(state / name, run, 5_200, 16, 5, 10_000_000)  # torch's RMSprop, 0.42M steps
    fake_checkpoint(grid / "results" / name, run, 900, 8, 5, 10_000_000)  # other settings (here num_envs), 36k steps
    assert carry.restore(grid, state) == []
    assert carry.read(grid / "results" / name).iteration == 900
    assert carry.save(grid, state) == [f"{name} (iteration 900: {run})"]
    assert carry.read(state / name) == carry.read(grid / "results" / name)
    # of the same settings again, iterations decide as before: an older grid checkpoint is restored over
    fake_checkpoint(state / name, run, 1_000, 8, 5, 10_000_000)
    assert carry.restore(grid, state) == [f"{name} (iteration 1000: {run})"]
    assert carry.save(grid, state) == []


def test_of_two_settings_the_later_code_wins_and_an_unreadable_file_never_does(tmp_path):
    """Other settings under one name: the checkpoint whose last part trained at a descendant commit (this repository's
    history) replaces the other, on restore as on save. A file that is not a checkpoint is never copied and always
    replaced."""
    import subprocess
    older, newer = (subprocess.run(["git", "-C", str(carry.PROJECT_ROOT), "rev-parse", rev], capture_output=True,
                                   text=True, check=True).stdout.strip() for rev in ("HEAD~1", "HEAD"))
    grid, state = tmp_path / "grid", tmp_path / "grid-state"
    name = "atari/paper/checkpoints/ALE_Pong-v5-65707be22dc57d54.pt"
    run = "ALE/Pong-v5/atari_a2c/seed0"
    # another machine carried the new settings' run (trained at the newer commit); this clone kept an old-settings one
    fake_checkpoint(state / name, run, 900, 8, 5, 10_000_000, commits=(newer,))
    fake_checkpoint(grid / "results" / name, run, 5_200, 16, 5, 10_000_000, commits=(older,))
    assert carry.trained_later(carry.read(state / name), carry.read(grid / "results" / name)) is True
    assert carry.restore(grid, state) == [f"{name} (iteration 900: {run})"]
    # the other way round: the grid's is the later code, so restore keeps it and save carries it
    fake_checkpoint(grid / "results" / name, run, 100, 4, 5, 10_000_000, commits=(older, newer))
    fake_checkpoint(state / name, run, 5_200, 16, 5, 10_000_000, commits=(older,))
    assert carry.restore(grid, state) == []
    assert carry.save(grid, state) == [f"{name} (iteration 100: {run})"]
    # not a checkpoint: never copied over one (the committed one stays), always replaced by one
    (grid / "results" / name).write_bytes(b"not a checkpoint")
    assert carry.save(grid, state) == [] and carry.read(state / name).iteration == 100
    assert carry.restore(grid, state) == [f"{name} (iteration 100: {run})"]
    assert carry.read(grid / "results" / name).iteration == 100


def test_acer_travels_without_its_replay_buffer_and_its_run_says_so(tmp_path, monkeypatch):
    """An ACER checkpoint above MAX_CARRIED_BYTES is carried with its replay buffer emptied; on another machine the
    run resumes with an empty buffer, waits for replay_start again, and its manifest names the step; on its own
    machine the full checkpoint, as far, stays."""
    import ppo.algorithms.acer
    from ppo.config.run_config import build_config

    # 2 actors × 5 steps per iteration, 8 iterations; a ring of 4 segments, replay from 2 segments
    cfg = build_config({"algorithm": "acer", "total_steps": 80, "num_envs": 2, "horizon": 5, "network": "cnn_mnih2016",
                        "env_protocol": "paper2017", "acer": {"buffer_size": 20, "replay_start": 10}}, "test")
    run, ckpt = "ALE/Pong-v5/atari_acer/seed0", "atari/paper/checkpoints/ALE_Pong-v5-abc.pt"

    def acer(grid):
        return RunSpec(run, "ALE/Pong-v5", cfg, 0, out_dir=grid / "results/atari/paper/runs" / run)

    machine_a, machine_b, state = tmp_path / "a", tmp_path / "b", tmp_path / "grid-state"
    with monkeypatch.context() as m:  # killed in the 6th rollout: checkpoint after iteration 5, the ring full
        kill_at(m, ppo.algorithms.acer, "collect_segment", 6)
        with pytest.raises(Killed):
            train_group([acer(machine_a)], log=lambda _: None, checkpoint=machine_a / "results" / ckpt,
                        checkpoint_every=1)
    full = torch.load(machine_a / "results" / ckpt, weights_only=True)
    assert full["iteration"] == 5 and len(full["algorithm"]["buffer"]["segments"]) == 4

    monkeypatch.setattr(carry, "MAX_CARRIED_BYTES", (machine_a / "results" / ckpt).stat().st_size - 1)
    (change,) = carry.save(machine_a, state)
    assert change.startswith(f"{ckpt} (iteration 5: {run}), without its replay buffer (4 segments")
    light = torch.load(state / ckpt, weights_only=True)
    assert light["algorithm"]["buffer"] == {"segments": [], "next": 0} and light["replay_buffer_dropped"] == 4
    assert torch.equal(light["algorithm"]["params"], full["algorithm"]["params"]) and light["iteration"] == 5
    assert carry.restore(machine_a, state) == []  # its own machine keeps the full checkpoint, as far

    assert len(carry.restore(machine_b, state)) == 1
    messages = []
    (resumed,) = train_group([acer(machine_b)], log=messages.append, checkpoint=machine_b / "results" / ckpt,
                             checkpoint_every=1)
    assert any("resumed from" in msg for msg in messages) and resumed.status == "completed"
    (uninterrupted,) = train_group([RunSpec(run, "ALE/Pong-v5", cfg, 0)], log=lambda _: None)
    replays, before = resumed.updates["replay_updates"].tolist(), uninterrupted.updates["replay_updates"].tolist()
    # iteration 6 refills 1 segment of the 2 replay waits for; with the buffer, the same iteration replayed
    assert replays[:5] == before[:5] and replays[5] == 0 < before[5] and sum(replays[6:]) > 0
    manifest = json.loads((machine_b / "results/atari/paper/runs" / run / "manifest.json").read_text())
    assert manifest["resumed_without_replay_buffer_at_steps"] == [50]
    assert manifest["training_parts"][-1]["replay_buffer_dropped"] == 4
    assert "replay_buffer_dropped" not in manifest["training_parts"][0]


def test_a_carry_commit_says_what_it_carried_and_what_it_removed(tmp_path):
    """The commit's first line counts checkpoints carried and checkpoints of finished groups removed apart (a carry
    that only removed the last two of a finished grid once read '2 unfinished groups' checkpoints carried')."""
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (tmp_path / "grid-state").mkdir()
    for name in ("a.pt", "b.pt"):
        (tmp_path / "grid-state" / name).write_bytes(b"x")
    carry.commit(["a.pt: 10 of 20 agent steps", "b.pt: 5 of 20 agent steps"], repo=tmp_path)
    assert git("log", "-1", "--format=%s") == "grid-state: 2 unfinished groups' checkpoints carried\n"
    (tmp_path / "grid-state" / "a.pt").write_bytes(b"y")
    (tmp_path / "grid-state" / "b.pt").unlink()
    carry.commit(["a.pt: 15 of 20 agent steps", f"b.pt: {carry.REMOVED}"], repo=tmp_path)
    assert git("log", "-1", "--format=%s") == ("grid-state: 1 unfinished groups' checkpoints carried; "
                                               "1 finished groups' checkpoints removed\n")
    (tmp_path / "grid-state" / "a.pt").unlink()
    carry.commit([f"a.pt: {carry.REMOVED}"], repo=tmp_path)
    assert git("log", "-1", "--format=%s") == "grid-state: 1 finished groups' checkpoints removed\n"
    assert git("log", "-1", "--format=%b").strip() == f"a.pt: {carry.REMOVED}"
