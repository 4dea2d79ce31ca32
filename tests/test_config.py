"""Bad experiment files are refused before any job starts, with the file and field named."""
import shutil

import pytest

from ppo.config import ConfigError, load_variant
from ppo.study import load_study
from ppo.config import EXPERIMENTS_DIR


@pytest.fixture
def experiments(tmp_path):
    shutil.copytree(EXPERIMENTS_DIR, tmp_path / "experiments")
    return tmp_path / "experiments"


def write(path, text):
    path.write_text(text)
    return path


def test_the_eleven_table1_settings_are_data(experiments):
    study = load_study("table1", "paper", experiments_dir=experiments)
    objectives = {v.name: v.config.objective for v in study.variants}
    assert len(objectives) == 11
    assert objectives["no_clip"].clip_epsilon is None and objectives["no_clip"].kl_beta == 0
    assert objectives["clip_0.3"].clip_epsilon == 0.3
    assert (objectives["kl_adaptive_0.003"].kl_target, objectives["kl_adaptive_0.003"].kl_beta) == (0.003, 1.0)
    assert objectives["kl_fixed_10"].kl_beta == 10 and objectives["kl_fixed_10"].kl_target is None
    # Everything but the objective is the paper preset, so all eleven share one batched group per task.
    assert len({v.config.structural_key() for v in study.variants}) == 1
    assert len(study.runs()) == 7 * 11 * 3 and study.total_steps == 1_000_000


def test_new_ablation_is_one_file(experiments):
    write(experiments / "variants" / "clip_0.4.yaml",
          "label: eps 0.4\npreset: ppo_mujoco_paper\noverrides: {objective: {clip_epsilon: 0.4}}\n")
    study = load_study("table1", "reduced", experiments_dir=experiments)
    assert "clip_0.4" in [v.name for v in study.variants]  # picked up by the study's clip_* pattern


@pytest.mark.parametrize("text, field", [
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {learning_rat: 1}\n", "learning_rat"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {objective: {clip: 0.2}}\n", "clip"),
    ("label: x\npreset: ppo_mujoco_paper\noverides: {}\n", "overides"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {total_steps: -5}\n", "total_steps"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {objective: {clip_epsilon: -0.1}}\n", "clip_epsilon"),
    ("label: x\npreset: no_such_preset\n", "no_such_preset"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {horizon: '2048'}\n", "horizon"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {hidden_sizes: '64'}\n", "hidden_sizes"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {hidden_sizes: [64, 0]}\n", "hidden_sizes"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {obs_norm: 'yes'}\n", "obs_norm"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {learning_rate: true}\n", "learning_rate"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {epochs: 2.5}\n", "epochs"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {gamma: 1.5}\n", "gamma"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {minibatch_size: 100}\n", "minibatch_size"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {time_limit: sometimes}\n", "time_limit"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {objective: {kl_beta: '1'}}\n", "objective.kl_beta"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: {objective: {kl_target: 0.01}}\n", "kl_target"),
    ("label: x\npreset: ppo_mujoco_paper\noverrides: [1, 2]\n", "overrides"),
    ("preset: ppo_mujoco_paper\n", "label"),
    ("label: [unclosed\n", "not valid YAML"),
])
def test_bad_variant_file_names_file_and_field(experiments, text, field):
    path = write(experiments / "variants" / "broken.yaml", text)
    with pytest.raises(ConfigError) as err:
        load_variant("broken", experiments)
    message = str(err.value)
    assert field in message
    assert "broken.yaml" in message or "no_such_preset.yaml" in message


@pytest.mark.parametrize("old, new, scale, seeds, message", [
    ("Hopper-v5", "Hoppper-v5", "paper", None, "table1.yaml.*Hoppper-v5"),
    ("Hopper-v5", "Hopper", "paper", None, "no version suffix"),
    ("total_steps: 1000000", "total_steps: -1000000", "paper", None, "scales.paper.total_steps"),
    ("", "", "huge", None, "scale 'huge' is not defined"),
    ("", "", "paper", 0, "seeds"),
    ('"kl_fixed_*"]', '"kl_fixed_*", "no_such_variant"]', "paper", None, "no_such_variant.*matches no file"),
    ("anchor: clip_0.2", "anchor: clip_9", "paper", None, "anchor 'clip_9'"),
    ("tasks: [HalfCheetah-v5", "tasks: [HalfCheetah-v5, HalfCheetah-v5", "paper", None,
     "HalfCheetah-v5.*more than once"),
    ("anchor: clip_0.2", "anchor: clip_0.2\nextra_key: 1", "paper", None, "extra_key"),
])
def test_bad_study_fields(experiments, old, new, scale, seeds, message):
    study = experiments / "studies" / "table1.yaml"
    original = study.read_text()
    assert old in original
    write(study, original.replace(old, new) if old else original)
    with pytest.raises(ConfigError, match=message):
        load_study("table1", scale, seeds=seeds, experiments_dir=experiments)


def test_groups_respect_group_size_and_cover_every_run_once(experiments):
    study = load_study("table1", "paper", seeds=10, experiments_dir=experiments)
    groups = study.groups(group_size=16)
    runs = [r.run_id for g in groups for r in g.runs]
    assert sorted(runs) == sorted(r.run_id for r in study.runs())
    assert max(len(g.runs) for g in groups) == 16
    assert all(len({r.task for r in g.runs}) == 1 for g in groups)
