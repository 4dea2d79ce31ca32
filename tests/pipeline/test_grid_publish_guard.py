"""scripts/paper_grid.sh publishes with the code of this repository's last commit only: a watch runs for hours
beside a session's editing, and a half-edited module must not publish (or commit) anything."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUARDED = ["ppo", "analysis", "scripts", "reference", "experiments"]  # what publish and the results pages read


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


def test_a_watch_publishes_once_more_after_its_grid_has_stopped(tmp_path):
    """Runs that finish after the watch's last round would wait for someone to publish them: a watch whose grid
    is not running (here: never started) still tries once, then returns."""
    repo = clone(tmp_path)
    with (repo / "ppo" / "__init__.py").open("a") as f:
        f.write("# being edited\n")  # the attempt is then visible without a .venv: postponed
    watched = publish(repo, tmp_path, "watch", "0")
    assert watched.returncode == 0, watched.stderr
    assert watched.stdout.splitlines() == ["paper_grid: publish postponed: uncommitted changes to the code it runs "
                                           "(git diff HEAD -- ppo analysis scripts reference experiments)"]
