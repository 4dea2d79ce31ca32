"""The MuJoCo and the Atari paper scales are separate commands: a study list with Atari at scale=paper is
refused before planning anything, and the MuJoCo command plans no Atari run."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--directory", str(ROOT), "--snakefile",
             str(ROOT / "workflow" / "Snakefile"), "-n", "--quiet", "rules"]


def test_atari_in_a_list_of_studies_at_paper_scale_is_refused():
    done = subprocess.run([*SNAKEMAKE, "--config", "studies=[table1,figure3,atari]", "scale=paper"],
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr  # Snakemake prints a WorkflowError on stdout
    assert done.returncode != 0
    assert "Atari at paper scale is 441 runs" in said and "studies=[table1,figure3]" in said


def test_mujoco_paper_scale_plans_no_atari_run():
    # --forceall: the plan must not depend on which paper-scale runs are already published in results/
    done = subprocess.run([*SNAKEMAKE, "--forceall", "--config", "studies=[table1,figure3]", "scale=paper"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # a published paper-scale run is planned as a copy, an unpublished one as training: either counts
    for task in ("HalfCheetah", "Hopper", "InvertedDoublePendulum", "InvertedPendulum", "Reacher",
                 "Swimmer", "Walker2d"):
        assert re.search(rf"^(train|copy)_table1_{task}-", done.stdout, re.MULTILINE), task
    assert "atari" not in done.stdout
