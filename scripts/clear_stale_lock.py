"""Remove Snakemake's lock on a project directory when no live Snakemake holds it.

After a killed pipeline (``kill -9``, a lost session), Snakemake's lock files stay in ``.snakemake/locks``
and the next run stops with a LockException until ``--unlock``. ``./repro`` calls this first, so running
it again simply continues. A lock is kept while any live process whose command line names snakemake
works in the directory (Snakemake itself, or one of its jobs): that run still holds it.

    python scripts/clear_stale_lock.py [DIR]      # prints one line when it removes a lock
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def live_snakemake(directory: Path) -> int | None:
    """The pid of a live process other than this one that runs snakemake in ``directory``, or None."""
    directory = directory.resolve()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(proc / "cwd"))
        except OSError:  # gone, or another user's process
            continue
        if cwd == directory and any("snakemake" in Path(os.fsdecode(arg)).name for arg in argv if arg):
            return int(proc.name)
    return None


def clear_stale_lock(directory: Path) -> str | None:
    """Remove the lock files of ``directory`` if no live Snakemake holds them; a line saying what was done."""
    locks = directory / ".snakemake" / "locks"
    held = sorted(locks.glob("*.lock")) if locks.is_dir() else []
    if not held:
        return None
    pid = live_snakemake(directory)
    if pid is not None:
        return f"{directory} is locked by a running Snakemake (pid {pid}); leaving its lock in place"
    for lock in held:
        lock.unlink(missing_ok=True)
    return f"removed the stale lock of an interrupted run ({len(held)} files in {locks}); continuing"


if __name__ == "__main__":
    message = clear_stale_lock(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    if message:
        print(message, file=sys.stderr)
