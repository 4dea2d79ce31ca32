#!/usr/bin/env python
"""What carrying a checkpoint again adds to the repository's history, with its records as rows or as columns.

    python benchmarks/carry_history.py grid-state/atari/paper/checkpoints/ALE_Breakout-v5-58f70e4bbee301f3.pt

Each version of the carried file in this repository's history (``git log``, oldest first, at most ``--versions``) is
written in both forms of a checkpoint's records (pickled rows, as the job saved them before 2026-11-29; columns,
ppo.training.driver.rows_as_columns), then, per form, the versions are committed in order to a scratch repository
and packed as git packs a clone (``git repack -adf``). Printed per form: the pack of the newest version alone, of
all versions, and the difference per carry (what each earlier carry of the file costs a clone, git storing the
newest whole and the others as deltas where it finds them).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ppo.training.driver import rows_as_columns, rows_from_columns  # noqa: E402

RECORDS = ("update_rows", "timing_rows")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def in_form(state: dict, form: str) -> dict:
    encode = rows_as_columns if form == "columns" else (lambda rows: rows)
    return {**state, **{key: [encode(rows_from_columns(rows)) for rows in state[key]] for key in RECORDS}}


def pack_bytes(files: list[Path], folder: Path) -> int:
    """Bytes of the pack of a repository whose commits add ``files`` in order, as one path."""
    git("init", "-q", str(folder), cwd=folder.parent)
    for file in files:
        (folder / "checkpoint.pt").write_bytes(file.read_bytes())
        git("add", "checkpoint.pt", cwd=folder)
        git("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", file.name, cwd=folder)
    git("repack", "-q", "-adf", cwd=folder)
    return sum(p.stat().st_size for p in (folder / ".git/objects/pack").glob("*.pack"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="a carried checkpoint's path in this repository (grid-state/...)")
    p.add_argument("--versions", type=int, default=3)
    args = p.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    commits = git("log", "--format=%H", "--", args.path, cwd=repo).split()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        versions = []
        for commit in reversed(commits):
            blob = subprocess.run(["git", "show", f"{commit}:{args.path}"], cwd=repo, capture_output=True).stdout
            if blob:  # the commit that removed the file has none
                versions.append((commit[:7], blob))
        versions = versions[-args.versions:]
        if len(versions) < 2:
            print(f"{args.path}: {len(versions)} version(s) in the history, 2 or more needed", file=sys.stderr)
            return 2
        print(f"{args.path}: versions {', '.join(c for c, _ in versions)}")
        print("records as | newest alone (MB) | all versions (MB) | per earlier carry (MB)")
        for form in ("rows", "columns"):
            files = []
            for commit, blob in versions:
                source = tmp / f"{commit}.pt"
                source.write_bytes(blob)
                state = torch.load(source, weights_only=True)
                files.append(tmp / f"{commit}.{form}.pt")
                torch.save(in_form(state, form), files[-1])
            newest = pack_bytes(files[-1:], tmp / f"{form}-newest")
            every = pack_bytes(files, tmp / f"{form}-all")
            print(f"{form} | {newest / 1e6:.1f} | {every / 1e6:.1f} | {(every - newest) / (len(files) - 1) / 1e6:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
