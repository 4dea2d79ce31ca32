"""Train a batch of the pipeline's jobs on another machine, and bring the runs back.

For a machine with many cores but no Snakemake (or no network): ``plan`` lists the pipeline's own
training groups (the same packing as workflow/rules/common.smk, so a group's checkpoint has the same
name on every machine), each with its job's plan (ppo.pipeline.plan: the runs as resolved here), so that the list
is all the other machine needs; ``run`` trains them in parallel with ``python -m ppo.pipeline.job --plan``, the
command the pipeline runs (a plan that no longer matches its runs is refused, as in the pipeline); the run folders
and checkpoints come back as one archive that ``scripts/paper_grid.sh`` publishes. A run's manifest records the
machine it trained on.

    python -m ppo.pipeline.remote plan --studies table1 figure3 table1_v4 table1_bootstrap swimmer_details --scale paper --group-size 11 --only figure3 > jobs.tsv
    python -m ppo.pipeline.remote run jobs.tsv --workers 16 --until 540
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from ..config.errors import ConfigError
from ..config.files import PROJECT_ROOT
from ..training.records import git_state
from .carry import new_group_priority, order_ranks
from .plan import make_plan
from .study import load_study, plan_groups


def plan(studies: list[str], scale: str, group_size: int, only: list[str], results: Path,
         seeds: int | None = None, studies_in_order: bool = False) -> list[str]:
    """One line per pending training group: its study, its job's name and its plan (ppo.pipeline.plan, JSON on one
    line), tab-separated. ``seeds``: the pipeline config's seeds (the ten-seed grid's ``seeds=10``);
    ``studies_in_order``: the pipeline config's (the grids set it: a study's groups before the next one's)."""
    loaded = [load_study(name, scale, seeds) for name in studies]
    speeds = yaml.safe_load((PROJECT_ROOT / "config" / "config.yaml").read_text())["sim_steps_per_second"]
    groups = [(s, g) for s, g in plan_groups(loaded, group_size, results, PROJECT_ROOT / "published")
              if not only or s.name in only]
    # the pipeline's order for new groups (workflow/rules/common.smk train_priority): a study at a time when asked, a
    # seed at a time, a variant at a time when asked, the longest first (the simulator's speed sets a group's length)
    groups.sort(key=lambda sg: -new_group_priority(len(sg[1].runs) * sg[0].total_steps / speeds.get(sg[1].task, 1),
                                                   sg[1].first_seed,
                                                   *order_ranks(studies, sg[0], sg[1], studies_in_order)))
    lines = []
    for study, group in groups:
        job_plan = json.dumps(make_plan(results, study, list(group.runs)), sort_keys=True, default=str)
        lines.append("\t".join([study.name, f"train_{group.group_id}", job_plan]))
    return lines


def run(jobs: Path, workers: int, until: float | None, log_dir: Path) -> int:
    """Train each line of ``jobs`` with ``python -m ppo.pipeline.job --plan``, ``workers`` at a time, each plan
    written to ``log_dir``/plans first. With ``until`` (seconds), jobs still running then are stopped: each resumes
    from its last checkpoint later."""
    lines = [line.split("\t") for line in jobs.read_text().splitlines() if line.strip()]
    (log_dir / "plans").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PPO_REPRO_GIT": json.dumps(git_state())}
    deadline = None if until is None else time.monotonic() + until
    procs: list[subprocess.Popen] = []

    def one(index_line):
        index, (_, job, job_plan) = index_line
        if deadline is not None and time.monotonic() > deadline - 30:
            return "skipped"
        plan_file = log_dir / "plans" / f"job{index:03d}-{job}.json"
        plan_file.write_text(job_plan + "\n")
        with open(log_dir / f"job{index:03d}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "ppo.pipeline.job", "--plan", str(plan_file),
                                     "--checkpoint-every", "10"],
                                    stdout=log, stderr=subprocess.STDOUT,
                                    env=env)
            procs.append(proc)
            try:
                proc.wait(None if deadline is None else max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait()
                return "stopped"
        return "finished" if proc.returncode == 0 else f"failed ({proc.returncode})"

    with ThreadPoolExecutor(workers) as pool:
        outcomes = list(pool.map(one, enumerate(lines)))
    for index, ((study, job, _), outcome) in enumerate(zip(lines, outcomes)):
        print(f"job{index:03d} {study} {job}: {outcome}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("plan", help="list the pending training groups, longest first")
    pl.add_argument("--studies", nargs="+", required=True, help="all studies of the pipeline run (shared runs)")
    pl.add_argument("--scale", required=True)
    pl.add_argument("--group-size", type=int, required=True, help="the pipeline's group_size")
    pl.add_argument("--only", nargs="*", default=[], help="list only these studies' groups")
    pl.add_argument("--results", type=Path, default=Path("results"))
    pl.add_argument("--seeds", type=int, help="the pipeline config's seeds (default: the scale's)")
    pl.add_argument("--studies-in-order", action="store_true",
                    help="a study's groups before the next one's, as the grids train them (config studies_in_order)")
    rn = sub.add_parser("run", help="train the groups of a plan")
    rn.add_argument("jobs", type=Path)
    rn.add_argument("--workers", type=int, default=os.cpu_count())
    rn.add_argument("--until", type=float, help="stop every job after this many seconds (they resume later)")
    rn.add_argument("--log-dir", type=Path, default=Path("logs/batch"))
    args = p.parse_args(argv)
    try:
        if args.command == "plan":
            print("\n".join(plan(args.studies, args.scale, args.group_size, args.only, args.results, args.seeds,
                                  args.studies_in_order)))
            return 0
        return run(args.jobs, args.workers, args.until, args.log_dir)
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
