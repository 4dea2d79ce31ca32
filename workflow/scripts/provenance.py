#!/usr/bin/env python
"""Write what produced a study's report as key/value rows: code version, software, machine, budget, runs.

python workflow/scripts/provenance.py --study table1 --scale reduced --seeds 2 \
    --out results/table1/reduced/report/provenance.csv --manifests results/table1/reduced/runs/*/*/*/manifest.json

Values without a prefix describe the environment that wrote this file (it is rebuilt whenever a run or a
report table changes). Rows starting with ``runs_`` summarize what each run recorded in its own
``manifest.json`` when it was trained, which is what the numbers in the tables come from.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from analysis.io import RunDataError, read_manifest
from ppo.config.errors import ConfigError
from ppo.pipeline.study import load_study, narrowed
from ppo.training.records import git_state, host_info, package_versions

DIRTY = {True: "yes: uncommitted changes", False: "no", None: "unknown"}
REPORTED_PACKAGES = ("torch", "gymnasium", "mujoco", "numpy", "pandas", "scipy", "snakemake", "pyarrow")


def _counted(values) -> str:
    """'a (3 runs); b (1 run)', most frequent first; '' when there are no runs."""
    parts = []
    for value, n in Counter("unknown" if v is None else str(v) for v in values).most_common():
        parts.append(f"{value} ({n} run{'s' if n != 1 else ''})")
    return "; ".join(parts)


def _short(commit: str | None) -> str | None:
    return commit[:12] if commit else commit


def narrowed_to(study) -> str:
    """'' for a whole study; for one the pipeline config narrowed (ppo.pipeline.study.narrowed, e.g. ./repro
    atari-three), how much of it: its scale label still describes the whole study."""
    whole = load_study(study.name, study.scale, study.seeds)
    parts = [f"{len(mine)} of its {len(all_)} {what}" for mine, all_, what in
             [(study.tasks, whole.tasks, "tasks"), (study.variants, whole.variants, "settings")] if len(mine) < len(all_)]
    return " and ".join(parts)


def provenance(study, manifests: list[dict]) -> list[tuple[str, str]]:
    git, host, packages = git_state(), host_info(), package_versions()
    rows = [
        ("study", study.name),
        ("scale", study.scale),
        ("scale_label", study.label),
        ("reduced_budget", "yes" if study.reduced else "no (the paper's protocol)"),
        *([("updates_per_run", study.updates), ("responses_per_run", study.total_steps)] if study.kind == "rlhf"
          else [("total_steps_per_run", study.total_steps)]),
        ("tasks", ", ".join(study.tasks)),
        ("narrowed_to", narrowed_to(study)),
        ("settings", ", ".join(v.name for v in study.variants)),
        ("seeds", f"{study.seeds} ({', '.join(map(str, range(study.seeds)))})"),
        ("runs_planned", len(study.runs())),
        ("runs_recorded", len(manifests)),
        ("runs_status", _counted(m.get("status") for m in manifests)),
        # A group's runs share one job, whose wall time each of its manifests records: count it once.
        ("runs_training_seconds", round(sum({tuple(m.get("group") or [m.get("run_id")]): m.get("wall_seconds") or 0
                                             for m in manifests}.values()), 1)),
        ("git_commit", git["commit"] or "unknown (not a git work tree)"),
        ("git_dirty", DIRTY[git["dirty"]]),
        ("runs_git_commit", _counted(_short(m.get("git", {}).get("commit")) for m in manifests)),
        ("runs_git_dirty", _counted(DIRTY.get(m.get("git", {}).get("dirty")) for m in manifests)),
        ("python", host["python"]),
        ("platform", host["platform"]),
        ("cpu_count", host["cpu_count"]),
    ]
    for name in REPORTED_PACKAGES:
        rows.append((name, packages.get(name) or "not installed"))
    # What the runs were trained with: one row per package, listing every version the manifests record.
    rows.append(("runs_python", _counted(m.get("host", {}).get("python") for m in manifests)))
    rows.append(("runs_platform", _counted(m.get("host", {}).get("platform") for m in manifests)))
    for name in REPORTED_PACKAGES:
        rows.append((f"runs_{name}", _counted(m.get("packages", {}).get(name) for m in manifests)))
    rows.append(("written_utc", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")))
    return [(key, str(value)) for key, value in rows]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", required=True)
    parser.add_argument("--scale", required=True)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--manifests", nargs="*", default=[], type=Path)
    parser.add_argument("--tasks", nargs="*", default=None, help="the tasks the pipeline narrowed the study to")
    parser.add_argument("--variants", nargs="*", default=None, help="the variants the pipeline narrowed it to")
    args = parser.parse_args(argv)
    try:
        study = narrowed(load_study(args.study, args.scale, args.seeds), args.tasks, args.variants, "provenance.py")
        manifests = [read_manifest(p) for p in args.manifests]
    except (ConfigError, RunDataError) as err:  # one line naming the file, never a traceback
        print(f"provenance: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    table = pd.DataFrame(provenance(study, manifests), columns=["key", "value"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
