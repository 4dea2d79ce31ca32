"""scripts/paper_grid.sh publishes with the code of this repository's last commit only: a watch runs for hours
beside a session's editing, and a half-edited module must not publish (or commit) anything."""
import subprocess

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what publish and the results pages read, and README.md, whose seeds summary the ten-seed grid writes
GUARDED = ["ppo", "analysis", "scripts", "reference", "experiments", "workflow/scripts", "README.md"]


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def publish(repo, tmp_path, *command):
    return subprocess.run(["bash", "scripts/paper_grid.sh", *(command or ["publish"])], cwd=repo, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "STUDIES": "table1", "GRID": str(tmp_path / "grid")},
                          timeout=60)


def clone(tmp_path):
    """A clone of this repository's guarded code, with the script as it is being tested committed: clean."""
    repo = tmp_path / "repo"
    git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(repo))
    git(repo, "checkout", "-q", "HEAD", "--", *GUARDED)
    (repo / "scripts" / "paper_grid.sh").write_text((ROOT / "scripts" / "paper_grid.sh").read_text())
    git(repo, "commit", "-q", "--allow-empty", "-m", "as tested", "--", "scripts/paper_grid.sh")
    return repo


def test_uncommitted_code_postpones_the_publish(tmp_path):
    repo = clone(tmp_path)
    head = git(repo, "rev-parse", "HEAD")

    clean = publish(repo, tmp_path)  # goes on to publish: this clone has no .venv, so it fails there
    assert "postponed" not in clean.stdout and ".venv/bin/python" in clean.stderr

    with (repo / "ppo" / "__init__.py").open("a") as f:
        f.write("# being edited\n")
    edited = publish(repo, tmp_path)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.startswith("paper_grid: publish postponed: uncommitted changes to the code it runs")
    assert git(repo, "rev-parse", "HEAD") == head  # nothing committed

    git(repo, "checkout", "-q", "HEAD", "--", "ppo")
    with (repo / "README.md").open("a") as f:
        f.write("being edited\n")  # a publish would commit it with the seeds summary
    assert publish(repo, tmp_path).stdout.startswith("paper_grid: publish postponed")
    assert git(repo, "rev-parse", "HEAD") == head


def test_a_watch_publishes_once_more_after_its_grid_has_stopped(tmp_path):
    """Runs that finish after the watch's last round would wait for someone to publish them: a watch whose grid
    is not running (here: never started) still tries once, then returns."""
    repo = clone(tmp_path)
    with (repo / "ppo" / "__init__.py").open("a") as f:
        f.write("# being edited\n")  # the attempt is then visible without a .venv: postponed
    watched = publish(repo, tmp_path, "watch", "0")
    assert watched.returncode == 0, watched.stderr
    assert watched.stdout.splitlines() == ["paper_grid: publish postponed: uncommitted changes to the code it runs "
                                           "or the README it writes (git diff HEAD -- ppo analysis scripts reference experiments "
                                           "workflow/scripts README.md)"]


def _watch_while_a_grid_runs(repo, tmp_path, carry_every):
    """The lines of a watch (rounds every 0 minutes) during 3 s of a stand-in grid: a sleeping process in its own
    session, named by grid.pid as paper_grid.sh's `start` names its Snakemake."""
    grid = tmp_path / "grid"
    grid.mkdir(exist_ok=True)
    # started by a shell that exits at once: not this process's child, so nothing here leaves it a zombie that pgrep
    # would still count as running
    stand_in = subprocess.run(["bash", "-c", "setsid sleep 3 > /dev/null 2>&1 & echo $!"], capture_output=True,
                              text=True, check=True).stdout.strip()
    (grid / "grid.pid").write_text(stand_in)
    env = {"PATH": "/usr/bin:/bin", "STUDIES": "table1", "GRID": str(grid)} | (
        {"CARRY_EVERY": carry_every} if carry_every is not None else {})
    watched = subprocess.run(["bash", "scripts/paper_grid.sh", "watch", "0"], cwd=repo, capture_output=True, text=True,
                             env=env, timeout=60)
    assert watched.returncode == 0, watched.stderr
    return watched.stdout.splitlines()


def test_a_watch_carries_every_carry_every_minutes_while_its_grid_runs(tmp_path):
    """CARRY_EVERY=MIN: the watch commits the unfinished runs' checkpoints as well (here every 0 minutes: every
    round); the clone has no .venv, so each carry's attempt shows as its failure to start Python."""
    repo = clone(tmp_path)
    with (repo / "ppo" / "__init__.py").open("a") as f:
        f.write("# being edited\n")  # every publish postponed: one known line per round
    postponed = "paper_grid: publish postponed"
    plain = _watch_while_a_grid_runs(repo, tmp_path, None)
    assert plain and all(line.startswith(postponed) for line in plain)  # no carry without CARRY_EVERY
    carrying = _watch_while_a_grid_runs(repo, tmp_path, "0")
    carries = [line for line in carrying if not line.startswith(postponed)]
    assert carries and all(".venv/bin/python" in line for line in carries)
    # no carry after the grid stopped: the last round (publish once more) ends the watch
    assert carrying[-1].startswith(postponed)
    hourly = _watch_while_a_grid_runs(repo, tmp_path, "60")
    assert all(line.startswith(postponed) for line in hourly)  # 3 s is not 60 minutes
    # not a whole number of minutes: refused at once (bash arithmetic would fail every round and never carry)
    refused = subprocess.run(["bash", "scripts/paper_grid.sh", "watch", "0"], cwd=repo, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "STUDIES": "table1", "GRID": str(tmp_path / "grid"),
                                  "CARRY_EVERY": "1.5"}, timeout=60)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip() == "paper_grid: CARRY_EVERY is a whole number of minutes, not 1.5"


STUB_PYTHON = """#!/bin/bash
# stands in for .venv/bin/python: the publish copies one run; the page script does what $PAGE_SCRIPT says
case "$*" in
  *ppo.pipeline.publish*) mkdir -p published/table1 && echo run > published/table1/new_run && echo "published 1 runs" ;;
  *seeds_results.py*) echo "half-written block" >> README.md
                      if [ "$PAGE_SCRIPT" = fails ]; then exit 1; fi
                      echo page > docs/seeds-results.md ;;
  *results_page.py\ --check*) echo "results_page: docs/paper-results/README.md: left behind" >&2; exit 1 ;;
  *) exit 2 ;;
esac
"""


@pytest.mark.parametrize("page_script", ["writes", "fails"])
def test_a_page_that_cannot_be_written_never_holds_back_the_runs(tmp_path, page_script):
    """The ten-seed grid's publish writes docs/seeds-results.md and README's summary with the runs (RESULTS_PAGE): when
    that script fails, the runs are still committed, with the page and README as they were and a commit message and a
    line saying so (tests/pipeline/test_seeds_results.py then fails until the page is written again)."""
    repo = clone(tmp_path)
    venv = repo / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text(STUB_PYTHON)
    (venv / "python").chmod(0o755)
    git(repo, "checkout", "-q", "HEAD", "--", "docs/seeds-results.md")
    readme, page = (repo / "README.md").read_text(), (repo / "docs" / "seeds-results.md").read_text()
    done = subprocess.run(["bash", "scripts/paper_grid.sh", "publish"], cwd=repo, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "STUDIES": "table1", "SEEDS": "10", "GRID": str(tmp_path / "grid"),
                               "PAGE_SCRIPT": page_script, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}, timeout=60)
    assert done.returncode == 0, done.stderr
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert "published/table1/new_run" in committed
    assert git(repo, "status", "--porcelain", "--", "published", "README.md", "docs/seeds-results.md") == ""
    # then which committed results page the publish left behind (scripts/results_page.py --check), never an error
    assert done.stdout.rstrip().endswith("results_page: docs/paper-results/README.md: left behind")
    message = git(repo, "log", "-1", "--format=%s")
    if page_script == "writes":
        assert "README.md" in committed and "docs/seeds-results.md" in committed
        assert message == "published: table1 runs, and docs/seeds-results.md written again from them\n"
    else:
        assert "README.md" not in committed and "docs/seeds-results.md" not in committed
        assert (repo / "README.md").read_text() == readme and (repo / "docs" / "seeds-results.md").read_text() == page
        assert "NOT written again: scripts/seeds_results.py failed" in message
        assert "the runs are committed without it" in done.stderr
