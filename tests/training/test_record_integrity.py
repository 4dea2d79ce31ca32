"""Records you can trust (issue 30): every record file's SHA-256 is kept in its manifest when it is written, and a
record that is no longer what was written, or a manifest that names another run, is never counted as finished,
copied, published or scored; each is said in one line naming the file."""
import json

import pandas as pd
import pytest

from analysis.io import RunDataError
from analysis.io import load_study as load_records
from ppo.pipeline.plan import run_meta
from ppo.pipeline.publish import PUBLISHED
from ppo.pipeline.study import is_current, load_study
from ppo.training import records
from ppo.training.driver import RunSpec, train_group
from ppo.training.layout import run_dir

STUDY = load_study("table1", "smoke")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of the smoke Table 1, as the pipeline leaves it."""
    results = tmp_path_factory.mktemp("results")
    run = next(r for r in STUDY.runs() if r.variant.name == "clip_0.2")
    folder = run_dir(results, STUDY, run)
    cfg = run.variant.config
    train_group([RunSpec(run.run_id, run.task, cfg, run.seed, out_dir=folder, meta=run_meta(STUDY, run))],
                log=lambda _: None)
    return results, run, folder


def copy_of(finished, tmp_path):
    results, run, folder = finished
    target = run_dir(tmp_path, STUDY, run)
    target.mkdir(parents=True)
    for f in folder.iterdir():
        (target / f.name).write_bytes(f.read_bytes())
    return tmp_path, run, target


def test_the_manifest_keeps_every_records_hash(finished):
    _, run, folder = finished
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["sha256"] == {name: records.sha256(folder / name) for name in records.RECORD_FILES}
    assert is_current(finished[0], STUDY, run)


@pytest.mark.parametrize("offset", [-40, 100, 363])  # in the data pages, and near the footer
def test_one_flipped_bit_is_noticed_and_the_run_is_not_finished(finished, tmp_path, capsys, offset):
    results, run, folder = copy_of(finished, tmp_path)
    data = bytearray((folder / "episodes.parquet").read_bytes())
    data[offset] ^= 0x10
    (folder / "episodes.parquet").write_bytes(bytes(data))
    assert not is_current(results, STUDY, run)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folder / 'episodes.parquet'}: its content changed after it was written" in err
    with pytest.raises(RunDataError, match="episodes.parquet: its content changed"):
        load_records(folder.parent.parent.parent.parent, [folder])  # a report never scores it


def test_a_manifest_that_names_another_variant_is_not_this_run(finished, tmp_path, capsys):
    results, run, folder = copy_of(finished, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "variant": "kl_fixed_10"}))
    assert not is_current(results, STUDY, run)
    assert "field variant is 'kl_fixed_10', but the run in this folder is 'clip_0.2'" in capsys.readouterr().err


def test_an_edited_published_record_is_refused(tmp_path):
    """The front page read an edited published record (Hopper ε = 0.2 at 2,329.9 instead of 1,996.6) without a
    word; the published manifests now carry their records' hashes, and the edited run is not current."""
    paper = load_study("table1", "paper")
    run = next(r for r in paper.runs() if r.run_id == "Hopper-v5/clip_0.2/seed0")
    folder = run_dir(PUBLISHED, paper, run)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert records.changed_record(folder, manifest) is None
    episodes = pd.read_parquet(folder / "episodes.parquet")
    episodes.loc[len(episodes) - 1, "episode_return"] += 1000.0
    edited = tmp_path / "edited"
    edited.mkdir()
    for f in folder.iterdir():
        (edited / f.name).write_bytes(f.read_bytes())
    records.write_parquet(episodes, edited / "episodes.parquet")
    assert "episodes.parquet: its content changed" in records.changed_record(edited, manifest)
