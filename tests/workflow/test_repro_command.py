"""./repro's own checks: a bad CORES is one line and exit 2, before Snakemake starts (issue 30: CORES=0 hung,
CORES=-1 ended in a training job's traceback)."""
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs Snakemake, SLURM or a shell command: minutes

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cores", ["0", "-1", "two", "02"])
def test_a_bad_core_count_is_one_line(cores):
    done = subprocess.run([str(ROOT / "repro"), "-n"], env={**os.environ, "CORES": cores}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"error: CORES={cores} must be a whole number of cores, at least 1\n" and done.stdout == ""


def test_a_target_passes_through_to_snakemake():
    """`./repro <target>` was a 115-line usage dump (the target read as a second --logger value)."""
    done = subprocess.run([str(ROOT / "repro"), "-n", "results/classic/reduced/report/deviations.csv"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-1000:]
    assert "usage:" not in done.stderr and "deviations_classic" in done.stdout + done.stderr


def test_a_file_named_snakemake_is_one_line(tmp_path):
    """A file where Snakemake keeps its state folder was Snakemake's FileExistsError traceback (issue 30)."""
    for name in ("repro", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / ".snakemake").write_text("not a folder\n")
    done = subprocess.run([str(tmp_path / "repro"), "-n"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "error: .snakemake is a file, not Snakemake's state folder: move it away and run again\n"
