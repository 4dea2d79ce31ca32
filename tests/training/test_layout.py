"""ppo.training.layout: one place names a run and its folders, Atari's ALE/<Game> tasks included."""
import json
from pathlib import Path

import pytest

from analysis.io import find_run_dirs
from ppo.config.errors import ConfigError
from ppo.pipeline.job import check_digests, resolve_run
from ppo.pipeline.study import load_study
from ppo.training import layout


def test_run_folders_round_trip_for_every_study():
    for name in ("table1", "atari"):
        study = load_study(name, "smoke")
        for run in study.runs():
            folder = layout.run_dir("results", study, run)
            assert folder == Path("results", name, "smoke", "runs", run.run_id)
            assert layout.split_run_dir(folder, study.tasks)[1:] == (run.task, run.variant.name, f"seed{run.seed}")
            assert resolve_run(study, folder) == run


def test_analysis_finds_runs_of_namespaced_tasks(tmp_path):
    folders = [tmp_path / "ALE/Pong-v5/atari_ppo/seed0", tmp_path / "Hopper-v5/clip_0.2/seed1"]
    for folder in folders:
        folder.mkdir(parents=True)
    assert find_run_dirs(tmp_path) == sorted(folders)


def test_a_run_whose_digest_changed_since_planning_is_refused():
    study = load_study("table1", "smoke")
    runs = study.runs()[:2]
    check_digests(runs, {r.run_id: r.config_digest for r in runs})
    with pytest.raises(ConfigError, match=f"run {runs[1].run_id}: .*planned") as err:
        check_digests(runs, {runs[0].run_id: runs[0].config_digest, runs[1].run_id: "0" * 16})
    assert "\n" not in str(err.value)


def test_the_job_refuses_before_training(tmp_path, capsys):
    import ppo.pipeline.job

    study = load_study("table1", "smoke")
    run = study.runs()[0]
    output = layout.run_dir(tmp_path, study, run) / "manifest.json"
    code = ppo.pipeline.job.main(["--study", "table1", "--scale", "smoke", "--digests", json.dumps({run.run_id: "0" * 16}),
                         str(output)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and run.run_id in err
    assert not output.parent.exists()


def test_every_study_file_plans_runs_at_every_scale():
    """A study file added to experiments/studies (table1_v4, the v4 check of issue 15) loads and plans."""
    import yaml

    from ppo.config.files import EXPERIMENTS_DIR
    for path in sorted((EXPERIMENTS_DIR / "studies").glob("*.yaml")):
        for scale in yaml.safe_load(path.read_text())["scales"]:
            assert load_study(path.stem, scale).runs(), f"{path.stem} at {scale} plans no run"
    v4 = load_study("table1_v4", "paper")
    assert len(v4.runs()) == 21 and {r.task.rsplit("-", 1)[1] for r in v4.runs()} == {"v4"}
