"""analysis.io: loading run directories and random-policy references."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.io import RunDataError, load_random, load_study


def test_load_study_concatenates_runs_with_run_columns(tmp_path, make_run):
    make_run("Hopper-v5", "clip_0.2", 0, [1.0, 2.0, 3.0])
    make_run("Hopper-v5", "no_clip", 1, [5.0], status="diverged", diverged_at_step=400)
    make_run("Walker2d-v5", "kl_fixed_1", 2, [7.0, 8.0])

    episodes, updates, manifests = load_study(tmp_path / "runs")

    assert len(episodes) == 6  # 3 + 1 + 2 episodes
    assert len(updates) == 6  # 2 updates per run
    assert len(manifests) == 3
    for col in ("task", "variant", "variant_label", "seed", "status", "run_id"):
        assert col in episodes.columns and col in updates.columns
    clip = episodes[episodes["run_id"] == "Hopper-v5__clip_0.2__s0"]
    assert clip["episode_return"].tolist() == [1.0, 2.0, 3.0]
    assert set(clip["variant_label"]) == {"Clipping, ε = 0.2"}
    diverged = manifests.set_index("run_id").loc["Hopper-v5__no_clip__s1"]
    assert diverged["status"] == "diverged"
    assert diverged["diverged_at_step"] == 400
    assert episodes.loc[episodes["variant"] == "no_clip", "status"].tolist() == ["diverged"]
    assert episodes["seed"].dtype == "int64"


def test_paper_row_is_split_and_empty_param_kept(tmp_path, make_run):
    make_run("Hopper-v5", "clip_0.2", 0, [1.0])
    make_run("Hopper-v5", "no_clip", 0, [1.0])
    make_run("Hopper-v5", "kl_fixed_1", 0, [1.0])
    _, _, manifests = load_study(tmp_path / "runs")
    rows = manifests.set_index("variant")
    assert rows.loc["clip_0.2", "paper_setting"] == "clipping"
    assert rows.loc["clip_0.2", "paper_param"] == "epsilon=0.2"
    assert rows.loc["no_clip", "paper_setting"] == "no_clipping_or_penalty"
    assert rows.loc["no_clip", "paper_param"] == ""
    assert pd.isna(rows.loc["kl_fixed_1", "paper_setting"])
    assert "paper_row" not in manifests.columns  # replaced by the two flat columns


def test_missing_file_names_its_path(tmp_path, make_run):
    run_dir = make_run("Hopper-v5", "clip_0.2", 0, [1.0])
    (run_dir / "episodes.parquet").unlink()
    with pytest.raises(RunDataError, match="episodes.parquet"):
        load_study(tmp_path / "runs")


def test_corrupt_parquet_names_its_path(tmp_path, make_run):
    run_dir = make_run("Hopper-v5", "clip_0.2", 0, [1.0])
    (run_dir / "updates.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(RunDataError, match=r"corrupt parquet file .*seed0/updates\.parquet"):
        load_study(tmp_path / "runs")


def test_corrupt_manifest_names_its_path(tmp_path, make_run):
    run_dir = make_run("Hopper-v5", "clip_0.2", 0, [1.0])
    (run_dir / "manifest.json").write_text("{ truncated")
    with pytest.raises(RunDataError, match=r"corrupt manifest .*seed0/manifest\.json"):
        load_study(tmp_path / "runs")


def test_manifest_missing_keys_and_columns_are_errors(tmp_path, make_run):
    run_dir = make_run("Hopper-v5", "clip_0.2", 0, [1.0])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["status"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunDataError, match=r"lacks keys \['status'\]"):
        load_study(tmp_path / "runs")

    manifest["status"] = "completed"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    pd.DataFrame({"global_step": [1]}).to_parquet(run_dir / "episodes.parquet")
    with pytest.raises(RunDataError, match="episodes.parquet lacks columns"):
        load_study(tmp_path / "runs")


def test_duplicate_run_id_and_empty_dir(tmp_path, make_run):
    make_run("Hopper-v5", "clip_0.2", 0, [1.0])
    other = make_run("Hopper-v5", "clip_0.2", 1, [1.0])
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["run_id"] = "Hopper-v5__clip_0.2__s0"
    (other / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunDataError, match="appears in several runs"):
        load_study(tmp_path / "runs")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDataError, match="no run directories"):
        load_study(tmp_path / "empty")


def test_load_random_means_by_task(make_random, tmp_path):
    a = make_random("Hopper-v5", [1.0, 2.0, 6.0])  # mean 3
    b = make_random("Swimmer-v5", [-4.0, 0.0])  # mean -2
    series = load_random([a, b])
    assert series.to_dict() == {"Hopper-v5": 3.0, "Swimmer-v5": -2.0}
    with pytest.raises(RunDataError, match="missing file: .*Reacher-v5.parquet"):
        load_random([a, tmp_path / "random" / "Reacher-v5.parquet"])
