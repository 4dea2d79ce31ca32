"""The RLHF study's runs published with the project (ppo.pipeline.publish --studies rlhf, published/rlhf/full): what
the dataset keeps of a run, that a published current run is copied and not trained (ppo.pipeline.rlhf_job --copy-plan,
workflow/rules/rlhf.smk), and docs/rlhf-results.md written from the records (scripts/rlhf_results.py). Tiny runs of
the smoke scale at two pipeline seeds stand for the full scale's."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from project_copy import copy_project

from ppo.pipeline import rlhf_job
from ppo.pipeline.publish import (RLHF_SAMPLES_EVERY, RLHF_SAMPLES_KEPT, publish, rlhf_peaks, rlhf_published, status,
                                  write_bare)
from ppo.pipeline.rlhf_study import write_copy_plan
from ppo.pipeline.study import is_current, load_study, run_dir

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "published"
SEEDS = 2
FILES = ("updates.parquet", "samples.parquet", "timing.parquet")
spec = importlib.util.spec_from_file_location("rlhf_results", ROOT / "scripts" / "rlhf_results.py")
rlhf_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rlhf_results)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """A grid's clone after training the smoke scale at 2 seeds (4 settings: 8 runs, 2 model builds), as the
    workflow's jobs train them."""
    root = tmp_path_factory.mktemp("rlhf_grid")
    study = load_study("rlhf", "smoke", SEEDS)
    for run in study.runs():
        assert rlhf_job.main(["--study", "rlhf", "--scale", "smoke", "--seeds", str(SEEDS), "--cell", run.variant.name,
                              "--seed", str(run.seed), "--digest", run.config_digest,
                              "--out", str(run_dir(root / "results", study, run)),
                              "--models-cache", str(root / "results/rlhf/smoke/models")]) == 0
    return root, study


@pytest.fixture(scope="module")
def published(grid, tmp_path_factory):
    root, study = grid
    folder = tmp_path_factory.mktemp("published")
    added = publish([root], folder, studies=[study])
    assert sorted(added) == sorted(f"rlhf:{r.run_id}" for r in study.runs())
    return folder


def test_a_finished_rlhf_run_is_current(grid, tmp_path):
    """is_current reads an RLHF run's recorded digest as recorded (its config has no schema versions; read as a
    MuJoCo record of schema 1 it never matched, and no RLHF run counted as finished)."""
    root, study = grid
    run = study.runs()[0]
    assert is_current(root / "results", study, run)
    copy = tmp_path / "results"
    shutil.copytree(run_dir(root / "results", study, run), run_dir(copy, study, run))
    manifest = run_dir(copy, study, run) / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "config_digest": "0" * 16}))
    assert not is_current(copy, study, run)


def test_published_rlhf_runs_keep_their_records_hashed_and_indexed(grid, published):
    root, study = grid
    assert publish([root], published, studies=[study]) == []  # nothing twice
    index = pd.read_csv(published / "INDEX.csv")
    assert len(index) == len(study.runs()) and set(index["study"]) == {"rlhf"}
    assert set(index["status"]) == {"completed"} and index["commit"].notna().all() and index["torch"].notna().all()
    assert index["processor"].notna().all() and index["sha256_samples"].notna().all()
    assert index["sha256_episodes"].isna().all() and (index["group"] == index["task"] + "/" + index["variant"]
                                                      + "/seed" + index["seed"].astype(str)).all()
    for run in study.runs():
        trained, kept = run_dir(root / "results", study, run), run_dir(published, study, run)
        assert is_current(published, study, run)
        manifest = json.loads((kept / "manifest.json").read_text())
        assert sorted(manifest["sha256"]) == sorted(FILES) and not (kept / "model.pt").exists()
        updates = pd.read_parquet(trained / "updates.parquet")
        pd.testing.assert_frame_equal(pd.read_parquet(kept / "updates.parquet"), updates, check_exact=True)
        timing = pd.read_parquet(trained / "timing.parquet")
        pd.testing.assert_frame_equal(pd.read_parquet(kept / "timing.parquet"),
                                      timing.astype({c: "float32" for c in timing.columns if c != "update"}),
                                      check_exact=True)
        samples = pd.read_parquet(trained / "samples.parquet")
        pd.testing.assert_frame_equal(pd.read_parquet(kept / "samples.parquet"),
                                      rlhf_published(samples, "samples.parquet", updates), check_exact=True)
    # a changed record: the run is no longer current there (and would not be copied)
    changed = run_dir(published, study, study.runs()[1]) / "samples.parquet"
    original = changed.read_bytes()
    try:
        changed.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
        assert not is_current(published, study, study.runs()[1])
    finally:
        changed.write_bytes(original)
    lines = status([root], published, names=("rlhf",), scale="smoke", seeds=SEEDS).splitlines()
    assert lines[0] == f"rlhf: {len(study.runs())} of {len(study.runs())} runs published, 0 more finished, not yet published"
    assert any(line.startswith("training time of rlhf's published runs") for line in lines)
    assert status([], published, names=("rlhf",)).splitlines()[0].startswith("rlhf: 0 of 300 runs published")


def test_samples_are_kept_every_5th_update_and_where_the_report_shows_them():
    """A 13-update run whose smoothed gold peaks at update 7 and proxy at 9: kept are updates 0, 5, 10, the two
    peaks and the last, the first RLHF_SAMPLES_KEPT responses of each; best-of-n's samples whole."""
    updates = pd.DataFrame({"update": range(13), "proxy_reward": -np.abs(np.arange(13.0) - 9),
                            "gold_reward": -np.abs(np.arange(13.0) - 7)})
    assert rlhf_peaks(updates) == {7, 9, 12}
    from analysis.rlhf import SMOOTH  # the report's smoothing: publish keeps the samples at the peaks it finds
    from ppo.pipeline.publish import RLHF_SMOOTH
    assert RLHF_SMOOTH == SMOOTH
    samples = pd.DataFrame([{"update": u, "index": i, "response": "ab$"} for u in range(13) for i in range(10)])
    kept = rlhf_published(samples, "samples.parquet", updates)
    assert RLHF_SAMPLES_EVERY == 5 and sorted(kept["update"].unique()) == [0, 5, 7, 9, 10, 12]
    assert sorted(kept["index"].unique()) == list(range(RLHF_SAMPLES_KEPT))
    best_of_n = pd.DataFrame({"n": [1, 1, 2, 2], "index": [0, 1, 0, 1]})
    assert rlhf_published(best_of_n, "samples.parquet", None) is best_of_n


def test_bare_parquet_reads_back_the_same(tmp_path):
    frame = pd.DataFrame({"update": [0, 1], "x": [0.5, np.nan], "y": np.float32([1.5, 2]), "ok": [True, False],
                          "text": ["^ab", "c$"]})
    write_bare(frame, tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), frame, check_exact=True)


def copy(plan_root: Path, study, runs, sources) -> int:
    plan = write_copy_plan(plan_root / "results", study, "copy_published", runs, sources, seeds=SEEDS)
    return rlhf_job.main(["--copy-plan", str(plan)])


def test_a_published_rlhf_run_is_copied_exactly_or_not_at_all(grid, published, tmp_path, capsys):
    _, study = grid
    runs = study.runs()[:3]
    sources = [run_dir(published, study, r) for r in runs]
    assert copy(tmp_path / "a", study, runs, sources) == 0
    for run, source in zip(runs, sources):
        dest = run_dir(tmp_path / "a/results", study, run)
        assert is_current(tmp_path / "a/results", study, run)
        for name in FILES:
            assert (dest / name).read_bytes() == (source / name).read_bytes()
        manifest = json.loads((dest / "manifest.json").read_text())
        assert manifest["copied_from"]["run_dir"] == str(source) and manifest["config_digest"] == run.config_digest
    # a changed record: one line naming the file; nothing copied, not even the good runs
    changed = tmp_path / "changed"
    shutil.copytree(published, changed)
    bad = run_dir(changed, study, runs[2]) / "updates.parquet"
    bad.write_bytes(bad.read_bytes()[:-1] + bytes([bad.read_bytes()[-1] ^ 1]))
    capsys.readouterr()
    assert copy(tmp_path / "b", study, runs, [run_dir(changed, study, r) for r in runs]) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and said.startswith(f"error: {bad}: its content changed")
    assert said.endswith("nothing was copied") and not (tmp_path / "b/results/rlhf/smoke/runs").exists()
    # another run's folder as the source: refused
    assert copy(tmp_path / "c", study, runs[:1], sources[1:2]) == 2
    assert "not the same run" in capsys.readouterr().err


def test_the_results_page_is_written_from_the_records_only(grid, published, tmp_path):
    root, study = grid
    empty = rlhf_results.build(tmp_path / "none", "smoke", SEEDS)
    assert "**No smoke-scale RLHF records exist yet**" in empty and "| " not in empty  # no table, no number
    text = rlhf_results.build(published, "smoke", SEEDS)
    assert f"**{len(study.runs())} of the scale's {len(study.runs())} runs are published**" in text
    assert "every run of the grid is here" in text
    from analysis.rlhf import load_runs, peak_final_table

    table = peak_final_table(*load_runs(published / "rlhf/smoke/runs"))
    row = table[table["cell"] == "clip_0.2-ref0.1"].iloc[0]
    line = next(x for x in text.splitlines() if x.startswith(f"| {row['setting']} |"))
    assert f"| {row['peak_gold']:.2f} ({row['peak_ci_low']:.2f} to {row['peak_ci_high']:.2f}) |" in line
    assert f"| {row['peak_per_seed']} |" in line and "| 2 of 2 |" in line and "| PPO (clip_0.2) |" in line
    for heading in ("## A hacked response beside a healthy one", "## Does a reference-KL penalty move",
                    "## The proxies: reward-model accuracy", "## Where the records come from"):
        assert heading in text
    assert "| healthy | " in text and "Setting: Clipping, ε = 0.2, ref β = 0 (`clip_0.2-ref0`), seed 0." in text
    # a partial grid says so
    partial = tmp_path / "partial"
    shutil.copytree(published, partial)
    shutil.rmtree(run_dir(partial, study, study.runs()[-1]))
    assert f"**{len(study.runs()) - 1} of the scale's" in rlhf_results.build(partial, "smoke", SEEDS)
    assert rlhf_results.main(["--published", str(published), "--scale", "smoke", "--seeds", str(SEEDS),
                              "--out", str(tmp_path / "page.md")]) == 0
    assert (tmp_path / "page.md").read_text() == text


def test_the_committed_page_is_the_published_records_page():
    """docs/rlhf-results.md is what scripts/rlhf_results.py writes from published/ now (GRID_NAME=rlhf
    scripts/paper_grid.sh publish writes it again after each publish)."""
    assert rlhf_results.PAGE.read_text() == rlhf_results.build(PUBLISHED), \
        "docs/rlhf-results.md is not the published records' page: python scripts/rlhf_results.py"


@pytest.mark.integration
def test_the_pipeline_copies_published_rlhf_runs_and_trains_only_the_others(grid, published, tmp_path):
    """snakemake --config 'studies=[rlhf]' in a clone whose published/ holds the scale's runs: one copy job, no
    model build, no training, the report built; a run missing from published/ is trained (with its models)."""
    clone = copy_project(tmp_path / "clone")
    shutil.copytree(published, clone / "published")
    _, study = grid
    config = ["--config", "studies=[rlhf]", "scale=smoke", f"seeds={SEEDS}"]

    def dry_run():
        done = subprocess.run([sys.executable, "-m", "snakemake", "-n", *config], cwd=clone,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    planned = dry_run()
    assert "copy_rlhf_published" in planned and "train_rlhf" not in planned and "rlhf_models" not in planned
    report = "results/rlhf/smoke/report/rlhf_peak_final.csv"
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", report, *config], cwd=clone,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (pd.read_csv(clone / report)["n_runs"] == SEEDS).all()
    for run in study.runs():
        manifest = json.loads((run_dir(clone / "results", study, run) / "manifest.json").read_text())
        assert manifest["copied_from"]["run_dir"] == str(run_dir("published", study, run))
    assert not list((clone / "logs/rlhf/smoke").glob("train_*.log"))
    for where in ("published", "results"):  # neither published nor finished here: trained, from its models
        shutil.rmtree(run_dir(clone / where, study, study.runs()[0]))
    planned = dry_run()
    assert "train_rlhf_" in planned and "rlhf_models" in planned and "copy_rlhf_published" not in planned


def test_the_published_rlhf_runs_are_thinned_and_small():
    """Every published RLHF run is as publish writes it (its samples a fixed point of rlhf_published, its timing in
    float32) and within 40 KB (27-28 KB measured on the first full-scale runs; published/README.md), so the 300
    runs stay within 12 MB."""
    manifests = sorted((PUBLISHED / "rlhf").rglob("manifest.json"))
    for manifest in manifests:
        folder = manifest.parent
        updates, samples = (pd.read_parquet(folder / name) for name in ("updates.parquet", "samples.parquet"))
        pd.testing.assert_frame_equal(rlhf_published(samples, "samples.parquet", updates), samples)
        timing = pd.read_parquet(folder / "timing.parquet")
        assert all(timing[c].dtype == "float32" for c in timing.columns if c != "update"), folder
        size = sum(f.stat().st_size for f in folder.iterdir()) / 1e3
        assert size <= 40, f"{folder}: {size:.1f} KB, over the 40 KB an RLHF run may take"


@pytest.mark.integration
def test_repro_rlhf_published_reports_the_published_runs(tmp_path):
    """./repro rlhf-published: the study's report from published/rlhf/full alone, training nothing."""
    done = subprocess.run([str(ROOT / "repro"), "rlhf-published", "--out-dir", str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    runs = sorted((PUBLISHED / "rlhf" / "full" / "runs").rglob("manifest.json"))
    if not runs:
        assert done.returncode != 0 and "published/rlhf/full/runs" in done.stderr
        return
    assert done.returncode == 0, done.stderr[-2000:]
    assert pd.read_csv(tmp_path / "rlhf_peak_final.csv")["n_runs"].sum() == len(runs)
