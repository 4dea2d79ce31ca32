"""Train a group of a study's runs in one process:

    python -m ppo.pipeline.job --study table1 --scale reduced \\
        results/table1/reduced/runs/Hopper-v5/clip_0.2/seed0/manifest.json ...

The runs are named by their output files (``<runs>/<task>/<variant>/seed<k>/<file>``), which is what the
Snakemake rule passes as ``{output}``; their settings are resolved from the study's files (ppo.pipeline.study),
exactly as the Snakefile resolved them when it planned the job (``--digests``, the planned config digests,
makes sure of that). With ``--copy-from <run dir> ...`` (one folder per run, in the order of the runs) the
runs named are not trained but copied: from the same runs finished in another study (ppo.pipeline.study.shared_runs)
or published with the project (ppo.pipeline.publish). Every source is checked before anything is written, so a
refused run leaves the job's other runs uncopied too; one process copies a whole study's published runs.
"""
from __future__ import annotations

import argparse
import errno
import json
import shutil
import sys
from pathlib import Path

import torch

from ..config.errors import ConfigError
from ..config.schema import current_manifest, recorded_digest
from ..training import records
from ..training.driver import RunSpec, train_group
from ..training.layout import checkpoint_path, split_run_dir
from ..training.records import unwritable
from .study import Run, Study, load_study


def resolve_run(study: Study, run_dir: Path) -> Run:
    """The study's run whose records go to ``run_dir`` = ``<runs>/<task>/<variant>/seed<k>``."""
    _, task, variant, seed = split_run_dir(run_dir, study.tasks)
    variants = {v.name: v for v in study.variants}
    if task not in study.tasks or variant not in variants or not seed.removeprefix("seed").isdigit():
        raise ConfigError(f"{run_dir}: not a run of study {study.name} ({study.path}): "
                          "expected <runs>/<task>/<variant>/seed<k> with the study's tasks and variants")
    return Run(task, variants[variant], int(seed.removeprefix("seed")))


def check_digests(runs: list[Run], planned) -> None:
    """Refuse a run whose resolved config digest is not the one planned for it (``planned``: run id -> digest)."""
    if not isinstance(planned, dict):
        raise ConfigError(f"--digests must be a JSON object of run id -> config digest, got {type(planned).__name__}")
    for run in runs:
        if planned.get(run.run_id) != run.config_digest:
            raise ConfigError(f"run {run.run_id}: its configuration resolves to digest {run.config_digest}, but "
                              f"{planned.get(run.run_id)!r} was planned; the experiment files changed since the "
                              "plan: plan again; nothing was trained or copied")


def run_meta(study: Study, run: Run) -> dict:
    """What the manifest says about the run's place in its study, beside what trained it."""
    return {"study": study.name, "scale": study.scale, "scale_label": study.label, "reduced": study.reduced,
            "variant": run.variant.name, "variant_label": run.variant.label, "paper_row": run.variant.paper_row,
            "preset": run.variant.preset.name, "overrides": run.variant.overrides,
            # the preset the variant file names, when the study applies its overrides to another (field presets)
            **({"variant_preset": run.variant.named_preset} if run.variant.named_preset else {}),
            "config_digest": run.config_digest}


RECORD_FILES = records.RECORD_FILES
COPIED_FILES = (*RECORD_FILES, "model.pt")


def source_manifest(source: Path, run: Run) -> dict:
    """The manifest of the finished run in ``source``, in today's schema, once it is checked to be ``run`` (same
    task, seed and config digest) with every record as its manifest hashed it; else ConfigError in one line
    naming the file."""
    manifest_path = source / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError, RecursionError) as err:  # ValueError: bad JSON or UTF-8
        raise ConfigError(f"{manifest_path}: cannot read the run to copy ({type(err).__name__})") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{manifest_path}: not a run's manifest (a JSON object), cannot copy the run")
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
    missing = [name for name in RECORD_FILES if not (source / name).is_file()]
    if missing:
        raise ConfigError(f"{source}: the run to copy lacks {missing}")
    changed = records.changed_record(source, manifest)
    if changed:
        raise ConfigError(f"{changed}: the run is not copied")
    return manifest


def write_copy(source: Path, manifest: dict, run_dir: Path, meta: dict) -> None:
    """Make ``run_dir`` the run in ``source`` (checked by source_manifest): its records and model as they are, its
    manifest with this study's ``meta`` and ``copied_from``, written last as after training."""
    for name in [n for n in COPIED_FILES if (source / n).is_file()]:  # published runs have no model.pt
        records.atomic_write(run_dir / name, lambda tmp, name=name: shutil.copyfile(source / name, tmp))
    origin = {"run_dir": str(source), "study": manifest.get("study"), "scale": manifest.get("scale")}
    records.write_json({**manifest, **meta, "copied_from": origin}, run_dir / "manifest.json")


def copy_run(source: Path, run: Run, run_dir: Path, meta: dict) -> None:
    """Make ``run_dir`` the run finished in ``source`` (ppo.pipeline.study.shared_runs, or published/)."""
    write_copy(source, source_manifest(source, run), run_dir, meta)


def copy_runs(study: Study, sources: list[Path], runs: list[Run], run_dirs: list[Path]) -> None:
    """Copy each of ``runs`` from its source folder: every source checked first (source_manifest), then written,
    so a refused run leaves nothing copied (Snakemake would remove the job's outputs anyway)."""
    checked = [source_manifest(source, run) for source, run in zip(sources, runs)]
    for source, manifest, run, run_dir in zip(sources, checked, runs, run_dirs):
        write_copy(source, manifest, run_dir, run_meta(study, run))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--study", required=True)
    p.add_argument("--scale", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--checkpoint-every", type=int, default=10,
                   help="save the group's state every N updates (0 = never); a restarted job resumes from it")
    p.add_argument("--copy-from", type=Path, nargs="+", metavar="RUN_DIR",
                   help="do not train: copy these finished runs (of another study, or published), one folder per run "
                        "in the order of the outputs' runs (same task, seed, configuration)")
    p.add_argument("--digests", type=json.loads, metavar="JSON",
                   help='the config digest planned for each run, {"<run id>": "<digest>", ...}: a run whose '
                        'resolved configuration has another digest is refused (the files changed since planning)')
    p.add_argument("outputs", nargs="+", type=Path, help="output files of the runs to train (any file per run)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    run_dirs = list(dict.fromkeys(path.parent for path in args.outputs))  # unique, in order
    try:
        study = load_study(args.study, args.scale)
        runs = [resolve_run(study, d) for d in run_dirs]
        if args.digests is not None:
            check_digests(runs, args.digests)
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)  # one line, whatever the message
        return 2
    checkpoint = checkpoint_path(run_dirs, study.tasks)
    problem = unwritable([*run_dirs, checkpoint.parent])
    if problem:  # refuse now rather than after training: nothing was trained, nothing was changed
        print(f"error: {problem}; nothing was trained or changed", file=sys.stderr)
        return 2
    if args.copy_from is not None:
        if len(args.copy_from) != len(runs):
            print(f"error: --copy-from names {len(args.copy_from)} run folders for outputs of {len(runs)} runs; "
                  "nothing was copied", file=sys.stderr)
            return 2
        try:
            copy_runs(study, args.copy_from, runs, run_dirs)
        except ConfigError as err:
            print(f"error: {' '.join(str(err).split())}; nothing was copied", file=sys.stderr)
            return 2
        for source, run_dir in zip(args.copy_from, run_dirs):
            print(f"copied {source} to {run_dir} (same task, seed and configuration)")
        return 0
    specs = [RunSpec(run.run_id, run.task, run.variant.config, run.seed, run_dir, meta=run_meta(study, run))
             for run, run_dir in zip(runs, run_dirs)]
    print(f"group of {len(specs)} runs of {specs[0].task}, {study.total_steps:,} steps each", flush=True)
    try:
        train_group(specs, log=lambda msg: print(msg, flush=True), checkpoint=checkpoint,
                    checkpoint_every=args.checkpoint_every)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise
        print(f"error: {err.strerror}; the last checkpoint is kept: free space and run again to resume",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
