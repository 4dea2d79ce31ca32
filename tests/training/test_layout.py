"""ppo.training.layout: one place names a run and its folders, Atari's ALE/<Game> tasks included."""
from pathlib import Path

from analysis.io import find_run_dirs
from ppo.pipeline.study import load_study
from ppo.training import layout


def test_run_folders_and_a_group_s_checkpoint_and_plan_for_every_study():
    # The checkpoint names the code before the job's plans (issue 29) gave these groups: a group checkpointed then
    # resumes under today's code (tests/workflow/test_no_retrain.py does it through the pipeline).
    checkpoints = {"table1": "Hopper-v5-4d0101aacaeca0b6.pt", "atari": "ALE_Pong-v5-fb716af3c104a7ba.pt"}
    for name in ("table1", "atari"):
        study = load_study(name, "smoke")
        runs = [r for r in study.runs() if r.task == study.tasks[-1]]
        folders = [layout.run_dir("results", study, run) for run in runs]
        assert folders == [Path("results", name, "smoke", "runs", run.run_id) for run in runs]
        checkpoint = layout.checkpoint_path("results", study, runs[0].task, folders)
        assert checkpoint == Path("results", name, "smoke", "checkpoints", checkpoints[name])
        assert layout.checkpoint_path("results", study, runs[0].task, [str(f) for f in reversed(folders)]) == checkpoint
        plan = layout.plan_path("results", study, "train_x-0", folders)
        assert plan == Path("results", name, "smoke", "plans", f"train_x-0-{checkpoint.stem.rsplit('-', 1)[1]}.json")
        assert layout.plan_path("results", study, "train_x-0", folders[:-1]) != plan  # another packing, another file


def test_analysis_finds_runs_of_namespaced_tasks(tmp_path):
    folders = [tmp_path / "ALE/Pong-v5/atari_ppo/seed0", tmp_path / "Hopper-v5/clip_0.2/seed1"]
    for folder in folders:
        folder.mkdir(parents=True)
    assert find_run_dirs(tmp_path) == sorted(folders)


def test_every_study_file_plans_runs_at_every_scale():
    """A study file added to experiments/studies (table1_v4, the v4 check of issue 15) loads and plans."""
    import yaml

    from ppo.config.files import EXPERIMENTS_DIR
    for path in sorted((EXPERIMENTS_DIR / "studies").glob("*.yaml")):
        for scale in yaml.safe_load(path.read_text())["scales"]:
            assert load_study(path.stem, scale).runs(), f"{path.stem} at {scale} plans no run"
    v4 = load_study("table1_v4", "paper")
    assert len(v4.runs()) == 21 and {r.task.rsplit("-", 1)[1] for r in v4.runs()} == {"v4"}
