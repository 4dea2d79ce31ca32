"""The pipeline's own defences against careless and hostile input (issue 17), beyond the corpus of
tests/config/test_bad_inputs.py: shell commands quote what they interpolate, nested --config values are typed,
and a killed run's stale lock is cleared only when no live Snakemake holds it."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from project_copy import copy_project

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("clear_stale_lock", ROOT / "scripts/clear_stale_lock.py")
clear_stale_lock_script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(clear_stale_lock_script)
clear_stale_lock = clear_stale_lock_script.clear_stale_lock

pytestmark = pytest.mark.integration  # runs Snakemake, SLURM or a shell command: minutes


def shell_commands() -> list[tuple[str, str]]:
    """(rule file, shell command text) for every shell: directive of the workflow."""
    found = []
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for block in re.findall(r"shell:\n((?:\s+\".*\"\n?)+)", path.read_text()):
            found.append((path.name, "".join(re.findall(r"\"(.*)\"", block))))
    return found


def test_every_shell_command_quotes_what_it_interpolates():
    commands = shell_commands()
    assert len(commands) >= 9
    for name, command in commands:
        bare = [p for p in re.findall(r"\{([^{}]*)\}", command) if not p.endswith(":q")]
        assert not bare, f"{name}: {command!r} interpolates {bare} unquoted"


@pytest.fixture
def project(tmp_path):
    return copy_project(tmp_path)


def test_nested_config_values_from_the_command_line_are_accepted(project):
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "--config",
                           "bootstrap={n_resamples: 1000, seed: 0}", "studies=[table1]", "scale=smoke"],
                          cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "--n-resamples 1000 --seed 0" in done.stdout


def test_stale_lock_is_cleared_only_without_a_live_snakemake(tmp_path):
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("results/x\n")
    # A live Snakemake in this directory (a stand-in whose command line names snakemake) keeps the lock.
    stand_in = tmp_path / "snakemake"
    stand_in.write_text("import time\ntime.sleep(60)\n")
    live = subprocess.Popen([sys.executable, str(stand_in)], cwd=tmp_path)
    try:
        time.sleep(0.2)
        message = clear_stale_lock(tmp_path)
        assert f"pid {live.pid}" in message and (locks / "0.input.lock").exists()
    finally:
        live.kill()
        live.wait()
    # Once it is gone (killed with -9: its lock stays behind), the lock is stale and removed.
    message = clear_stale_lock(tmp_path)
    assert "removed the stale lock" in message and not list(locks.iterdir())
    assert clear_stale_lock(tmp_path) is None  # nothing to do


def test_repro_clears_the_stale_lock_before_snakemake():
    text = (ROOT / "repro").read_text()
    assert text.index("scripts/clear_stale_lock.py") < text.index(".venv/bin/snakemake --cores")


def test_a_failed_report_job_leaves_the_last_good_report_in_place(project):
    """Snakemake removes a failed job's outputs; the workflow puts the last good report back (last_good.py)."""
    run = [sys.executable, "-m", "snakemake", "--cores", "2", "--config", "scale=smoke", "studies=[classic]"]
    done = subprocess.run(run, cwd=project, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = project / "results/classic/smoke/report"
    good = {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()}
    assert "table1.csv" in good and len(good) >= 10
    # the paper's values gone, its rows kept (the variants name them while planning): the report job now fails
    reference = project / "reference/ppo2017_table1.csv"
    reference.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in reference.read_text().splitlines()))
    done = subprocess.run([*run, "--forcerun", "table1_report_classic"], cwd=project, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode != 0
    assert "the last good report is kept" in done.stderr
    assert {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()} == good


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A few hundred bytes of YAML whose last alias expands to width**levels items."""
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_the_pipeline_config_is_refused_at_once(project):
    """Snakemake validated the expanded aliases for minutes (issue 30); the project's reader refuses them first."""
    config = project / "config" / "config.yaml"
    config.write_text(_alias_bomb() + config.read_text())
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=project,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and time.perf_counter() - start < 60
    assert ("invalid pipeline configuration: config/config.yaml: not valid YAML at line 2, column 10: aliases (*name) "
            "are not allowed in this project's YAML files") in done.stdout + done.stderr


def test_more_runs_than_plan_in_seconds_are_refused_at_once(project):
    """seeds=1000 planned in silence for about half an hour (22,000 runs): refused before planning."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", "seeds=1000"],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and time.perf_counter() - start < 60
    assert ("22,000 runs asked for (studies classic, config seeds/tasks/variants): more than 3,000 runs take "
            "Snakemake minutes to hours to plan") in done.stdout + done.stderr


def test_a_large_plan_says_so_before_snakemake_goes_quiet(project):
    """Below the cap, a plan of over 1,000 runs prints a line first: planning is silent for seconds to a minute."""
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", "seeds=50"],
                          cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "planning 1,100 runs: Snakemake matches each run's files against its rules" in done.stderr
    quiet = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=project,
                           capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and "planning" not in quiet.stderr.split("Building DAG")[0]
