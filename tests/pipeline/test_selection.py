"""A study file's named selections (issue 29): the three Atari games are named once, in experiments/studies/atari.yaml,
and ./repro atari-three, scripts/paper_grid.sh and the front page read them there."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from ppo.pipeline.study import load_selection, load_study, main, narrowed

ROOT = Path(__file__).resolve().parents[2]
THREE = (("ALE/Pong-v5", "ALE/Breakout-v5", "ALE/BeamRider-v5"), ("atari_ppo", "atari_a2c"))


def test_the_atari_study_names_the_three_games_once():
    assert load_selection("atari", "three") == THREE == load_study("atari", "paper").selection("three")
    part = narrowed(load_study("atari", "paper"), *THREE)
    assert len(part.runs()) == 18  # 3 games x 2 algorithms x 3 seeds


def test_the_shell_commands_read_the_selection(capsys):
    assert main(["--study", "atari", "--selection", "three", "--print", "tasks", "variants", "--as-config"]) == 0
    assert capsys.readouterr().out == ("tasks=[ALE/Pong-v5,ALE/Breakout-v5,ALE/BeamRider-v5]\n"
                                       "variants=[atari_ppo,atari_a2c]\n")
    assert main(["--study", "atari", "--selection", "three", "--print", "tasks"]) == 0
    assert capsys.readouterr().out == "ALE/Pong-v5 ALE/Breakout-v5 ALE/BeamRider-v5\n"
    assert main(["--study", "atari", "--selection", "four", "--print", "tasks"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1
    assert "studies/atari.yaml: field selections has no selection 'four' (it has ['three'])" in said
    # no shell script names a game itself
    for script in ("repro", "scripts/paper_grid.sh", "workflow/scripts/front_page.py"):
        text = (ROOT / script).read_text()
        assert "--selection three" in text or 'selection("three")' in text, script
        assert "ALE/Pong-v5" not in text and "BeamRider\"" not in text, script


@pytest.mark.integration  # runs a shell script
def test_the_atari_grid_s_status_counts_the_selection_s_runs(tmp_path):
    """scripts/paper_grid.sh GRID_NAME=atari status: the selection's 3 games x 2 algorithms x 3 seeds."""
    done = subprocess.run([str(ROOT / "scripts/paper_grid.sh"), "status"], cwd=ROOT,
                          env={**os.environ, "GRID_NAME": "atari", "GRID": str(tmp_path / "no-grid")},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^atari: \d+ of 18 runs published", done.stdout, re.MULTILINE), done.stdout
