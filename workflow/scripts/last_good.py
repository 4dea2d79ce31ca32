"""A failed report job never destroys the last good report.

Snakemake removes a job's outputs before it runs and again when it fails, so a report whose input turned bad
(or whose code broke) would leave the study's report folder half empty until the input is repaired. Each study
report job ends with ``save``, which copies its outputs beside their folder (``<folder>.last-good/``); the
workflow's ``onerror`` runs ``restore``, which puts back every saved file that is missing. The restored files
are older than their inputs, so the next run builds the report again.

    python workflow/scripts/last_good.py save FILE...      # after a report job succeeded
    python workflow/scripts/last_good.py restore RESULTS   # after a failed run: missing report files back
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SUFFIX = ".last-good"


def kept(path: Path) -> Path:
    return path.parent.with_name(path.parent.name + SUFFIX) / path.name


def save(files: list[Path]) -> None:
    for path in files:
        target = kept(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
        shutil.copy2(path, tmp)  # with its time: restored, it stays older than the inputs that changed
        os.replace(tmp, target)


def restore(results: Path) -> list[Path]:
    restored = []
    for folder in sorted(results.glob(f"**/*{SUFFIX}")):
        home = folder.with_name(folder.name[: -len(SUFFIX)])
        for saved in sorted(folder.iterdir()):
            if saved.name.startswith(".") or (home / saved.name).exists():
                continue
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy2(saved, home / saved.name)
            restored.append(home / saved.name)
    return restored


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("save", "restore"):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    if argv[0] == "save":
        save([Path(a) for a in argv[1:]])
        return 0
    restored = restore(Path(argv[1]))
    folders = sorted({str(p.parent) for p in restored})
    if restored:
        print(f"the last good report is kept: {len(restored)} files put back in {', '.join(folders)} "
              f"(the failed job's log says what went wrong)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
