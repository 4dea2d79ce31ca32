"""A run two studies share is trained once: the later study copies it (ppo.pipeline.study.shared_runs, ppo.pipeline.job.copy_run)."""
import json
from pathlib import Path

import pytest

from ppo.config.errors import ConfigError
from ppo.config.run_config import SCHEMA_VERSION
from ppo.pipeline.job import COPIED_FILES, copy_run
from ppo.pipeline.plan import run_meta
from ppo.pipeline.study import load_study, shared_runs

SMOKE_TASKS = ("InvertedPendulum-v5", "Hopper-v5")


def test_figure3_ppo_runs_are_table1_clip_0_2_runs():
    table1, figure3 = load_study("table1", "smoke"), load_study("figure3", "smoke")
    shared = shared_runs([table1, figure3])
    assert set(shared) == {("figure3", f"{task}/clip_0.2/seed0") for task in SMOKE_TASKS}
    for (_, run_id), (owner, run) in shared.items():
        assert owner.name == "table1" and run.run_id == run_id
    # The study listed first trains; the order of the list decides which one copies.
    assert set(shared_runs([figure3, table1])) == {("table1", f"{task}/clip_0.2/seed0") for task in SMOKE_TASKS}
    assert shared_runs([figure3]) == {}


def test_runs_with_another_budget_or_seed_are_not_shared():
    # Reduced and smoke budgets differ (61,440 vs 4,096 steps): same variant file, different configuration.
    assert shared_runs([load_study("table1", "smoke"), load_study("figure3", "reduced")]) == {}
    # Two seeds in Figure 3, one in Table 1: only seed 0 is Table 1's.
    shared = shared_runs([load_study("table1", "smoke"), load_study("figure3", "smoke", seeds=2)])
    assert {run_id.rsplit("/", 1)[1] for _, run_id in shared} == {"seed0"}


def finished_run(folder: Path, run, study) -> Path:
    folder.mkdir(parents=True)
    for i, name in enumerate(COPIED_FILES):
        (folder / name).write_bytes(bytes([i]) * 100)
    manifest = {"run_id": run.run_id, "task": run.task, "seed": run.seed, "wall_seconds": 12.5,
                "group": [run.run_id, "other"], "config_schema": SCHEMA_VERSION, "config": run.variant.config.to_dict(),
                **run_meta(study, run)}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture
def studies_and_run():
    table1, figure3 = load_study("table1", "smoke"), load_study("figure3", "smoke")
    run = next(r for r in figure3.runs() if r.variant.name == "clip_0.2")
    owner_run = next(r for r in table1.runs() if r.run_id == run.run_id)
    return table1, figure3, owner_run, run


def test_copy_keeps_the_records_and_says_where_they_come_from(tmp_path, studies_and_run):
    table1, figure3, owner_run, run = studies_and_run
    source = finished_run(tmp_path / "table1_run", owner_run, table1)
    dest = tmp_path / "figure3_run"
    copy_run(source, run, dest, run_meta(figure3, run))
    for name in COPIED_FILES:
        assert (dest / name).read_bytes() == (source / name).read_bytes()
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["study"] == "figure3" and manifest["scale_label"] == figure3.label
    assert manifest["copied_from"] == {"run_dir": str(source), "study": "table1", "scale": "smoke"}
    # What trained it is unchanged: its group (table1's runs) and its wall time.
    assert manifest["group"] == [run.run_id, "other"] and manifest["wall_seconds"] == 12.5
    assert manifest["config_digest"] == run.config_digest


def test_copy_refuses_another_run_and_writes_nothing(tmp_path, studies_and_run):
    table1, figure3, owner_run, run = studies_and_run
    source = finished_run(tmp_path / "table1_run", owner_run, table1)
    manifest = json.loads((source / "manifest.json").read_text())
    (source / "manifest.json").write_text(json.dumps({**manifest, "config_digest": "0123456789abcdef"}))
    dest = tmp_path / "figure3_run"
    with pytest.raises(ConfigError, match=r"table1_run/manifest.json: field config_digest is '0123456789abcdef'"):
        copy_run(source, run, dest, run_meta(figure3, run))
    assert not dest.exists()

    (source / "manifest.json").write_text(json.dumps(manifest))
    (source / "timing.parquet").unlink()
    with pytest.raises(ConfigError, match=r"lacks \['timing.parquet'\]"):
        copy_run(source, run, dest, run_meta(figure3, run))
    assert not dest.exists()
