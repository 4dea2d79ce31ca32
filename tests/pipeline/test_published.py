"""Published runs (ppo.pipeline.publish, published/) count as finished: the planner trains only what is missing,
and the copy the pipeline makes of a published run has its records' values exactly; the dataset keeps
updates and timing a row per window of steps (per_window) and stays within issue 15's budget: 40 MB for its 336 runs."""
import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ppo.pipeline.job import copy_run
from ppo.pipeline.plan import run_meta
from ppo.pipeline.publish import as_published, per_window, publish
from ppo.pipeline.study import RUN_FILES, is_current, load_study, plan_groups, run_dir
from ppo.config.schema import SCHEMA_VERSION
from ppo.training.driver import RunSpec, train_group

TASK = "InvertedPendulum-v5"
PUBLISHED = Path(__file__).resolve().parents[2] / "published"


def train_smoke_runs(results, study, runs):
    specs = [RunSpec(r.run_id, r.task, dataclasses.replace(r.variant.config, total_steps=2048), r.seed,
                     run_dir(results, study, r), meta=run_meta(study, r)) for r in runs]
    train_group(specs, log=lambda _: None)


def test_published_runs_are_not_planned_and_copy_exactly(tmp_path):
    study = load_study("table1", "smoke")
    runs = [r for r in study.runs() if r.task == TASK and r.variant.name in ("clip_0.2", "no_clip")]
    # A budget cut below the smoke scale's, to keep the test short; the manifest carries the run's
    # planned digest (run_meta), as in the pipeline.
    train_smoke_runs(tmp_path / "grid" / "results", study, runs)

    published = tmp_path / "published"
    added = publish([tmp_path / "grid"], published, studies=[study])
    assert sorted(added) == sorted(r.run_id for r in runs)
    assert publish([tmp_path / "grid"], published, studies=[study]) == []  # nothing twice
    index = pd.read_csv(published / "INDEX.csv", dtype={"config_digest": str, "config_digest_current": str})
    assert sorted(index["variant"]) == ["clip_0.2", "no_clip"] and set(index["status"]) == {"completed"}
    # trained today: recorded under today's schema, so the recorded digest is today's, the run's planned one
    digests = {r.variant.name: r.config_digest for r in runs}
    assert set(index["config_schema"]) == {SCHEMA_VERSION}
    assert (index["config_digest"] == index["config_digest_current"]).all()
    assert index.set_index("variant")["config_digest_current"].to_dict() == digests

    planned = {r.run_id for _, g in plan_groups([study], 3, tmp_path / "results") for r in g.runs}
    with_published = {r.run_id for _, g in plan_groups([study], 3, tmp_path / "results", published) for r in g.runs}
    assert planned - with_published == {r.run_id for r in runs}
    assert not is_current(tmp_path / "results", study, runs[0])

    # The pipeline's copy of a published run: the same values in every record (PPO's updates a row per
    # 2048 steps as trained; timing's wall-clock measures in float32), the same digest.
    source = run_dir(published, study, runs[0])
    dest = run_dir(tmp_path / "results", study, runs[0])
    copy_run(source, runs[0], dest, run_meta(study, runs[0]))
    assert is_current(tmp_path / "results", study, runs[0])
    trained = run_dir(tmp_path / "grid" / "results", study, runs[0])
    for name in RUN_FILES[:-1]:
        copied, original = pd.read_parquet(dest / name), pd.read_parquet(trained / name)
        if name == "timing.parquet":
            assert copied.dtypes["wall_time"] == "float32"
            original = original.astype({c: "float32" for c in ("sps", "rollout_seconds", "optimize_seconds", "wall_time")})
        pd.testing.assert_frame_equal(copied, original, check_exact=True)
    assert json.loads((dest / "manifest.json").read_text())["copied_from"]["run_dir"] == str(source)


def test_one_process_copies_a_study_s_published_runs_and_refuses_a_changed_record(tmp_path, capsys):
    """The pipeline's copy job (workflow/rules/train.smk): one ``python -m ppo.pipeline.job --plan`` per study, its
    plan naming each run's source, copies all its published runs, each checked first (task, seed and digest as
    planned; every record as its manifest hashed it); a changed record is refused in one line naming the file, and
    nothing is copied."""
    import shutil

    from ppo.pipeline import job
    from ppo.pipeline.plan import make_plan
    from ppo.pipeline.study import RUN_FILES as FILES

    study = load_study("table1", "paper")
    runs = [r for r in study.runs() if r.task == TASK and r.variant.name == "clip_0.2"][:2]
    sources = [run_dir(tmp_path / "published", study, r) for r in runs]
    for run, source in zip(runs, sources):
        shutil.copytree(run_dir(PUBLISHED, study, run), source)

    def copy(results):
        plan = tmp_path / f"copy_{results.name}.json"  # beside the results: a refused copy leaves them as they were
        plan.write_text(json.dumps(make_plan(results, study, runs, sources)))
        return job.main(["--plan", str(plan)])

    assert copy(tmp_path / "results") == 0
    for run, source in zip(runs, sources):
        assert is_current(tmp_path / "results", study, run)
        for name in FILES[:-1]:
            assert (run_dir(tmp_path / "results", study, run) / name).read_bytes() == (source / name).read_bytes()
        manifest = json.loads((run_dir(tmp_path / "results", study, run) / "manifest.json").read_text())
        assert manifest["copied_from"]["run_dir"] == str(source) and manifest["config_digest"] == run.config_digest
    assert capsys.readouterr().out.count("copied ") == 2

    changed = sources[1] / "episodes.parquet"
    changed.write_bytes(changed.read_bytes()[:-1] + bytes([changed.read_bytes()[-1] ^ 1]))
    assert copy(tmp_path / "again") == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and said.startswith(f"error: {changed}: its content changed")
    assert said.endswith("nothing was copied") and not (tmp_path / "again").exists()  # not even the good run


def test_random_policy_scores_are_published_and_copied_only_as_recorded(tmp_path, capsys):
    """published/random: our random policy's episodes on each task of the published studies, beside the command
    and the SHA-256 that the pipeline checks before copying them instead of measuring them (rule copy_random)."""
    from ppo.pipeline.publish import published_random, publish_random

    study = load_study("table1", "smoke")  # InvertedPendulum-v5 and Hopper-v5
    source = tmp_path / "grid"
    for task in study.tasks:
        (source / "results" / "random").mkdir(parents=True, exist_ok=True)
        (source / "results" / "random" / f"{task}.parquet").write_bytes(
            (PUBLISHED / "random" / f"{task}.parquet").read_bytes())
    published = tmp_path / "published"
    assert publish_random([source], published, [study]) == [f"random:{t}" for t in sorted(study.tasks)]
    assert publish_random([source], published, [study]) == []  # nothing twice
    meta = json.loads((published / "random" / "Hopper-v5.json").read_text())
    assert meta["command"] == "python -m ppo.pipeline.random_policy --task Hopper-v5 --episodes 100 --seed 0"
    assert published_random("Hopper-v5", 100, published) == published / "random" / "Hopper-v5.parquet"
    assert published_random("Hopper-v5", 200, published) is None  # another number of episodes: measured here
    assert published_random("Walker2d-v5", 100, published) is None  # none published
    changed = published / "random" / "Hopper-v5.parquet"
    changed.write_bytes(changed.read_bytes()[:-1] + bytes([changed.read_bytes()[-1] ^ 1]))
    assert published_random("Hopper-v5", 100, published) is None
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and said.startswith(f"warning: {changed}: its content changed")


def test_the_published_random_scores_cover_every_published_mujoco_task():
    from ppo.pipeline.publish import STUDIES, published_random

    tasks = {t for name in STUDIES for t in load_study(name, "paper").tasks}
    assert {t for t in tasks if published_random(t, 100, PUBLISHED) is not None} == tasks


def test_a_published_run_of_another_configuration_is_trained(tmp_path):
    study = load_study("table1", "smoke")
    run = next(r for r in study.runs() if r.task == TASK and r.variant.name == "clip_0.2")
    folder = run_dir(tmp_path / "published", study, run)
    folder.mkdir(parents=True)
    for name in RUN_FILES[:-1]:
        (folder / name).write_bytes(b"x")
    (folder / "manifest.json").write_text(json.dumps({"config_digest": "0" * 16}))
    planned = {r.run_id for _, g in plan_groups([study], 3, tmp_path / "results", tmp_path / "published") for r in g.runs}
    assert run.run_id in planned


def test_every_published_run_is_current_under_todays_code(tmp_path):
    """The frozen results: published/ holds paper-scale runs trained at earlier commits (INDEX.csv names
    each one's commit). A change that altered what a run is (its settings, their defaults, the digest)
    would re-plan them for training; a behaviour-preserving change must plan none of them."""
    from ppo.pipeline.publish import scale_of

    index = pd.read_csv(PUBLISHED / "INDEX.csv")
    assert len(index) >= 100 and index["commit"].nunique() >= 2  # runs from more than one revision
    studies = [load_study(name, scale_of(name)) for name in sorted(set(index["study"]))]
    planned = {(s.name, r.task, r.variant.name, r.seed) for s, g in plan_groups(studies, 3, tmp_path / "results",
                                                                               PUBLISHED) for r in g.runs}
    # the RLHF study's runs train one per job (workflow/rules/rlhf.smk), planned when not current
    planned |= {(s.name, r.task, r.variant.name, r.seed) for s in studies if s.kind == "rlhf" for r in s.runs()
                if not is_current(PUBLISHED, s, r)}
    published = set(index[["study", "task", "variant", "seed"]].itertuples(index=False, name=None))
    assert not planned & published, sorted(planned & published)[:3]


def test_index_gives_todays_digest_of_every_published_run():
    """INDEX.csv's config_digest is each run's as recorded, under its config_schema; config_digest_current is what
    today's code plans for the run. Runs recorded under older schemas keep their recorded digest, so only the
    current one says which runs share settings; after a schema change, `python -m ppo.pipeline.publish --reindex`."""
    from ppo.pipeline.publish import scale_of

    index = pd.read_csv(PUBLISHED / "INDEX.csv", dtype={"config_digest": str, "config_digest_current": str})
    assert index["config_digest_current"].notna().all()
    mujoco = index[index["study"] != "rlhf"]
    assert set(mujoco["config_schema"]) <= set(range(1, SCHEMA_VERSION + 1)) and mujoco["config_schema"].nunique() > 1
    for name, rows in index.groupby("study"):
        study = load_study(name, scale_of(name), int(rows["seed"].max()) + 1 if name != "rlhf" else None)
        today = {(r.task, r.variant.name, r.seed): r.config_digest for r in study.runs()}
        listed = dict(zip(rows[["task", "variant", "seed"]].itertuples(index=False, name=None),
                          rows["config_digest_current"]))
        assert {k: today.get(k) for k in listed} == listed, name
        if name != "rlhf":  # a run recorded under today's schema digests as planned today
            current = rows[rows["config_schema"] == SCHEMA_VERSION]
            assert (current["config_digest"] == current["config_digest_current"]).all(), name


def test_per_window_hand_checked():
    """Six iterations of 80 steps in windows of 200: steps 80, 160 | 240, 320, 400 | 480."""
    updates = pd.DataFrame({"update": range(6), "global_step": [80, 160, 240, 320, 400, 480],
                            "policy_loss": [1.0, 3.0, 5.0, 7.0, 9.0, 11.0],
                            "kl": [np.nan, 2.0, np.nan, np.nan, np.nan, 4.0],
                            "epochs": [10, 9, 10, 10, 10, 8],
                            "diverged": [False, False, False, True, False, False]})
    rows = per_window(updates, window_steps=200)
    assert rows["epochs"].tolist() == [9.5, 10.0, 8.0]  # a mean of integers is not cut back to an integer
    assert rows["update"].tolist() == [1, 4, 5] and rows["global_step"].tolist() == [160, 400, 480]
    assert rows["policy_loss"].tolist() == [2.0, 7.0, 11.0]
    assert rows["kl"].tolist()[0] == 2.0 and np.isnan(rows["kl"][1]) and rows["kl"][2] == 4.0  # NaN skipped
    assert rows["diverged"].tolist() == [False, True, False]
    assert rows.dtypes.drop("epochs").equals(updates.dtypes.drop("epochs"))

    seconds = np.array([1.0, 1.0, 2.0, 2.0, 4.0, 1.0])
    timing = pd.DataFrame({"update": range(6), "global_step": [80, 160, 240, 320, 400, 480], "sps": 80 / seconds,
                           "rollout_seconds": seconds / 2, "optimize_seconds": seconds / 2,
                           "wall_time": np.cumsum(seconds)})
    rows = per_window(timing, window_steps=200)
    assert rows["sps"].tolist() == [80.0, 30.0, 80.0]  # 160 steps in 2 s, 240 in 8 s, 80 in 1 s
    assert rows["rollout_seconds"].tolist() == [1.0, 4.0, 0.5] and rows["optimize_seconds"].tolist() == [1.0, 4.0, 0.5]
    assert rows["wall_time"].tolist() == [2.0, 10.0, 11.0]
    assert per_window(rows, window_steps=200).equals(rows)  # windowed rows are a fixed point


def test_per_window_leaves_a_row_per_window_unchanged():
    """PPO at the paper's horizon: one 2048-step iteration per window, the rows come back bit for bit."""
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"update": range(5), "global_step": 2048 * np.arange(1, 6), "sps": rng.random(5) * 1e4,
                         "rollout_seconds": rng.random(5), "optimize_seconds": rng.random(5),
                         "wall_time": np.cumsum(rng.random(5))})
    assert per_window(rows) is rows


def test_the_dataset_is_windowed_and_small():
    """Every published updates/timing table is as publish writes it (a fixed point of per_window); the MuJoCo
    dataset stays within issue 15's budget, 40 MB for its 336 runs: as the ten-seed grid (issue 31) publishes
    seeds 3-9, the budget grows with the runs, at most 1 MB each (the largest, InvertedDoublePendulum without
    clipping, plays ~90,000 short episodes in 1M steps: 0.7 MB); an Atari run (10M steps: episodes of every game
    played, a row per 2048 steps) within 0.5 MB, 9 MB for the 18 runs of ./repro atari-three."""
    tables = [p for name in ("updates.parquet", "timing.parquet") for p in sorted(PUBLISHED.rglob(name))
              if "sb3_reference" not in p.parts and "rlhf" not in p.parts]  # RLHF: a row per update (test_rlhf_published)
    assert len(tables) >= 200
    for path in tables:
        table = pd.read_parquet(path)
        assert per_window(table) is table, f"{path}: more than one row in a window of steps"
        if path.name == "timing.parquet":
            assert as_published(table, path.name).equals(table), f"{path}: timing not in float32"

    def megabytes(files):
        return sum(f.stat().st_size for f in files if f.is_file()) / 1e6

    atari, rlhf = PUBLISHED / "atari", PUBLISHED / "rlhf"
    mujoco = megabytes(f for f in PUBLISHED.rglob("*") if atari not in f.parents and rlhf not in f.parents)
    mujoco_runs = [m.parent for m in PUBLISHED.rglob("manifest.json")
                   if atari not in m.parents and rlhf not in m.parents]
    budget = 40 / 336 * len(mujoco_runs)
    assert len(mujoco_runs) >= 336 and mujoco <= budget, \
        f"published/ holds {mujoco:.1f} MB besides Atari and RLHF, over the {budget:.1f} MB its {len(mujoco_runs)} runs may take"
    for folder in mujoco_runs:
        run = megabytes(folder.iterdir())
        assert run <= 1, f"{folder}: {run:.2f} MB, over the 1 MB a MuJoCo run may take"
    for manifest in atari.rglob("manifest.json"):
        run = megabytes(manifest.parent.iterdir())
        assert run <= 0.5, f"{manifest.parent}: {run:.2f} MB, over the 0.5 MB an Atari run may take"


def test_sb3_reference_runs_are_skipped_once_finished_or_published_and_counted(tmp_path, capsys):
    """The SB3 reference queue of scripts/paper_grid.sh: it trains only the runs neither its own folder nor
    the published ones hold, and ppo.pipeline.publish publishes and counts what it finished."""
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "benchmarks/mujoco_sb3_reference.py"
    spec = importlib.util.spec_from_file_location("mujoco_sb3_reference", path)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)

    out, published = tmp_path / "sb3_reference", tmp_path / "published"
    for folder, task, seed in [(out, "Hopper-v5", 0), (published / "sb3_reference", "Walker2d-v5", 1)]:
        (folder / task / f"seed{seed}").mkdir(parents=True)
        pd.DataFrame({"global_step": [1000], "episode_return": [12.5], "episode_length": [1000]}).to_parquet(
            folder / task / f"seed{seed}" / "episodes.parquet")
        (folder / task / f"seed{seed}" / "manifest.json").write_text("{}")
    args = ["--out-dir", str(out), "--skip-in", str(published / "sb3_reference"), "--count"]
    assert reference.main(args) == 0 and capsys.readouterr().out.strip() == "7"  # 3 tasks x 3 seeds, 2 done
    assert reference.main(args[:2] + ["--tasks", "Hopper-v5", "--seeds", "0"]) == 0
    assert capsys.readouterr().out.strip() == "every requested run has finished"

    from ppo.pipeline.publish import publish_sb3, status
    assert publish_sb3(out, published) == ["sb3_reference:Hopper-v5/seed0"]
    assert publish_sb3(out, published) == []  # nothing twice
    kept = pd.read_parquet(published / "sb3_reference/Hopper-v5/seed0/episodes.parquet")
    assert kept["episode_return"].tolist() == [12.5]
    (out / "HalfCheetah-v5" / "seed2").mkdir(parents=True)
    (out / "HalfCheetah-v5" / "seed2" / "manifest.json").write_text("{}")
    assert "sb3_reference: 2 runs published, 1 more finished, not yet published" in \
        status([], published, sb3_sources=(out,)).splitlines()


def test_commit_also_takes_what_an_earlier_publish_left_uncommitted(tmp_path):
    """A publish whose commit met another git command's lock leaves its copies in published/; the next
    publish commits them even when it adds nothing, and commits nothing else of the work tree."""
    import subprocess

    from ppo.pipeline.publish import commit

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True,
                              check=True).stdout

    git("init", "-q")
    git("config", "user.email", "grid@example.org")
    git("config", "user.name", "grid")
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "left.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("work in progress")
    assert commit([], tmp_path) is True
    assert git("ls-files").split() == ["published/left.json"]
    assert "earlier publish" in git("log", "-1", "--format=%s")
    assert commit([], tmp_path) is False  # nothing left: no empty commit
    assert git("rev-list", "--count", "HEAD").strip() == "1"


def test_the_index_keeps_the_rows_of_studies_not_being_published(tmp_path):
    """Publishing the Atari study rewrites its own rows of INDEX.csv and leaves the MuJoCo ones as they are."""
    from ppo.pipeline.publish import INDEX_COLUMNS, write_index

    other = pd.DataFrame([{c: None for c in INDEX_COLUMNS} | {"study": "table1", "task": "Hopper-v5", "seed": 0,
                                                              "variant": "clip_0.2", "finished": "2026-11-24T13:17:08"}])
    other.to_csv(tmp_path / "INDEX.csv", index=False)
    index = write_index([load_study("atari", "smoke")], tmp_path)  # none of its runs is published there
    assert index[["study", "variant", "finished"]].values.tolist() == [["table1", "clip_0.2", "2026-11-24T13:17:08"]]
    assert pd.read_csv(tmp_path / "INDEX.csv")["study"].tolist() == ["table1"]


def test_status_counts_the_atari_grid_s_runs_only(tmp_path):
    from ppo.pipeline.publish import status
    three = status([], tmp_path, names=("atari",), tasks=["ALE/Pong-v5", "ALE/Breakout-v5", "ALE/BeamRider-v5"],
                   variants=["atari_ppo", "atari_a2c"])
    assert three.splitlines()[0] == "atari: 0 of 18 runs published, 0 more finished, not yet published"
    assert status([], tmp_path, names=("atari",)).splitlines()[0].startswith("atari: 0 of 441 runs")
    from ppo.config.errors import ConfigError
    with pytest.raises(ConfigError, match="--tasks/--variants: field tasks: .*Hopper"):
        status([], tmp_path, names=("atari",), tasks=["Hopper-v5"])


def test_hours_left_by_hand(tmp_path):
    """The status's projection: each unfinished run's untrained share times the median hours per run (a group's wall
    clock over its runs) of its task and variant's published runs from groups of the size it will train in, else of
    its groups of another size times the variant's ratio between the two sizes on a task that has both, else of its
    task and variant's, else of its variant's; a variant none of whose runs is published is named instead."""
    import torch

    from ppo.pipeline.publish import INDEX_COLUMNS, hours_left
    from ppo.pipeline.study import narrowed

    study = narrowed(load_study("atari", "paper"), ["ALE/Pong-v5", "ALE/Breakout-v5"], ["atari_ppo", "atari_a2c"], "t")
    left = [r for r in study.runs() if (r.task, r.variant.name, r.seed) in
            {("ALE/Pong-v5", "atari_a2c", 1), ("ALE/Pong-v5", "atari_a2c", 2), ("ALE/Breakout-v5", "atari_a2c", 0),
             ("ALE/Pong-v5", "atari_ppo", 0)}]
    assert len(left) == 4
    # hours per run: Pong 4 (a group of 1), 5 (of 2), 2 (of 3); BeamRider 7
    rows = [("ALE/Pong-v5", 4 * 3600, "a"), ("ALE/Pong-v5", 10 * 3600, "a; b"), ("ALE/Pong-v5", 6 * 3600, "c; d; e"),
            ("ALE/BeamRider-v5", 7 * 3600, "f")]
    index = pd.DataFrame([{"study": "atari", "task": task, "variant": "atari_a2c", "wall_seconds": wall, "group": group}
                          for task, wall, group in rows], columns=INDEX_COLUMNS)
    pong = next(r for r in left if r.task == "ALE/Pong-v5" and r.variant.name == "atari_a2c" and r.seed == 2)
    folder = tmp_path / "grid" / "results" / "atari" / "paper" / "checkpoints"
    folder.mkdir(parents=True)
    config = json.dumps({"num_envs": 2, "horizon": 10, "total_steps": 400})
    torch.save({"iteration": 10, "fingerprint": [[pong.run_id, 2, "digest", config]]}, folder / "g.pt")  # 200 of 400

    def projection(hours, variant_hours):
        return (f"atari: 4 runs left, about {hours} job-hours for 3 of them at the median per run of the published runs "
                "of the same task and variant, from groups of the same size where published, else scaled by the variant's "
                f"ratio between group sizes on another task (of each variant: atari_a2c {variant_hours} h); not estimated (no published run of atari_ppo); trained so far: "
                "ALE/Pong-v5/atari_a2c/seed2 50%")

    # Pong A2C seeds 1 and 2 train as a group of 2: 5 h each, seed 2 half trained: 7.5 h; Breakout A2C, no run of its
    # own: the variant's median of 4, 5, 2 and 7 h: 4.5 h
    assert hours_left(study, left, index, [tmp_path / "grid"]) == projection("12.0", "4.5")
    # in groups of 1: 4 h each, 4 + 2 + 4.5
    assert hours_left(study, left, index, [tmp_path / "grid"], group_size=1) == projection("10.5", "4.5")
    # no group of 2 published: Pong A2C's median over all sizes, of 4 and 2 h: 3 + 1.5; Breakout: median of 4, 2, 7
    no_pair = index[index["group"] != "a; b"]
    assert hours_left(study, left, no_pair, [tmp_path / "grid"]) == projection("8.5", "4.0")
    # BeamRider has a group of 2 (8 h: 4 h a run) beside its group of 1 (7 h): A2C's groups of 2 cost 4/7 of a run alone
    # there, so Pong's, with no group of 2 of its own, cost 4 h (its group of 1) x 4/7 = 2.2857 h: 2.2857 + 1.1429;
    # Breakout: the variant's median of 4, 2, 7 and 4 h: 4.0
    beam_pair = pd.concat([no_pair, pd.DataFrame([{"study": "atari", "task": "ALE/BeamRider-v5", "variant": "atari_a2c",
                                                   "wall_seconds": 8 * 3600, "group": "g; h"}], columns=INDEX_COLUMNS)])
    assert hours_left(study, left, beam_pair, [tmp_path / "grid"]) == projection("7.4", "4.0")
    assert hours_left(study, left, index.iloc[:0], []) == "atari: 4 runs left; not estimated (no published run of " \
        "atari_a2c, atari_ppo)"


def test_seed_waves_by_hand():
    """The ten-seed status line: the seeds every cell has published, then each later seed's count of cells."""
    from ppo.pipeline.publish import seed_waves

    two_cells = [0, 0, 1, 1, 2, 2, 3, 3]
    assert seed_waves("t", two_cells, [True] * 6 + [False] * 2) == "t: seeds 0–2 published in every cell"
    assert seed_waves("t", two_cells, [True, True, True, False, False, True, True, False]) == (
        "t: seed 0 published in every cell; seed 1 in 1 of 2, seed 2 in 1 of 2, seed 3 in 1 of 2 cells")
    assert seed_waves("t", two_cells, [False, True] + [False] * 6) == (
        "t: no seed published in every cell; seed 0 in 1 of 2 cells")
    assert seed_waves("t", two_cells, [False] * 8) == "t: no seed published in every cell"


def test_publishing_seeds_0_to_2_keeps_the_index_rows_of_seeds_3_to_9(tmp_path):
    """The ten-seed grid publishes with --seeds 10; a later default publish (fewer seeds) must not drop the others."""
    from ppo.pipeline.publish import write_index

    study = load_study("table1", "smoke", 4)
    runs = [r for r in study.runs() if r.task == TASK and r.variant.name == "clip_0.2"]
    assert sorted(r.seed for r in runs) == [0, 1, 2, 3]
    assert study.label.endswith("1 seed (checks the pipeline, not the algorithm); here 4 seeds (the pipeline config's seeds)")
    train_smoke_runs(tmp_path / "grid" / "results", study, runs)
    published = tmp_path / "published"
    assert len(publish([tmp_path / "grid"], published, studies=[study])) == 4
    fewer = load_study("table1", "smoke")  # 1 seed
    assert sorted(write_index([fewer], published)["seed"]) == [0, 1, 2, 3]
    # a run no longer published loses its row
    (run_dir(published, study, runs[3]) / "manifest.json").unlink()
    assert sorted(write_index([fewer], published)["seed"]) == [0, 1, 2]


def test_status_writes_no_file(tmp_path):
    """A status is read-only: it reports what a publish would index, and INDEX.csv stays as the last publish left it
    (a status beside a running publish must not race its commit)."""
    from ppo.pipeline.publish import status

    study = load_study("table1", "smoke", 2)
    runs = [r for r in study.runs() if r.task == TASK and r.variant.name == "clip_0.2"]
    train_smoke_runs(tmp_path / "grid" / "results", study, runs)
    published = tmp_path / "published"
    assert len(publish([tmp_path / "grid"], published, studies=[study])) == 2
    index = published / "INDEX.csv"
    before, listed = index.read_bytes(), index.stat().st_mtime_ns
    # the seeds beyond the scale's own (smoke: 1), the ten-seed grid's share, apart: here one group trained both seeds
    rows = pd.read_csv(index)
    beyond = [line for line in status([tmp_path / "grid"], published, names=("table1",), scale="smoke",
                                      seeds=2).splitlines() if line.startswith("training time of table1's seed 1 ")]
    seed1 = rows[rows["seed"] == 1].drop_duplicates("group")
    assert rows["group"].nunique() == 1
    assert beyond == [f"training time of table1's seed 1 published so far (their groups also trained 1 run of seed 0, "
                      f"counted with them): {seed1['wall_seconds'].sum() / 3600:.1f} "
                      f"job-hours (wall clock of {len(seed1)} single-threaded groups, more than their CPU time where a "
                      f"core was shared; by processor: {seed1['processor'].iloc[0]} "
                      f"{seed1['wall_seconds'].sum() / 3600:.1f}); CPU time of the {len(seed1)} of {len(seed1)} groups "
                      f"that recorded it: {seed1['cpu_seconds'].sum() / 3600:.1f} core-hours against "
                      f"{seed1['wall_seconds'].sum() / 3600:.1f} job-hours of their wall clock (by processor: "
                      f"{seed1['processor'].iloc[0]} {seed1['cpu_seconds'].sum() / 3600:.1f})"]
    assert (seed1["cpu_seconds"] > 0).all()  # the manifests' CPU time reaches INDEX.csv
    (run_dir(published, study, runs[1]) / "manifest.json").unlink()  # a publish now would drop its row
    report = status([tmp_path / "grid"], published, names=("table1",), scale="smoke", seeds=2)
    assert "table1: 1 of" in report and "1 more finished, not yet published" in report
    assert "table1: no seed published in every cell; seed 0 in 1 of 22 cells" in report.splitlines()  # seed_waves
    assert index.read_bytes() == before and index.stat().st_mtime_ns == listed


def test_training_time_adds_the_cpu_time_of_the_groups_that_recorded_it():
    """Three groups, 2 h, 1 h and 1 h of wall clock; the last two recorded 0.5 h and 0.25 h of CPU time (one shared
    its core): 4.0 job-hours in all; CPU time of 2 of 3 groups, 0.8 core-hours against their 2.0 job-hours."""
    from ppo.pipeline.publish import INDEX_COLUMNS, training_time

    rows = [("g1", 7200.0, None, "AuthenticAMD-25-AVX512"), ("g2", 3600.0, 1800.0, "GenuineIntel-6-AVX512"),
            ("g2", 3600.0, 1800.0, "GenuineIntel-6-AVX512"),  # a second run of g2: counted once
            ("g3", 3600.0, 900.0, "AuthenticAMD-25-AVX512")]
    runs = pd.DataFrame([{"group": g, "wall_seconds": w, "cpu_seconds": c, "processor": p} for g, w, c, p in rows],
                        columns=INDEX_COLUMNS)
    assert training_time("x", runs) == (
        "training time of x: 4.0 job-hours (wall clock of 3 single-threaded groups, more than their CPU time where a "
        "core was shared; by processor: AuthenticAMD-25-AVX512 3.0, GenuineIntel-6-AVX512 1.0); CPU time of the 2 of 3 "
        "groups that recorded it: 0.8 core-hours against 2.0 job-hours of their wall clock (by processor: "
        "AuthenticAMD-25-AVX512 0.2, GenuineIntel-6-AVX512 0.5)")
    older = runs.assign(cpu_seconds=None)  # INDEX.csv rows from before 2026-12-07: no CPU clause
    assert training_time("x", older).endswith("GenuineIntel-6-AVX512 1.0)")


def test_the_ten_seed_share_counts_a_group_whole_and_says_what_else_it_trained():
    """A variant added after the paper's seeds were published trains seeds 0-9 in one group: its wall clock cannot be
    split by seed, so the line for seeds 3-9 counts the group whole and says it also trained 3 runs of seeds 0-2."""
    from ppo.pipeline.publish import beyond_own_seeds

    runs = pd.DataFrame({"seed": [0, 1, 2, 3, 4, 0, 1, 2], "group": ["a"] * 5 + ["b"] * 3,
                         "wall_seconds": [3600.0] * 5 + [7200.0] * 3, "cpu_seconds": [1800.0] * 5 + [3600.0] * 3,
                         "processor": ["AuthenticAMD-25-AVX512"] * 8})
    assert beyond_own_seeds("x", runs, 3, 4) == (
        "training time of x's seeds 3–4 published so far (their groups also trained 3 runs of seeds 0–2, counted with "
        "them): 1.0 job-hours (wall clock of 1 single-threaded groups, more than their CPU time where a core was shared; "
        "by processor: AuthenticAMD-25-AVX512 1.0); CPU time of the 1 of 1 groups that recorded it: 0.5 core-hours "
        "against 1.0 job-hours of their wall clock (by processor: AuthenticAMD-25-AVX512 0.5)")
    assert beyond_own_seeds("x", runs[runs["group"] == "b"], 3, 4) is None  # group b trained no seed beyond 2
    only_new = runs[runs["seed"] >= 3]
    assert beyond_own_seeds("x", only_new, 3, 3).startswith("training time of x's seed 3 published so far: 1.0")
