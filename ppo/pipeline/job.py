"""Train a group of a study's runs in one process, or copy finished runs, as the job's plan says:

    python -m ppo.pipeline.job --plan results/table1/reduced/plans/train_Hopper-ppo-0-<key>.json --threads 1

The plan (ppo.pipeline.plan) holds the runs as the planner resolved them: each run's full config, task, seed,
record folder, config digest and manifest fields. The job reads nothing else of the study and parses no path;
it checks the plan first (ppo.pipeline.plan.read_plan: a plan that no longer matches its runs is refused in one
line naming the file and the field). A training plan's runs are trained together (ppo.training.driver.train_group),
resuming from the group's checkpoint; a copy plan's runs (``job: copy``) are copied from the finished run each
names: the same run finished in another study (ppo.pipeline.study.shared_runs) or published with the project
(ppo.pipeline.publish). Every source is checked before anything is written, so a refused run leaves the job's
other runs uncopied too; one process copies a whole study's published runs.
"""
from __future__ import annotations

import argparse
import errno
import shutil
import sys
from pathlib import Path

import torch

from ..config.errors import ConfigError
from ..config.schema import current_manifest, recorded_digest
from ..training import records
from ..training.driver import RunSpec, train_group
from ..training.records import unwritable
from .plan import Plan, PlannedRun, read_plan
from .study import Run


RECORD_FILES = records.RECORD_FILES
COPIED_FILES = (*RECORD_FILES, "model.pt")


def source_manifest(source: Path, run: Run | PlannedRun) -> dict:
    """The manifest of the finished run in ``source``, in today's schema, once it is checked to be ``run`` (same
    task, seed and config digest) with every record as its manifest hashed it; else ConfigError in one line
    naming the file."""
    manifest_path = source / "manifest.json"
    manifest = records.manifest_to_copy(source)
    try:
        digest = recorded_digest(manifest)  # a run recorded under an older config schema is read in today's
        manifest = current_manifest(manifest)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ConfigError(f"{manifest_path}: not a run's manifest ({type(err).__name__}: {err}), cannot copy the "
                          "run") from None
    for field, recorded, expected in (("task", manifest.get("task"), run.task), ("seed", manifest.get("seed"), run.seed),
                                      ("config_digest", digest, run.config_digest)):
        if recorded != expected:
            raise ConfigError(f"{manifest_path}: field {field} is {recorded!r}, but run {run.run_id} "
                              f"needs {expected!r}: not the same run")
    records.check_records_to_copy(source, manifest, RECORD_FILES)
    return manifest


def write_copy(source: Path, manifest: dict, run_dir: Path, meta: dict) -> None:
    """Make ``run_dir`` the run in ``source`` (checked by source_manifest): its records and model as they are, its
    manifest with this study's ``meta`` and ``copied_from``, written last as after training."""
    for name in [n for n in COPIED_FILES if (source / n).is_file()]:  # published runs have no model.pt
        records.atomic_write(run_dir / name, lambda tmp, name=name: shutil.copyfile(source / name, tmp))
    origin = {"run_dir": str(source), "study": manifest.get("study"), "scale": manifest.get("scale")}
    records.write_json({**manifest, **meta, "copied_from": origin}, run_dir / "manifest.json")


def copy_run(source: Path, run: Run | PlannedRun, run_dir: Path, meta: dict) -> None:
    """Make ``run_dir`` the run finished in ``source`` (ppo.pipeline.study.shared_runs, or published/)."""
    write_copy(source, source_manifest(source, run), run_dir, meta)


def copy_runs(runs: list[PlannedRun]) -> None:
    """Copy each of ``runs`` from its source folder: every source checked first (source_manifest), then written,
    so a refused run leaves nothing copied (Snakemake would remove the job's outputs anyway)."""
    checked = [source_manifest(run.source, run) for run in runs]
    for run, manifest in zip(runs, checked):
        write_copy(run.source, manifest, run.folder, run.meta)


def train(plan: Plan, checkpoint_every: int, checkpoint_seconds: float = 0.0) -> int:
    """Train the plan's group, resuming from its checkpoint if one is there; the exit status."""
    specs = [RunSpec(r.run_id, r.task, r.config, r.seed, r.folder, meta=r.meta) for r in plan.runs]
    print(f"group of {len(specs)} runs of {specs[0].task}, {specs[0].config.total_steps:,} steps each", flush=True)
    try:
        train_group(specs, log=lambda msg: print(msg, flush=True), checkpoint=plan.checkpoint,
                    checkpoint_every=checkpoint_every, checkpoint_seconds=checkpoint_seconds)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise
        print(f"error: {err.strerror}; the last checkpoint is kept: free space and run again to resume",
              file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", type=Path, required=True,
                   help="the job's plan (ppo.pipeline.plan): the runs to train or copy, as the planner resolved them")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--checkpoint-every", type=int, default=10,
                   help="save the group's state every N updates (0 = never); a restarted job resumes from it")
    p.add_argument("--checkpoint-seconds", type=float, default=0.0,
                   help="and at least this many seconds after the last save (0: every N updates)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        plan = read_plan(args.plan)
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}; nothing was trained or copied", file=sys.stderr)  # one line
        return 2
    folders = [run.folder for run in plan.runs]
    problem = unwritable(folders if plan.job == "copy" else [*folders, plan.checkpoint.parent])
    if problem:  # refuse now rather than after training: nothing was trained, nothing was changed
        print(f"error: {problem}; nothing was trained or changed", file=sys.stderr)
        return 2
    if plan.job == "train":
        return train(plan, args.checkpoint_every, args.checkpoint_seconds)
    try:
        copy_runs(list(plan.runs))
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}; nothing was copied", file=sys.stderr)
        return 2
    for run in plan.runs:
        print(f"copied {run.source} to {run.folder} (same task, seed and configuration)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
