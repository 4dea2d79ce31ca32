"""Run records are written atomically and say what produced them."""
import pandas as pd
import pytest

from ppo import records


def test_interrupted_write_leaves_no_file(tmp_path):
    target = tmp_path / "run" / "episodes.parquet"

    def dies_midway(path):
        path.write_bytes(b"PAR1 half a file")
        raise KeyboardInterrupt  # the job is killed while writing

    with pytest.raises(KeyboardInterrupt):
        records.atomic_write(target, dies_midway)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no temporary file left behind either


def test_parquet_round_trip_and_overwrite(tmp_path):
    path = tmp_path / "e.parquet"
    records.write_parquet(pd.DataFrame({"global_step": [1, 2], "episode_return": [0.5, 1.5]}), path)
    records.write_parquet(pd.DataFrame({"global_step": [3], "episode_return": [2.5]}), path)
    assert pd.read_parquet(path)["global_step"].tolist() == [3]


def test_provenance_fields():
    versions = records.package_versions()
    assert versions["torch"].startswith("2.") and versions["gymnasium"] is not None
    git = records.git_state()
    assert set(git) == {"commit", "dirty"}
    assert records.host_info()["cpu_count"] >= 1
