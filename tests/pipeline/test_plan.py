"""ppo.pipeline.plan: the planner writes each job's runs as it resolved them; the job reads them back as the same
runs, and refuses, in one line naming the file and the field, a plan that no longer matches them (issue 29)."""
import dataclasses
import json
import os

import pytest

import ppo.pipeline.study
from ppo.config.errors import ConfigError
from ppo.pipeline import job
from ppo.pipeline.plan import make_plan, read_plan, run_meta, write_plan
from ppo.pipeline.study import load_study
from ppo.training import layout


def group(study, task, variants=None):
    return [r for r in study.runs() if r.task == task and (variants is None or r.variant.name in variants)]


@pytest.mark.parametrize("name, task", [("table1", "Hopper-v5"), ("atari", "ALE/Pong-v5")])
def test_a_plan_reads_back_as_the_runs_the_planner_resolved(tmp_path, name, task):
    study = load_study(name, "smoke")
    runs = group(study, task)
    plan = read_plan(write_plan(tmp_path / "results", study, "train_x-0", runs))
    assert (plan.job, plan.name, plan.scale) == ("train", name, "smoke")
    for run, planned in zip(runs, plan.runs, strict=True):
        assert (planned.run_id, planned.task, planned.variant, planned.seed) == (run.run_id, run.task,
                                                                                 run.variant.name, run.seed)
        assert planned.folder == layout.run_dir(tmp_path / "results", study, run)
        assert planned.config == run.variant.config  # every field, not only those the record holds
        assert planned.config_digest == run.config_digest and planned.meta == run_meta(study, run)
        assert planned.source is None
    folders = [layout.run_dir(tmp_path / "results", study, r) for r in runs]
    assert plan.checkpoint == layout.checkpoint_path(tmp_path / "results", study, task, folders)


def test_a_copy_plan_names_each_run_s_source(tmp_path):
    study = load_study("table1", "smoke")
    runs = group(study, "Hopper-v5", ("clip_0.2", "no_clip"))
    sources = [tmp_path / "elsewhere" / r.variant.name for r in runs]
    plan = read_plan(write_plan(tmp_path / "results", study, "copy_published", runs, sources))
    assert plan.job == "copy" and [r.source for r in plan.runs] == sources


def test_a_plan_is_written_only_when_its_content_changes(tmp_path):
    study = load_study("table1", "smoke")
    runs = group(study, "Hopper-v5")
    path = write_plan(tmp_path, study, "train_Hopper-ppo-0", runs)
    folders = [layout.run_dir(tmp_path, study, r) for r in runs]
    assert path == layout.plan_path(tmp_path, study, "train_Hopper-ppo-0", folders)
    os.utime(path, (1_000_000_000, 1_000_000_000))  # 2001: an unchanged plan keeps it
    assert write_plan(tmp_path, study, "train_Hopper-ppo-0", runs) == path
    assert path.stat().st_mtime == 1_000_000_000
    relabelled = dataclasses.replace(study, label="another label")  # what the runs' manifests will say changed
    assert write_plan(tmp_path, relabelled, "train_Hopper-ppo-0", runs) == path
    assert path.stat().st_mtime > 1_000_000_000
    assert json.loads(path.read_text())["runs"][0]["meta"]["scale_label"] == "another label"
    assert write_plan(tmp_path, study, "train_Hopper-ppo-0", runs[:3]) != path  # other runs: another file


def edited(tmp_path, plan, edit):
    edit(plan)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


@pytest.mark.parametrize("edit, says", [
    (lambda p: p["runs"][0].update(seed=-1), r"field runs\[0\]\.seed must be an integer >= 0, got -1"),
    (lambda p: p["runs"][0].update(extra=1), r"field runs\[0\]: unknown field\(s\) \['extra'\]"),
    (lambda p: p["runs"][0].pop("config_digest"), r"field runs\[0\]: missing field\(s\) \['config_digest'\]"),
    (lambda p: p["runs"][1]["meta"].update(variant="clip_0.3"),
     r"field runs\[1\]\.meta\.variant is 'clip_0\.3', but the run's is 'clip_0\.2'"),
    (lambda p: p["runs"].append(p["runs"][0]), r"field runs\[2\]\.folder: .* is also runs\[0\]'s"),
    (lambda p: p.update(job="publish"), r"field job must be one of \['train', 'copy'\], got 'publish'"),
    (lambda p: p.update(runs=[]), r"field runs must be a non-empty list of runs"),
])
def test_a_plan_that_is_not_its_runs_is_refused_in_one_line(tmp_path, edit, says):
    study = load_study("table1", "smoke")
    path = edited(tmp_path, make_plan(tmp_path / "results", study, group(study, "Hopper-v5", ("clip_0.2", "no_clip"))),
                  edit)
    with pytest.raises(ConfigError, match=says) as err:
        read_plan(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_the_job_refuses_a_run_whose_protocol_file_changed_since_planning(tmp_path, monkeypatch, capsys):
    """An Atari run's environments read its protocol file when the job starts: the plan holds the settings that
    file had when it was planned (in the config digest), and a file that now says otherwise stops the job before
    anything is trained."""
    study = load_study("atari", "smoke")
    path = write_plan(tmp_path / "results", study, "train_Pong-ppo-0", group(study, "ALE/Pong-v5", ("atari_ppo",)))
    assert read_plan(path).runs[0].config.env_protocol == "paper2017"
    real = ppo.pipeline.study.load_protocol
    monkeypatch.setattr(ppo.pipeline.study, "load_protocol",
                        lambda name: dataclasses.replace(real(name), noop_max=real(name).noop_max + 1))
    assert job.main(["--plan", str(path)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith(f"error: {path}: field runs[0].env_protocol.noop_max is 30, but "
                                                     "protocol 'paper2017' (experiments/protocols/) now has 31")
    assert said.rstrip().endswith("nothing was trained or copied")
    assert not any((tmp_path / "results/atari/smoke" / folder).exists() for folder in ("runs", "checkpoints"))


def test_the_job_refuses_a_plan_edited_after_planning_before_training(tmp_path, capsys):
    study = load_study("table1", "smoke")
    runs = group(study, "Hopper-v5", ("clip_0.2",))
    path = edited(tmp_path, make_plan(tmp_path / "results", study, runs),
                  lambda p: p["runs"][0]["config"]["ppo"].update(epochs=9))
    assert job.main(["--plan", str(path)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and f"{path}: field runs[0].config_digest is '{runs[0].config_digest}'" in said
    assert not (tmp_path / "results").exists()
