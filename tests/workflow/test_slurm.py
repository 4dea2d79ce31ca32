"""The pipeline on a real SLURM cluster: a one-node cluster started by scripts/slurm_cluster.sh (munge,
slurmctld, slurmd, slurmdbd, MariaDB), the Snakemake SLURM executor plugin, and profiles/slurm unchanged (one more
retry given on the command line, for the cluster's known flake: CLUSTER_FLAKE).
The smoke study's training jobs run as SLURM jobs; one is cancelled with scancel after its first
checkpoint, resubmitted by the profile's retries and resumed from the checkpoint."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from project_copy import copy_project

from ppo.pipeline.study import load_study

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts/slurm_cluster.sh"
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
NEEDED = ("munged", "mungekey", "slurmctld", "slurmd", "slurmdbd", "sbatch", "squeue", "scancel", "sacct",
          "sacctmgr", "mariadbd", "mariadb-install-db")
MISSING = [b for b in NEEDED if shutil.which(b, path=SEARCH_PATH) is None]
pytestmark = [pytest.mark.integration, pytest.mark.skipif(
    bool(MISSING), reason=f"SLURM is not installed (missing {', '.join(MISSING)}); "
                          "`scripts/slurm_cluster.sh install` or .ci/run installs it")]

STUDY, SCALE = "table1", "smoke"
# The shorter of the smoke study's two training jobs: its retry overlaps the other job, saving a minute.
CANCELLED_TASK = "InvertedPendulum-v5"
# A flake of this one-node test cluster under load (seen once, 2026-11-27, in CI beside three grids): the
# resubmitted job's own srun is told its allocation does not exist and the job fails before running anything.
# The test gives Snakemake one more retry than the profile does, and accepts a failed attempt only with this line
# in its SLURM log; the cancellation, the retry and the resume are asserted as before.
CLUSTER_FLAKE = "Unable to confirm allocation for job"


def recorded_daemons(state: Path) -> dict[int, str]:
    pids = state / "run/pids"
    if not pids.exists():
        return {}
    return {int(pid): name for name, pid in (line.split() for line in pids.read_text().splitlines() if line)}


def is_running(pid: int, name: str) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == name[:15]
    except OSError:
        return False


@pytest.fixture(scope="module")
def cluster():
    """Environment for SLURM clients and Snakemake; the cluster is stopped afterwards, whatever happened."""
    # Not under pytest's tmp_path, whose parent is private: munged wants every user able to reach its socket.
    state = Path(tempfile.mkdtemp(prefix="ppo-slurm-"))
    state.chmod(0o755)
    env = {**os.environ, "SLURM_CLUSTER_DIR": str(state), "PATH": SEARCH_PATH}
    started = subprocess.run([str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=300)
    daemons = recorded_daemons(state)
    try:
        assert started.returncode == 0, started.stdout + started.stderr[-4000:]
        assert sorted(daemons.values()) == sorted(["munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"])
        env["SLURM_CONF"] = str(state / "etc/slurm.conf")
        status = subprocess.run([str(SCRIPT), "status"], env=env, capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and "idle" in status.stdout, status.stdout + status.stderr
        yield env
    finally:
        stopped = subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=300)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        left = {pid: name for pid, name in daemons.items() if is_running(pid, name)}
        assert not left, f"still running after stop: {left}"
        assert not Path("/etc/slurm/slurm.conf").is_symlink() or \
            Path(os.readlink("/etc/slurm/slurm.conf")) != state / "etc/slurm.conf"
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return copy_project(tmp_path_factory.mktemp("project"))


def slurm(env, *args) -> str:
    return subprocess.run(list(args), env=env, capture_output=True, text=True, check=True, timeout=60).stdout


def job_fields(log: str, rule: str) -> dict[str, str]:
    """The fields (output, log, resources, ...) Snakemake printed for the first job of ``rule``."""
    lines = log[log.index(f"rule {rule}:"):].splitlines()[1:]
    fields = {}
    for line in lines:
        if not line.startswith(" "):
            break
        key, _, value = line.strip().partition(": ")
        fields.setdefault(key, value)
    return fields


def test_smoke_training_on_slurm_survives_scancel(cluster, project):
    study = load_study(STUDY, SCALE)
    run_dirs = [project / f"results/{STUDY}/{SCALE}/runs/{r.task}/{r.variant.name}/seed{r.seed}" for r in study.runs()]
    cancelled_runs = [d for d in run_dirs if d.parts[-3] == CANCELLED_TASK]
    assert cancelled_runs and len(cancelled_runs) < len(run_dirs)
    # group_size=0: one training job per task; a job's SLURM comment names its rule
    (group_id,) = [g.group_id for g in study.groups(0) if g.task == CANCELLED_TASK]
    targets = [str(d.relative_to(project) / "manifest.json") for d in run_dirs]
    output = project / "snakemake.out"
    started = time.time()
    with output.open("w") as out:
        pipeline = subprocess.Popen(
            [sys.executable, "-m", "snakemake", *targets, "--profile", "profiles/slurm",
             "--config", f"studies=[{STUDY}]", f"scale={SCALE}", "group_size=0", "checkpoint_every=1", "checkpoint_seconds=0",
             "--retries", "2"],
            cwd=project, env=cluster, stdout=out, stderr=subprocess.STDOUT)
    try:
        # Cancel the training job right after its first checkpoint (the smoke scale has 2 updates).
        checkpoints = project / f"results/{STUDY}/{SCALE}/checkpoints"
        while not list(checkpoints.glob(f"{CANCELLED_TASK}-*.pt")):
            assert pipeline.poll() is None, output.read_text()[-4000:]
            assert time.time() - started < 300, "no checkpoint within 300 s"
            time.sleep(0.05)
        queue = slurm(cluster, "squeue", "-h", "-o", "%i|%k|%T")
        jobs = [line.split("|") for line in queue.splitlines()]
        victim = [(job, comment) for job, comment, state in jobs
                  if comment.startswith("rule_train") and comment.endswith(group_id) and state == "RUNNING"]
        assert len(victim) == 1, queue
        victim_id, rule = victim[0][0], victim[0][1].removeprefix("rule_")
        slurm(cluster, "scancel", victim_id)
        assert not any((d / "manifest.json").exists() for d in cancelled_runs), "the job ended before scancel"
        try:
            pipeline.wait(timeout=600 - (time.time() - started))
        except subprocess.TimeoutExpired:
            pytest.fail("the pipeline did not finish within 600 s:\n" + output.read_text()[-4000:])
    finally:
        if pipeline.poll() is None:
            pipeline.kill()
            pipeline.wait()
    log = output.read_text()
    assert pipeline.returncode == 0, log[-6000:]

    # SLURM saw the job cancelled, then a second job for the same rule that completed.
    history = [line.split("|") for line in slurm(
        cluster, "sacct", "-X", "-n", "-P", "-S", "2020-01-01", "-o", "JobID,Comment,State,TimelimitRaw,ReqMem").splitlines()]
    attempts = [h for h in history if h[1] == f"rule_{rule}"]
    assert attempts and attempts[0][0] == victim_id, history
    states = [h[2].split()[0] for h in attempts]
    assert states[0] == "CANCELLED" and states[-1] == "COMPLETED", history
    for job_id, _, state, *_ in attempts[1:-1]:  # only the cluster's known flake may fail an attempt between
        slurm_log = next(project.glob(f".snakemake/slurm_logs/**/{job_id}.log"), None)
        assert state.startswith("FAILED") and slurm_log and CLUSTER_FLAKE in slurm_log.read_text(), history
        print(f"SLURM job {job_id} failed with the test cluster's known flake ({CLUSTER_FLAKE!r}); retried")
    assert "SLURM status is: 'CANCELLED'" in log and "Trying to restart job" in log
    # The rule's resources reached SLURM.
    job = job_fields(log, rule)
    declared = dict(item.split("=", 1) for item in job["resources"].split(", "))
    assert all(h[3] == declared["runtime"] and h[4] == f"{declared['mem_mb']}M" for h in attempts), (declared, attempts)

    # The retry resumed from the cancelled job's checkpoint and finished; the checkpoint is gone.
    train_log = (project / job["log"].split(",")[0]).read_text()
    assert re.search(rf"resumed from \S*checkpoints/{CANCELLED_TASK}-\w+\.pt", train_log), train_log
    assert not list(checkpoints.glob("*.pt"))
    # Every run of the study has its records.
    for d in run_dirs:
        manifest = json.loads((d / "manifest.json").read_text())
        assert manifest["config_digest"] and (d / "episodes.parquet").exists() and (d / "updates.parquet").exists()
    print(f"pipeline on SLURM: {time.time() - started:.0f} s")
