"""./repro verify of a training run (ppo.training.verify, through ppo.pipeline.verify's command): a finished run retrained here for its first updates, compared bit for bit; and
the processor each part of a run trained on, recorded in its manifest (ppo.training.driver.training_part)."""
import json

import pandas as pd
import pytest
from same_records import assert_same_records

from ppo.config.run_config import RunConfig
from ppo.config.settings import PPOSettings
from ppo.pipeline import verify as command
from ppo.training import records, verify
from ppo.training.driver import RunSpec, resumed_elsewhere, train_group

CFG = RunConfig(total_steps=1024, horizon=256, ppo=PPOSettings(epochs=2, minibatch_size=64))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "seed3"
    train_group([RunSpec("Hopper-v5/clip_0.2/seed3", "Hopper-v5", CFG, 3, out_dir=out, meta={"variant": "clip_0.2"})],
                log=lambda _: None)
    return out


def other_vendor(key: str) -> str:
    """A numerics key of the other vendor's processor than ``key``'s: the suite runs on Intel and on AMD."""
    return "AuthenticAMD-25-AVX512" if key.startswith("GenuineIntel") else "GenuineIntel-6-AVX512"


def changed_copy(run, dest, row: int, platform: dict | None = None):
    """A copy of ``run`` whose episode ``row`` differs by one last bit (as another processor would give), its
    manifest's platform updated with ``platform``."""
    dest.mkdir()
    for f in run.iterdir():
        dest.joinpath(f.name).write_bytes(f.read_bytes())
    if platform:
        manifest = json.loads((dest / "manifest.json").read_text())
        manifest["platform"] = {**manifest["platform"], **platform}
        (dest / "manifest.json").write_text(json.dumps(manifest))
    episodes = pd.read_parquet(dest / "episodes.parquet")
    episodes.loc[row, "episode_return"] += 1e-12
    records.write_parquet(episodes, dest / "episodes.parquet")
    return dest, episodes


def test_a_run_verified_on_the_machine_that_trained_it_is_identical(finished_run):
    identical, text = verify.verify(finished_run, updates=2)
    assert identical, text
    here = records.numerics_platform()["key"]
    assert text.startswith("identical: the first 2 updates, 512 steps,") and f"here {here}" in text


def test_a_changed_float_is_found_at_its_episode(finished_run, tmp_path):
    copy, episodes = changed_copy(finished_run, tmp_path / "copy", row=1)
    identical, text = verify.verify(copy, updates=2)
    step = int(episodes["global_step"].iloc[1])
    assert not identical
    assert text.startswith(f"differs from episode 2 (global step {step:,}): episode_return recorded")
    # the same platform and packages: the message says the numerics changed, not that the processor did
    assert "the code's numerics changed" in text


def test_a_run_from_another_processor_is_called_statistically_equivalent(finished_run, tmp_path):
    other = other_vendor(records.numerics_platform()["key"])
    copy, _ = changed_copy(finished_run, tmp_path / "copy", row=0, platform={"key": other, "model_name": "another model"})
    identical, text = verify.verify(copy, updates=1)
    assert not identical and f"Trained on {other} (another model;" in text
    assert "another platform or other packages: the runs are statistically equivalent" in text


def test_another_processor_model_with_the_same_numerics_key_is_the_same_platform(finished_run, tmp_path):
    # a processor of another model with this machine's key and packages computes the same bits: a difference is the code's
    copy, _ = changed_copy(finished_run, tmp_path / "copy", row=0, platform={"model_name": "another model"})
    identical, text = verify.verify(copy, updates=1)
    assert not identical and "the code's numerics changed" in text


def test_a_manifest_from_before_platforms_were_recorded_names_the_processor():
    platform = records.recorded_platform({"host": {"cpu": "Intel(R) Xeon(R) Processor"}})
    assert platform["key"] == "GenuineIntel-?-?" and platform["inferred"]
    assert records.recorded_platform({"host": {"cpu": "AMD EPYC"}})["vendor"] == "AuthenticAMD"


@pytest.mark.parametrize("content, says", [
    (None, "no manifest here"),
    ("{not json", "not a readable manifest"),
    ("[]", "a manifest is a JSON object"),
    ('{"config": {}, "task": "Hopper-v5"}', "field seed is missing"),
])
def test_an_unreadable_run_is_refused_in_one_line(tmp_path, capsys, content, says):
    if content is not None:
        (tmp_path / "manifest.json").write_text(content)
    assert command.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and str(tmp_path) in err


def test_the_manifest_records_where_each_part_trained(finished_run):
    manifest = json.loads((finished_run / "manifest.json").read_text())
    assert manifest["platform"] == records.numerics_platform()
    [part] = manifest["training_parts"]
    assert part["platform"] == manifest["platform"]["key"] and part["from_step"] == 0
    assert manifest["resumed_on_another_platform"] is False


def test_a_run_resumed_on_another_platform_says_so():
    here = {"platform": "AuthenticAMD-25-AVX512"}
    assert resumed_elsewhere([here, {"platform": "GenuineIntel-6-AVX512"}]) is True
    assert resumed_elsewhere([here, here]) is False
    assert resumed_elsewhere([{"platform": None}, here]) is None  # a part from before platforms were recorded
    # the same processor key with another torch build (a part trained on a machine with its own torch): another draw
    torch_213 = {**here, "packages": {"torch": "2.13.0+cpu", "numpy": "2.4.6"}}
    assert resumed_elsewhere([torch_213, {**here, "packages": {"torch": "2.11.0", "numpy": "2.4.6"}}]) is True
    assert resumed_elsewhere([torch_213, dict(torch_213)]) is False


def test_a_group_resumed_on_another_processor_records_both_parts(tmp_path, monkeypatch):
    from killing import Killed, kill_at

    import ppo.envs.gym

    out, ckpt = tmp_path / "seed0", tmp_path / "group.ckpt"
    spec = RunSpec("Hopper-v5/clip_0.2/seed0", "Hopper-v5", CFG, 0, out_dir=out)
    with monkeypatch.context() as m:
        kill_at(m, ppo.envs.lockstep.LockstepEnvs, "step", 256 * 3 + 5)  # inside the 4th iteration, after a checkpoint
        with pytest.raises(Killed):
            train_group([spec], log=lambda _: None, checkpoint=ckpt, checkpoint_every=1)
    this_machine = records.numerics_platform()
    here = this_machine["key"]
    other = other_vendor(here)
    monkeypatch.setattr(records, "numerics_platform", lambda: {**this_machine, "key": other})
    train_group([spec], log=lambda _: None, checkpoint=ckpt, checkpoint_every=1)
    manifest = json.loads((out / "manifest.json").read_text())
    first, second = manifest["training_parts"]
    assert first["platform"] == here and first["from_step"] == 0
    assert second == {**second, "platform": other, "from_iteration": 3, "from_step": 768}
    assert manifest["resumed_on_another_platform"] is True and manifest["platform"]["key"] == other


def test_stopping_after_some_iterations_keeps_the_checkpoint_to_resume_from(tmp_path):
    ckpt = tmp_path / "group.ckpt"
    spec = RunSpec("Hopper-v5/clip_0.2/seed3", "Hopper-v5", CFG, 3)
    start = train_group([spec], log=lambda _: None, checkpoint=ckpt, checkpoint_every=1, max_iterations=2)[0]
    assert ckpt.exists() and len(start.updates) == 2
    resumed = train_group([spec], log=lambda _: None, checkpoint=ckpt, checkpoint_every=1)[0]
    whole = train_group([spec], log=lambda _: None)[0]
    assert_same_records(whole, resumed)
