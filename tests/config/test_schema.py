"""Records written under an older config schema stay current (ppo.config.schema): a change of the record's shape
that keeps every run's behaviour trains nothing again."""
import json
from pathlib import Path

import pytest

from ppo.config.run_config import SCHEMA_VERSION, RunConfig
from ppo.config.schema import MIGRATIONS, current_config, current_manifest, recorded_digest, settings_digest
from ppo.config.settings import Objective, PPOSettings
from ppo.pipeline.study import is_current, load_study

# Written by the code of 9a2f461 (schema 1) for one run of every variant of every study at paper and
# reduced scale: the config, digest and environment protocol its manifest would hold.
SCHEMA1 = json.loads((Path(__file__).parent / "fixtures" / "schema1_records.json").read_text())["runs"]
STUDIES = {(key.split("/")[0], key.split("/")[1]) for key in SCHEMA1}
# Variants whose settings changed on purpose after the fixture was written: their schema-1 records must read as
# not current (another digest), so that the pipeline trains them again; no such run was published.
CHANGED_SINCE = {
    "atari_a2c": "2026-11-28: TF-style RMSProp, vf_coef 0.25 and the policy head at gain 1, as baselines' A2C "
                 "(experiments/presets/a2c_atari.yaml)",
    "atari_acer": "2026-11-28: the optimizer named in the config, TF-style RMSProp (experiments/presets/acer_atari.yaml)",
}


def test_every_version_before_this_one_has_a_migration():
    assert SCHEMA_VERSION == 3 and set(MIGRATIONS) == set(range(1, SCHEMA_VERSION))


@pytest.mark.parametrize("study, scale", sorted(STUDIES))
def test_schema_1_records_of_every_study_are_current(study, scale):
    planned = {f"{study}/{scale}/{run.run_id}": run for run in load_study(study, scale).runs()}
    records = {key: record for key, record in SCHEMA1.items() if key.startswith(f"{study}/{scale}/")}
    assert records
    for key, record in records.items():
        run = planned[key]
        if run.variant.name in CHANGED_SINCE:
            assert recorded_digest(record) != run.config_digest, (key, CHANGED_SINCE[run.variant.name])
            continue
        assert recorded_digest(record) == run.config_digest, key
        if record["config"]["algorithm"] == "ppo":  # its shape changed: the migration did the work
            assert record["config_digest"] != run.config_digest
        assert current_config(record["config"], 1) == json.loads(json.dumps(run.variant.config.to_dict())), key


def test_schema_1_to_2_by_hand():
    v1 = {"algorithm": "ppo", "total_steps": 1000, "horizon": 64, "epochs": 3, "objective": {"clip_epsilon": 0.1},
          "vf_clip": 0.2}
    assert current_config(v1, 1) == {
        "algorithm": "ppo", "total_steps": 1000, "horizon": 64, "network": "mlp", "env_protocol": None,
        "policy_init_scale": 0.01,
        "ppo": {"epochs": 3, "objective": {"clip_epsilon": 0.1}, "vf_clip": 0.2, "clip_schedule": "constant",
                "target_kl": None, "reward_norm": False, "reward_clip": 10.0, "adv_recompute": False}}
    trpo = {"algorithm": "trpo", "total_steps": 1000, "network": "mlp", "trpo": {"max_kl": 0.01}}
    assert current_config(trpo, 1) == {**trpo, "env_protocol": None, "policy_init_scale": 0.01}  # no ppo section
    assert v1["epochs"] == 3 and "ppo" not in v1  # the record read is not changed


def test_schema_2_to_3_records_the_policy_init_scale_every_earlier_run_used():
    v2 = {"algorithm": "a2c", "total_steps": 1000, "network": "cnn_mnih2016", "env_protocol": "paper2017",
          "a2c": {"vf_coef": 0.25}}
    assert current_config(v2, 2) == {**v2, "policy_init_scale": 0.01}
    assert "policy_init_scale" not in v2
    # a schema-2 record of today's defaults digests as today's config does: finished runs stay finished
    record = json.loads(json.dumps(RunConfig(ppo=PPOSettings(objective=Objective(clip_epsilon=0.3))).to_dict()))
    v2_record = {k: v for k, v in record.items() if k != "policy_init_scale"}
    assert recorded_digest({"config_schema": 2, "config": v2_record}) == settings_digest(record)


def test_a_record_of_this_schema_is_its_own_digest_and_an_unknown_schema_is_refused():
    cfg = RunConfig(ppo=PPOSettings(objective=Objective(clip_epsilon=0.3)))
    manifest = {"config_schema": SCHEMA_VERSION, "config": cfg.to_dict(), "config_digest": "0123456789abcdef"}
    assert recorded_digest(manifest) == "0123456789abcdef" and current_manifest(manifest) is manifest
    for version in (0, SCHEMA_VERSION + 1, "2", None):
        with pytest.raises(ValueError, match="config_schema"):
            recorded_digest({**manifest, "config_schema": version})


def test_a_run_of_another_run_or_of_a_future_schema_is_not_finished(tmp_path):
    study = load_study("classic", "smoke")
    run = study.runs()[0]
    folder = tmp_path / study.name / study.scale / "runs" / run.run_id
    folder.mkdir(parents=True)
    for name in study.run_files:
        (folder / name).write_text("x")
    manifest = {"config_schema": 1, "config": {}, "config_digest": run.config_digest}
    v1 = next(r for k, r in SCHEMA1.items() if k.startswith("classic/reduced/") and "/clip_0.2/" in k)
    (folder / "manifest.json").write_text(json.dumps({**v1, "config_schema": 1}))
    assert not is_current(tmp_path, study, run)  # a reduced-scale record is not the smoke run
    (folder / "manifest.json").write_text(json.dumps({**manifest, "config_schema": 99}))
    assert not is_current(tmp_path, study, run)
