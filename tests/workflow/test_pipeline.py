"""The Snakemake pipeline end to end at the smoke scale, in a copy of the project."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from project_copy import SMOKE_CONFIG

pytestmark = pytest.mark.integration  # runs Snakemake, SLURM or a shell command: minutes

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]



@pytest.fixture(scope="module")
def project(smoke_pipeline, tmp_path_factory):
    """A copy of the session's finished smoke pipeline: this module's tests change their project."""
    return smoke_pipeline.copy(tmp_path_factory.mktemp("pipeline") / "project")


def snakemake(project, *args):
    return subprocess.run([*SNAKEMAKE, "--cores", "2", *SMOKE_CONFIG, *args],
                          cwd=project, capture_output=True, text=True, timeout=900)


def test_smoke_pipeline_produces_the_report(smoke_pipeline, project):
    assert smoke_pipeline.run.returncode == 0, smoke_pipeline.run.stderr[-3000:]
    report = project / "results/table1/smoke/report"
    table = pd.read_csv(report / "table1.csv")
    assert len(table) == 11 and table["published"].notna().all()
    assert table["ours"].notna().all()
    manifest = json.loads((project / "results/table1/smoke/runs/Hopper-v5/clip_0.2/seed0/manifest.json").read_text())
    for key in ("config", "derived_seeds", "packages", "git", "host", "env_protocol", "env_version"):
        assert key in manifest
    assert manifest["config"]["ppo"]["objective"]["clip_epsilon"] == 0.2 and manifest["env_version"] == "v5"
    assert "SMOKE" in (report / "table1.md").read_text()  # the reduced budget is stated in the table
    # Figure 3's PPO runs are Table 1's clip 0.2 runs, copied rather than trained a second time.
    original = "results/table1/smoke/runs/Hopper-v5/clip_0.2/seed0"
    copied = project / "results/figure3/smoke/runs/Hopper-v5/clip_0.2/seed0"
    assert json.loads((copied / "manifest.json").read_text())["copied_from"]["run_dir"] == original
    assert (copied / "episodes.parquet").read_bytes() == (project / original / "episodes.parquet").read_bytes()
    # one copy job for the study's shared runs (workflow/rules/train.smk), naming each run it copied
    copied_log = (project / "logs/figure3/smoke/copy_from_table1.log").read_text()
    assert f"copied {original} to results/figure3/smoke/runs/Hopper-v5/clip_0.2/seed0" in copied_log
    assert copied_log.count("copied ") == 2  # and InvertedPendulum's
    assert not list((project / "logs/figure3/smoke").glob("train_*-ppo-*.log"))
    # Nothing left to do on a second invocation.
    again = subprocess.run([*SNAKEMAKE, "-n", *SMOKE_CONFIG], cwd=project, capture_output=True, text=True)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_bad_experiment_file_stops_the_plan_and_keeps_results(project):
    variant = project / "experiments/variants/clip_0.2.yaml"
    original = variant.read_text()
    finished = project / "results/table1/smoke/runs/Hopper-v5/clip_0.2/seed0/episodes.parquet"
    assert finished.exists()  # from the previous test
    try:
        variant.write_text(original.replace("clip_epsilon: 0.2", "clip_epsilon: -1"))
        failed = snakemake(project)
        assert failed.returncode != 0
        message = failed.stdout + failed.stderr
        assert "clip_0.2.yaml" in message and "clip_epsilon" in message
        assert finished.exists()
    finally:
        variant.write_text(original)


def planned_training(project, *config):
    """Run directories the dry-run would train, read from the plans (ppo.pipeline.plan) its
    `python -m ppo.pipeline.job --plan` shell commands give the jobs."""
    plan = subprocess.run([*SNAKEMAKE, "-n", "-p", *SMOKE_CONFIG, *config], cwd=project,
                          capture_output=True, text=True)
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-2000:]
    dirs = set()
    for line in plan.stdout.splitlines():
        if "-m ppo.pipeline.job" in line:
            job = json.loads((project / line.split("--plan ")[1].split()[0]).read_text())
            if job["job"] == "train":  # copies are not training
                dirs |= {run["folder"] for run in job["runs"]}
    return dirs


def test_regrouping_retrains_nothing_and_a_new_variant_trains_only_its_runs(project):
    assert planned_training(project, "group_size=1") == set()
    assert planned_training(project, "group_size=3") == set()
    assert planned_training(project, "tracking=wandb") == set()  # tracking only replays finished records
    # An edited variant re-trains its runs alone, although their records exist: their job's plan is rewritten,
    # newer than them (Snakemake's mtime trigger); put back, nothing is left to train.
    edited = project / "experiments/variants/clip_0.3.yaml"
    original = edited.read_text()
    try:
        edited.write_text("label: eps 0.3, 9 epochs\npreset: ppo_mujoco_paper\n"
                          "overrides: {ppo: {objective: {clip_epsilon: 0.3}, epochs: 9}}\n")
        assert planned_training(project) == {f"results/table1/smoke/runs/{task}/clip_0.3/seed0"
                                             for task in ("InvertedPendulum-v5", "Hopper-v5")}
    finally:
        edited.write_text(original)
    assert planned_training(project) == set()
    new = project / "experiments/variants/clip_0.4.yaml"
    new.write_text("label: eps 0.4\npreset: ppo_mujoco_paper\noverrides: {ppo: {objective: {clip_epsilon: 0.4}}}\n")
    try:
        planned = planned_training(project)
        assert planned == {f"results/table1/smoke/runs/{task}/clip_0.4/seed0"
                           for task in ("InvertedPendulum-v5", "Hopper-v5")}
        # More seeds: only the new seed's runs.
        new.unlink()
        planned = planned_training(project, "seeds=2")
        assert planned and all(d.endswith("/seed1") for d in planned)
    finally:
        new.unlink(missing_ok=True)


def test_a_fresh_clone_with_published_runs_trains_nothing(project, tmp_path):
    """The project's published runs (ppo.pipeline.publish) stand for training: a clone without results plans only
    copies of them and builds the report; a run missing from published/ is trained."""
    from ppo.pipeline.publish import publish
    from ppo.pipeline.study import load_study

    clone = tmp_path / "clone"
    shutil.copytree(project, clone, ignore=shutil.ignore_patterns("results", ".snakemake", "logs"))
    studies = [load_study("table1", "smoke"), load_study("figure3", "smoke")]
    added = publish([project], clone / "published", studies)
    assert len(added) == 22 + 10  # Table 1's 11 settings and Figure 3's 5 baselines on 2 tasks, 1 seed
    mujoco = "studies=[table1,figure3]"
    assert planned_training(clone, mujoco) == set()
    done = snakemake(clone, mujoco)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (clone / "results/table1/smoke/report/table1.csv").exists()
    assert not list((clone / "logs").glob("*/smoke/train_*.log"))
    copied = json.loads((clone / "results/table1/smoke/runs/Hopper-v5/clip_0.2/seed0/manifest.json").read_text())
    assert copied["copied_from"]["run_dir"] == "published/table1/smoke/runs/Hopper-v5/clip_0.2/seed0"
    for root in ("published", "results"):  # a run neither published nor finished here is trained
        shutil.rmtree(clone / root / "table1/smoke/runs/Hopper-v5/no_clip")
    assert planned_training(clone, mujoco) == {"results/table1/smoke/runs/Hopper-v5/no_clip/seed0"}


def test_an_edited_analysis_or_reference_rebuilds_the_reports_and_trains_nothing(project):
    """The reports' code and the published numbers they read are inputs of the report jobs (report_code in
    workflow/rules/analysis.smk): an edit re-runs the reports, never training. Put back (content and mtime), nothing
    is left to do. Last in this module: it leaves the finished pipeline as it found it."""
    for relative in ("analysis/table1.py", "reference/ppo2017_table1.csv"):
        path = project / relative
        original, stat = path.read_bytes(), path.stat()
        try:
            path.write_bytes(original + b"\n")
            plan = subprocess.run([*SNAKEMAKE, "-n", *SMOKE_CONFIG], cwd=project, capture_output=True, text=True)
            assert plan.returncode == 0, plan.stderr[-3000:]
            assert "rule table1_report_table1:" in plan.stdout and "rule front_page:" in plan.stdout, relative
            assert "rule train_" not in plan.stdout and "rule copy_" not in plan.stdout, relative
        finally:
            path.write_bytes(original)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = subprocess.run([*SNAKEMAKE, "-n", *SMOKE_CONFIG], cwd=project, capture_output=True, text=True)
    assert "Nothing to be done" in again.stdout + again.stderr
