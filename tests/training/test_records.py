"""Run records are written atomically and say what produced them."""
import pandas as pd
import pytest

from ppo.training import records


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


def test_a_full_disk_is_named_as_such(tmp_path, monkeypatch):
    """torch reports a full disk as "enforce fail ... unexpected pos" (issue 30): the write says what it is,
    and the file as it was stays."""
    import errno
    import shutil
    from collections import namedtuple

    import pytest

    target = tmp_path / "group.ckpt"
    target.write_bytes(b"the last checkpoint")
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**9, 10**9 - 4096, 4096))

    def save_on_a_full_disk(tmp):
        raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 64 vs 0")

    with pytest.raises(OSError) as caught:
        records.atomic_write(target, save_on_a_full_disk)
    assert caught.value.errno == errno.ENOSPC and f"no space left on device writing {target}" in str(caught.value)
    assert target.read_bytes() == b"the last checkpoint" and list(tmp_path.iterdir()) == [target]
    with pytest.raises(RuntimeError, match="unexpected pos"):  # with room left, torch's own error is kept
        monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**9, 0, 10**9))
        records.atomic_write(target, save_on_a_full_disk)
