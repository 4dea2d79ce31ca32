"""Environment families (ppo/envs/family.py): every task belongs to exactly the family that declares it, the
declarations are what the rest of the suite reads, and a new family is its module and one FAMILIES entry."""
import dataclasses
import json

import pytest

import ppo.envs
from ppo.config.errors import ConfigError
from ppo.config.experiments import load_variant
from ppo.envs import FAMILIES, atari, family_of, gym
from ppo.envs.family import EnvFamily, task_name, task_version
from ppo.envs.lockstep import LockstepEnvs
from ppo.training import records
from ppo.training.driver import RunSpec, train_group


@pytest.mark.parametrize("task, family", [("ALE/Pong-v5", "atari"), ("PongNoFrameskip-v4", "atari"),
                                          ("Hopper-v5", "gymnasium"), ("CartPole-v1", "gymnasium"),
                                          ("NoSuchTask-v0", "gymnasium")])
def test_each_task_id_has_one_family(task, family):
    assert family_of(task).name == family
    assert [f.name for f in FAMILIES if f.owns(task)][0] == family  # the first owner decides


@pytest.mark.parametrize("task, says", [("PongNoFrameskip-v4", "legacy id"), ("NoSuchTask-v0", "unknown task id"),
                                        ("Hopper", "no version suffix")])
def test_a_family_refuses_a_task_in_one_line(task, says):
    with pytest.raises(ConfigError, match=says) as err:
        family_of(task).check(task, "study.yaml: field tasks")
    assert str(err.value).startswith("study.yaml: field tasks") and "\n" not in str(err.value)


def test_what_a_family_declares_is_what_a_run_records():
    cfg = load_variant("atari_ppo", total_steps=256).config
    record = atari.FAMILY.record("ALE/Pong-v5", cfg)
    assert record["protocol"] == "paper2017" and record["frame_skip"] == 4 and record["id"] == "ALE/Pong-v5"
    assert gym.FAMILY.record("Hopper-v5", load_variant("clip_0.2").config)["action_clip"] is True
    assert task_version("ALE/Pong-v5") == "v5" and task_name("ALE/Pong-v5") == "Pong"
    assert atari.FAMILY.observation == "pixels" == cfg.observation
    assert gym.FAMILY.observation == "vector" == load_variant("clip_0.2").config.observation


def test_every_family_s_packages_are_recorded_in_each_manifest():
    for family in FAMILIES:
        assert set(family.packages) <= set(records.PACKAGES), family.name


def test_costs_order_jobs_as_measured():
    speeds = {"Hopper-v5": 3561, "HalfCheetah-v5": 9429}
    hopper, cheetah = (gym.FAMILY.seconds_per_step(t, 3, speeds) for t in speeds)
    assert hopper == pytest.approx(3 * 3 / 3561) and cheetah < hopper
    assert gym.FAMILY.seconds_per_step("Unknown-v1", 1, speeds) == pytest.approx(3 / 3561)  # the slowest known
    assert atari.FAMILY.seconds_per_step("ALE/Pong-v5", 2, speeds) == pytest.approx(2 * atari.SECONDS_PER_STEP)
    assert gym.FAMILY.limit_seconds_per_step(33) == pytest.approx(0.63e-3 + 0.37e-3 * 33)


def test_a_new_family_is_its_declaration(monkeypatch, tmp_path):
    """A toy family (CartPole under another name) is accepted, trained and recorded through its declaration
    alone: the driver, the rollout and the records read nothing else."""
    toy = EnvFamily(
        name="toy", summary="CartPole-v1 under the id Toy-v1", owns=lambda task: task.startswith("Toy-"),
        check=lambda task, source: None if task == "Toy-v1" else (_ for _ in ()).throw(ConfigError(f"{source}: no")),
        make=lambda task, seeds, config: LockstepEnvs("CartPole-v1", seeds), observation="vector",
        discrete=lambda task: True, record=lambda task, config: {"id": task, "made_with": "the toy family"},
        version=task_version, packages=("gymnasium",), seconds_per_step=lambda task, runs, speeds: 1e-3 * runs,
        limit_seconds_per_step=lambda runs: 1e-3 * runs)
    monkeypatch.setattr(ppo.envs, "FAMILIES", (toy, *FAMILIES))
    family_of("Toy-v1").check("Toy-v1", "toy")
    cfg = dataclasses.replace(load_variant("clip_0.2").config, total_steps=256, horizon=128)
    result = train_group([RunSpec("Toy-v1/clip_0.2/seed0", "Toy-v1", cfg, 0, out_dir=tmp_path / "run")],
                         log=lambda _: None)[0]
    assert result.status == "completed" and len(result.episodes) > 3
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["env_protocol"] == {"id": "Toy-v1", "made_with": "the toy family"}
    assert manifest["env_version"] == "v1"
