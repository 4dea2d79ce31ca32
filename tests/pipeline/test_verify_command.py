"""./repro verify (ppo.pipeline.verify): an RLHF run's starting models built again and their measures compared with the
manifest's, then its first updates and the responses the record keeps, bit for bit; a training run through
ppo.training.verify, window by window where the dataset keeps one update row per window of steps (an Atari run's)."""
import json
import shutil

import pandas as pd
import pytest

from ppo.config.run_config import RunConfig
from ppo.config.settings import PPOSettings
from ppo.pipeline import rlhf_job, verify
from ppo.pipeline.publish import as_published, rlhf_published
from ppo.training import records
from ppo.training.driver import RunSpec, train_group

TINY = ["updates=4", "batch_size=16", "minibatch_size=8", "epochs=1", "sft.steps=20", "sft.batch_size=32",
        "reward_model.pairs=64", "reward_model.normalise_samples=64"]


@pytest.fixture(scope="module")
def rlhf_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rlhf") / "seed0"
    sets = [x for item in TINY for x in ("--set", item)]
    assert rlhf_job.main(["--variant", "clip_0.2", "--seed", "0", "--pipeline-seeds", "--out", str(out), *sets]) == 0
    return out


def copy_of(run, tmp_path):
    shutil.copytree(run, tmp_path / "copy")
    return tmp_path / "copy"


def with_one_update_changed(run, tmp_path, column, by):
    """A copy of the run whose second update row has ``column`` moved by ``by`` (a last bit, as another processor)."""
    copy = copy_of(run, tmp_path)
    updates = pd.read_parquet(copy / "updates.parquet")
    updates.loc[1, column] += by
    records.write_parquet(updates, copy / "updates.parquet")
    return copy


def test_an_rlhf_run_is_rebuilt_and_identical(rlhf_run):
    identical, text = verify.verify(rlhf_run, updates=2)
    assert identical, text
    assert text.startswith("identical: the starting models (built again: 8 measures), 2 update rows and ")
    assert f"here {records.numerics_platform()['key']}" in text


def test_a_published_run_keeps_some_responses_and_those_are_compared(rlhf_run, tmp_path):
    copy = copy_of(rlhf_run, tmp_path)
    updates = pd.read_parquet(copy / "updates.parquet")
    kept = rlhf_published(pd.read_parquet(copy / "samples.parquet"), "samples.parquet", updates)
    assert set(kept["update"]) < set(range(5))  # the test means something: some updates' responses are gone
    kept.loc[0, "response"] = kept.loc[0, "response"] + "x"
    records.write_parquet(kept, copy / "samples.parquet")
    identical, text = verify.verify(copy, updates=2)
    assert not identical and text.startswith("differs in sample 1 (update 0): response recorded")


def test_a_changed_float_is_found_at_its_update(rlhf_run, tmp_path):
    identical, text = verify.verify(with_one_update_changed(rlhf_run, tmp_path, "gold_reward", 1e-12), updates=2)
    assert not identical and text.startswith("differs in update row 2 (update 1): gold_reward recorded")
    assert "the code's numerics changed" in text  # the same platform and packages


def test_other_starting_models_are_found_before_the_updates(rlhf_run, tmp_path):
    copy = copy_of(rlhf_run, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["models"]["rm_accuracy_gold"] += 0.01
    (copy / "manifest.json").write_text(json.dumps(manifest))
    identical, text = verify.verify(copy, updates=1)
    assert not identical and text.startswith("differs in the starting models: rm_accuracy_gold recorded")


def test_a_cache_without_the_models_is_left_as_it_was(rlhf_run, tmp_path):
    identical, text = verify.verify(rlhf_run, updates=1, models_cache=tmp_path / "cache")
    assert identical and "built again" in text and not (tmp_path / "cache").exists()


def test_a_training_run_goes_to_the_training_verify(tmp_path, capsys):
    out = tmp_path / "seed3"
    cfg = RunConfig(total_steps=512, horizon=256, ppo=PPOSettings(epochs=1, minibatch_size=128))
    train_group([RunSpec("Hopper-v5/clip_0.2/seed3", "Hopper-v5", cfg, 3, out_dir=out)], log=lambda _: None)
    assert verify.main([str(out), "--updates", "1"]) == 0
    assert "identical: the first 1 updates, 256 steps," in capsys.readouterr().out


def test_an_rlhf_manifest_without_its_seed_is_refused_in_one_line(rlhf_run, tmp_path, capsys):
    copy = copy_of(rlhf_run, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["seed"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert verify.main([str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field seed is missing" in err and str(copy) in err


@pytest.fixture(scope="module")
def published_form_run(tmp_path_factory):
    """A run of 1,024-step iterations (two per window of the dataset's 2,048 steps) as the dataset keeps it."""
    out = tmp_path_factory.mktemp("published") / "seed3"
    cfg = RunConfig(total_steps=6144, horizon=1024, ppo=PPOSettings(epochs=1, minibatch_size=256))
    train_group([RunSpec("Hopper-v5/clip_0.2/seed3", "Hopper-v5", cfg, 3, out_dir=out)], log=lambda _: None)
    for name in ("updates.parquet", "timing.parquet"):
        records.write_parquet(as_published(pd.read_parquet(out / name), name), out / name)
    assert len(pd.read_parquet(out / "updates.parquet")) == 3
    return out


def test_a_record_kept_one_row_per_window_is_compared_window_by_window(published_form_run):
    identical, text = verify.verify(published_form_run, updates=2)
    assert identical, text
    assert text.startswith("identical: the first 4 updates (2 rows, as the record keeps one per 2,048 steps), "
                           "4,096 steps")


def test_a_changed_mean_in_a_window_is_found(published_form_run, tmp_path):
    changed = with_one_update_changed(published_form_run, tmp_path, "value_loss", 1e-9)
    identical, text = verify.verify(changed, updates=2)
    assert not identical and text.startswith("differs from update 2 (global step 4,096): value_loss recorded")
