"""ppo.pipeline.remote plans the pipeline's own training groups and trains them without Snakemake."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ppo.pipeline.remote import plan, run
from ppo.pipeline.study import is_current, load_study, plan_groups


def test_plan_is_the_pipelines_plan(tmp_path):
    studies = [load_study("table1", "smoke"), load_study("figure3", "smoke")]
    lines = plan(["table1", "figure3"], "smoke", 3, [], tmp_path / "results")
    expected = plan_groups(studies, 3, tmp_path / "results", Path("published"))
    assert len(lines) == len(expected)
    planned = {}
    for line in lines:
        study, job, job_plan = line.split("\t")
        planned[(study, job)] = json.loads(job_plan)
    for study, group in expected:
        job = planned[(study.name, f"train_{group.group_id}")]
        assert job["job"] == "train" and job["study"] == study.name and job["scale"] == "smoke"
        assert [r["folder"] for r in job["runs"]] == [
            str(tmp_path / "results" / study.name / "smoke" / "runs" / r.task / r.variant.name / f"seed{r.seed}")
            for r in group.runs]
        assert [r["config_digest"] for r in job["runs"]] == [r.config_digest for r in group.runs]
    assert all(line.startswith("figure3\t") for line in plan(["table1", "figure3"], "smoke", 3, ["figure3"],
                                                               tmp_path / "results"))


def test_plan_takes_the_pipelines_seeds(tmp_path):
    """The ten-seed grid's `seeds=10` (issue 31): the same seeds as the pipeline would train, each run once."""
    lines = plan(["table1"], "smoke", 3, [], tmp_path / "results", seeds=5)
    jobs = [json.loads(line.split("\t")[2])["runs"] for line in lines]
    planned = sorted(r["folder"] for runs in jobs for r in runs)
    expected = sorted(str(tmp_path / "results" / "table1" / "smoke" / "runs" / r.task / r.variant.name / f"seed{r.seed}")
                      for r in load_study("table1", "smoke", 5).runs())
    assert planned == expected and {int(f.rsplit("seed", 1)[1]) for f in planned} == set(range(5))
    # a seed at a time, as the pipeline orders its jobs (ppo.pipeline.carry.train_priority)
    first_seeds = [min(int(r["folder"].rsplit("seed", 1)[1]) for r in runs) for runs in jobs]
    assert first_seeds == sorted(first_seeds) and len(set(first_seeds)) >= 4, first_seeds


def test_plan_lists_a_studys_groups_before_the_next_ones_when_asked(tmp_path):
    """--studies-in-order, as the grids train (config studies_in_order): Table 1's groups of every seed, then Figure
    3's; without it Figure 3's groups, which hold all their seeds, sit in the first seed's wave between Table 1's."""
    def studies(in_order):
        lines = plan(["table1", "figure3"], "smoke", 11, [], tmp_path / "results", seeds=5, studies_in_order=in_order)
        return [line.split("\t")[0] for line in lines]

    ordered = studies(True)
    assert ordered == ["table1"] * 10 + ["figure3"] * 10  # 2 smoke tasks x 5 seeds; 2 tasks x 5 baselines
    mixed = studies(False)
    assert sorted(mixed) == sorted(ordered) and mixed != ordered
    # and Figure 3's a baseline at a time, in the study file's order (PPO against one baseline complete soonest)
    lines = plan(["table1", "figure3"], "smoke", 11, ["figure3"], tmp_path / "results", seeds=5, studies_in_order=True)
    variants = [Path(json.loads(line.split("\t")[2])["runs"][0]["folder"]).parent.name for line in lines]
    assert variants == [v for v in ("a2c", "a2c_trust_region", "trpo", "vpg_adaptive", "cem") for _ in range(2)]


def test_run_trains_a_group_to_its_records(tmp_path, capsys):
    lines = [line for line in plan(["table1"], "smoke", 3, [], tmp_path / "results")
             if "/InvertedPendulum-v5/clip_0.1/" in line]
    jobs = tmp_path / "jobs.tsv"
    jobs.write_text(lines[0] + "\n")
    assert run(jobs, workers=1, until=None, log_dir=tmp_path / "logs") == 0
    assert "finished" in capsys.readouterr().out
    study = load_study("table1", "smoke")
    trained = [r for r in study.runs() if r.task == "InvertedPendulum-v5" and r.variant.name == "clip_0.1"]
    assert trained and all(is_current(tmp_path / "results", study, r) for r in trained)


def test_run_refuses_a_group_whose_plan_no_longer_matches_its_runs(tmp_path, capsys):
    line = next(line for line in plan(["table1"], "smoke", 3, [], tmp_path / "results")
                if "/InvertedPendulum-v5/clip_0.1/" in line)
    study, job, job_plan = line.split("\t")
    stale = json.loads(job_plan)
    stale["runs"][0]["config"]["horizon"] = 1024  # its config_digest is the planned config's
    (tmp_path / "jobs.tsv").write_text("\t".join([study, job, json.dumps(stale)]) + "\n")
    assert run(tmp_path / "jobs.tsv", workers=1, until=None, log_dir=tmp_path / "logs") == 0
    assert "failed (2)" in capsys.readouterr().out
    assert "runs[0].config_digest" in (tmp_path / "logs/job000.log").read_text()
    assert not any(Path(r["folder"]).exists() for r in stale["runs"])


@pytest.mark.integration
def test_remote_batch_packs_what_it_trained_into_parts_that_unpack(tmp_path):
    """scripts/remote_batch.sh, as a device machine runs it: in a copy of the code, the jobs trained, then results/
    and logs/ packed as xz parts of at most 15 MiB; unpacked here, the runs are the finished records."""
    root = Path(__file__).resolve().parents[2]
    work = tmp_path / "copy"
    for folder in ("ppo", "experiments", "config", "reference", "scripts"):
        shutil.copytree(root / folder, work / folder)
    line = next(line for line in plan(["table1"], "smoke", 3, [], Path("results"))
                if "/InvertedPendulum-v5/clip_0.1/" in line)
    (work / "jobs.tsv").write_text(line + "\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # python3: this venv's
    done = subprocess.run(["bash", "scripts/remote_batch.sh", "jobs.tsv", "1", "300", str(tmp_path / "out")],
                          cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "train_InvertedPendulum-ppo-" in done.stdout and ": finished" in done.stdout
    parts = sorted((tmp_path / "out").glob("batch.tar.xz.part*"))
    assert parts and all(p.stat().st_size <= 15 * 2**20 for p in parts)
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    archive = b"".join(p.read_bytes() for p in parts)
    subprocess.run(["tar", "xJf", "-", "-C", str(unpacked)], input=archive, check=True)
    study = load_study("table1", "smoke")
    trained = [r for r in study.runs() if r.task == "InvertedPendulum-v5" and r.variant.name == "clip_0.1"]
    assert trained and all(is_current(unpacked / "results", study, r) for r in trained)
    assert (unpacked / "logs" / "batch.txt").read_text().strip().endswith("finished")
