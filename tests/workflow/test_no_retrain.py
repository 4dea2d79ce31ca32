"""Results made by the code before the jobs' plans (issue 29) carry on under today's: a finished run is not trained
again, and a group killed after a checkpoint resumes from it. The long-running grids (scripts/paper_grid.sh) are
restarted at a new revision from their checkpoints with Snakemake's rerun triggers mtime, params, input and
software-env; a job that gains an input (its plan) or loses parameters must not retrain a finished run."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from project_copy import PROJECT_FILES, copy_project
from killing import sigkill_after_first_checkpoint

pytestmark = pytest.mark.integration  # runs Snakemake: about 2 minutes on 2 busy cores

ROOT = Path(__file__).resolve().parents[2]
# The last revision whose training job re-resolved the study and parsed its output paths (--digests).
BEFORE_PLANS = "b44fcc15a9045435c2155595e3ed36b991b30663"
GRID_FLAGS = ["--rerun-triggers", "mtime", "params", "input", "software-env", "--rerun-incomplete"]  # paper_grid.sh's
CONFIG = ["--config", "scale=smoke", "studies=[table1]", "tasks=[InvertedPendulum-v5]"]
RUNS = "results/table1/smoke/runs/InvertedPendulum-v5"
FINISHED = ("clip_0.2", "no_clip")


def snakemake(project, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *GRID_FLAGS, *args], cwd=project,
                          capture_output=True, text=True, timeout=timeout)


def checkout(rev, dest):
    """The project's code at ``rev`` (``None``: the working tree) in ``dest``, whose results stay."""
    for name in PROJECT_FILES:
        shutil.rmtree(dest / name, ignore_errors=True)
    if rev is None:
        copy_project(dest)
        return
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *PROJECT_FILES], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def kill_after_first_checkpoint(project, targets):
    """Snakemake (and its job) killed with SIGKILL once the job has written its first checkpoint."""
    pipeline = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", *targets, *CONFIG,
                                 "checkpoint_every=1"], cwd=project, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return sigkill_after_first_checkpoint(pipeline, project / "results/table1/smoke/checkpoints", 300, group=True)


def train_jobs(dry_run):
    return [line.split()[1].rstrip(":") for line in dry_run.stdout.splitlines() if line.startswith("rule train_")]


def test_finished_runs_are_not_retrained_and_a_checkpointed_group_resumes(tmp_path):
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{BEFORE_PLANS}^{{commit}}"],
                      capture_output=True).returncode:
        pytest.skip(f"revision {BEFORE_PLANS[:10]} is not in this repository (a shallow clone or an export)")
    project = tmp_path / "grid"
    project.mkdir()
    checkout(BEFORE_PLANS, project)
    # Before: two runs finished, then the task's other nine started as one group and killed after a checkpoint.
    done = snakemake(project, *[f"{RUNS}/{v}/seed0/manifest.json" for v in FINISHED], *CONFIG,
                     f"variants=[{','.join(FINISHED)}]")
    assert done.returncode == 0, done.stderr[-3000:]
    finished = {v: {f: (project / RUNS / v / "seed0" / f).read_bytes() for f in ("episodes.parquet", "manifest.json")}
                for v in FINISHED}
    checkpoints = kill_after_first_checkpoint(project, [f"{RUNS}/clip_0.3/seed0/manifest.json"])
    assert len(checkpoints) == 1, "no checkpoint was written before the kill"
    assert not (project / RUNS / "clip_0.3/seed0/manifest.json").exists(), "the group finished before the kill"
    subprocess.run([sys.executable, "-m", "snakemake", "--unlock", "--cores", "1"], cwd=project, check=True,
                   capture_output=True)

    checkout(None, project)  # today's code, over the same results and Snakemake state
    # The finished runs: no job (Snakemake's whole plan for them, reports included, trains nothing).
    only_finished = snakemake(project, "-n", *CONFIG, f"variants=[{','.join(FINISHED)}]")
    assert only_finished.returncode == 0, only_finished.stderr[-3000:]
    assert train_jobs(only_finished) == [] and "rule table1_report_table1" in only_finished.stdout
    # The whole task: one job, the killed group's, whose plan's checkpoint is the one the old job left.
    whole = snakemake(project, "-n", *CONFIG)
    assert train_jobs(whole) == ["train_table1_InvertedPendulum-ppo-0"], whole.stdout[-3000:]
    plan_file = next((project / "results/table1/smoke/plans").glob("train_InvertedPendulum-ppo-0-*.json"))
    plan = json.loads(plan_file.read_text())
    assert len(plan["runs"]) == 9 and not {r["variant"] for r in plan["runs"]} & set(FINISHED)
    assert plan_file.stem.rsplit("-", 1)[1] == checkpoints[0].stem.rsplit("-", 1)[1]  # the same group key
    mtime = plan_file.stat().st_mtime_ns
    resumed = snakemake(project, f"{RUNS}/clip_0.3/seed0/manifest.json", *CONFIG)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert plan_file.stat().st_mtime_ns == mtime  # planned again with the same content: not rewritten
    log = (project / f"logs/table1/smoke/{plan_file.stem}.log").read_text()  # named like its plan: these runs
    assert f"resumed from {checkpoints[0].relative_to(project)} at iteration 2" in log, log
    assert not checkpoints[0].exists()  # deleted once every record is written
    # Afterwards nothing is left to train, and the finished runs were never touched.
    assert train_jobs(snakemake(project, "-n", *CONFIG)) == []
    for variant, files in finished.items():
        for name, data in files.items():
            assert (project / RUNS / variant / "seed0" / name).read_bytes() == data, f"{variant}/{name} changed"
