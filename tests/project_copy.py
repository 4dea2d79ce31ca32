"""A copy of the project for a test that runs the pipeline: the files the pipeline reads (``copy_project``), or with
the smoke pipeline of the MuJoCo and Atari studies run in it (``run_smoke_pipeline``, run once per session by
tests/workflow/conftest.py's fixture ``smoke_pipeline``: running it is most of the time of the tests that read it)."""
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what a user's clone has that the pipeline reads (not published/, docs/ or tests/)
PROJECT_FILES = ("workflow", "config", "experiments", "reference", "profiles", "ppo", "analysis")
# The MuJoCo and Atari studies (the default, studies=[classic], is tested in tests/envs/test_classic_control.py)
SMOKE_CONFIG = ("--config", "scale=smoke", "studies=[table1,figure3,atari]")


def copy_project(dest: Path) -> Path:
    """The project's files that the pipeline reads (PROJECT_FILES), copied into ``dest``."""
    for name in PROJECT_FILES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@dataclass(frozen=True)
class SmokePipeline:
    project: Path  # a project where the smoke pipeline ran and `snakemake --report report.html` wrote its report
    run: subprocess.CompletedProcess  # the pipeline's run (its return code, stdout, stderr)

    def copy(self, dest: Path) -> Path:
        """A copy of the finished project for a module that changes it: files, Snakemake's metadata and mtimes
        as they were, so Snakemake sees the same finished pipeline there."""
        shutil.copytree(self.project, dest, symlinks=True)
        return dest


def run_smoke_pipeline(project: Path) -> SmokePipeline:
    """The smoke pipeline run in ``project`` (a copy_project), then its report written, when it succeeded."""
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *SMOKE_CONFIG], cwd=project,
                         capture_output=True, text=True, timeout=900)
    if run.returncode == 0:  # a failed pipeline has no report; the tests then say why from `run`
        report = subprocess.run([sys.executable, "-m", "snakemake", "--report", "report.html", *SMOKE_CONFIG],
                                cwd=project, capture_output=True, text=True, timeout=900)
        assert report.returncode == 0, report.stderr[-3000:]
    return SmokePipeline(project, run)
