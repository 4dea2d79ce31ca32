"""scripts/paper_grid.sh publishes with the code of this repository's last commit only: a watch runs for hours
beside a session's editing, and a half-edited module must not publish (or commit) anything."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUARDED = ["ppo", "analysis", "scripts", "reference", "experiments"]  # what publish and the results pages read


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def publish(repo, tmp_path):
    return subprocess.run(["bash", "scripts/paper_grid.sh", "publish"], cwd=repo, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "STUDIES": "table1", "GRID": str(tmp_path / "grid")})


def test_uncommitted_code_postpones_the_publish(tmp_path):
    repo = tmp_path / "repo"
    git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(repo))
    git(repo, "checkout", "-q", "HEAD", "--", *GUARDED)
    # the script as it is being tested, committed in the clone: the guarded code is then clean
    (repo / "scripts" / "paper_grid.sh").write_text((ROOT / "scripts" / "paper_grid.sh").read_text())
    git(repo, "commit", "-q", "--allow-empty", "-m", "as tested", "--", "scripts/paper_grid.sh")
    head = git(repo, "rev-parse", "HEAD")

    clean = publish(repo, tmp_path)  # goes on to publish: this clone has no .venv, so it fails there
    assert "postponed" not in clean.stdout and ".venv/bin/python" in clean.stderr

    with (repo / "ppo" / "__init__.py").open("a") as f:
        f.write("# being edited\n")
    edited = publish(repo, tmp_path)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.startswith("paper_grid: publish postponed: uncommitted changes to the code it runs")
    assert git(repo, "rev-parse", "HEAD") == head  # nothing committed
