"""Run records: parquet tables and a manifest of what produced them, written atomically."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..config.errors import ConfigError
from ..config.files import PROJECT_ROOT

# episodes.parquet and updates.parquet hold only what the config and seed determine, so a rerun writes
# byte-identical files (tests/training/test_group_training.py); every wall-clock measure goes to timing.parquet.
EPISODE_COLUMNS = ["global_step", "episode_return", "episode_length"]
TIMING_COLUMNS = ["update", "global_step", "sps", "rollout_seconds", "optimize_seconds", "wall_time"]
RECORD_FILES = ("episodes.parquet", "updates.parquet", "timing.parquet")  # a run's records, hashed in its manifest
# what a run's numbers depend on: torch and numpy, each environment family's packages (ppo/envs/<family>.py
# FAMILY.packages; tests/envs/test_env_families.py checks they are here), the records' and the pipeline's
PACKAGES = ["torch", "numpy", "gymnasium", "mujoco", "ale-py", "box2d", "pandas", "pyarrow", "scipy", "snakemake",
            "opencv-python-headless"]


def atomic_write(path: Path, write) -> None:
    """Write to a temporary sibling and rename: a killed job never leaves a file that looks complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        # torch reports a full disk as "enforce fail ... unexpected pos": say what it is
        if isinstance(err, OSError) and err.errno == errno.ENOSPC or disk_full(path.parent):
            raise OSError(errno.ENOSPC, f"no space left on device writing {path} (the file as it was is kept)") from None
        raise
    finally:
        if tmp.exists():
            tmp.unlink()


def disk_full(folder: Path, margin: int = 1 << 20) -> bool:
    """Whether the file system of ``folder`` has less than ``margin`` bytes left."""
    try:
        return shutil.disk_usage(folder).free < margin
    except OSError:
        return False


def unwritable(dirs) -> str | None:
    """One line naming the first of ``dirs`` that files cannot be written into, or None if all can.

    A folder that does not exist yet is judged by its nearest existing parent, where it would be created.
    The test creates and removes a temporary file: permission bits alone do not tell (root, read-only
    mounts, ACLs). Run before a job starts, so a read-only results folder costs no training time."""
    tried = set()
    for folder in map(Path, dirs):
        existing = folder
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            return f"{folder}: cannot create it, {existing} is a file, not a folder"
        if existing in tried:
            continue
        tried.add(existing)
        try:
            fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=existing)
            os.close(fd)
            os.unlink(probe)
        except OSError as err:
            return f"{folder}: cannot write in {existing} ({err.strerror or type(err).__name__})"
    return None


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Compact and lossless, so that the published paper-scale runs stay small: zstd, floats split by byte
    (their exponents compress), integers (steps, counters) delta-encoded; 0.67x the default zstd size."""
    floats = [c for c in df.columns if pd.api.types.is_float_dtype(df[c])]
    ints = {c: "DELTA_BINARY_PACKED" for c in df.columns
            if pd.api.types.is_integer_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])}
    atomic_write(Path(path), lambda p: df.to_parquet(
        p, index=False, compression="zstd", compression_level=19, use_dictionary=False,
        use_byte_stream_split=floats or False, column_encoding=ints or None))


class RunDataError(ValueError):
    """A run file is missing, unreadable or lacks required fields."""



def one_line(exc: BaseException) -> str:
    """pyarrow's messages can span lines and carry control characters from the damaged bytes."""
    text = "".join(c if c.isprintable() else " " for c in str(exc))
    return " ".join(text.split()) or type(exc).__name__



def read_parquet(path: str | Path, required: Iterable[str] = ()) -> pa.Table:
    """Read a parquet file, turning every failure into a one-line error naming the file. The file is
    left as it is: deleting it is how the pipeline is asked to re-create it."""
    path = Path(path)
    if not path.is_file():
        raise RunDataError(f"missing file: {path}")
    try:
        table = pq.read_table(path)
        table.schema.pandas_metadata  # noqa: B018 - decoded lazily by to_pandas; damaged bytes fail here
    except (OSError, ValueError, pa.ArrowException) as exc:  # ArrowInvalid, UnicodeDecodeError are ValueErrors
        raise RunDataError(f"corrupt parquet file {path} ({one_line(exc)}); "
                           "delete it and re-run the pipeline to re-create it") from exc
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise RunDataError(f"{path} lacks columns {missing}")
    return table



def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def record_hashes(folder: Path, names=RECORD_FILES) -> dict[str, str]:
    """{file name: SHA-256} of a run's record files, as its manifest keeps them (field ``sha256``)."""
    return {name: sha256(Path(folder) / name) for name in names if (Path(folder) / name).is_file()}


_checked: dict[tuple, str | None] = {}  # (file, size, mtime, recorded hash) -> the verdict: planning asks often


def changed_record(folder: Path, manifest: dict) -> str | None:
    """One line naming the first record file of ``folder`` whose content is not what its manifest recorded
    (a flipped bit, an edit, a truncation, a missing file), or None. Runs recorded before hashes were kept
    (no ``sha256`` field) have nothing to check against."""
    recorded = manifest.get("sha256")
    if recorded is None:
        return None
    if not isinstance(recorded, dict):
        return f"{Path(folder) / 'manifest.json'}: field sha256 is not a mapping of file names to hashes"
    for name, expected in recorded.items():
        path = Path(folder) / str(name)
        try:
            stat = path.stat()
        except OSError:
            return f"{path}: missing, but its manifest records its SHA-256"
        key = (str(path), stat.st_size, stat.st_mtime_ns, expected)
        if key not in _checked:
            found = sha256(path)
            _checked[key] = (None if found == expected else
                             f"{path}: its content changed after it was written (SHA-256 {found[:12]}…, its manifest "
                             f"records {str(expected)[:12]}…)")
        if _checked[key]:
            return _checked[key]
    return None


def write_text_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it: its time stays, so Snakemake (mtime trigger) reruns nothing."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):  # not there yet (or unreadable): written below
        pass
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def manifest_to_copy(source: Path) -> dict:
    """The manifest of the finished run in ``source`` that a job is about to copy, as a dict; else ConfigError in
    one line naming the file."""
    path = Path(source) / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as err:  # ValueError: bad JSON or UTF-8
        raise ConfigError(f"{path}: cannot read the run to copy ({type(err).__name__})") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{path}: not a run's manifest (a JSON object), cannot copy the run")
    return manifest


def check_records_to_copy(source: Path, manifest: dict, names: Iterable[str]) -> None:
    """ConfigError in one line unless every record ``names`` of ``source`` is there and as its manifest hashed it."""
    missing = [name for name in names if not (Path(source) / name).is_file()]
    if missing:
        raise ConfigError(f"{source}: the run to copy lacks {missing}")
    changed = changed_record(source, manifest)
    if changed:
        raise ConfigError(f"{changed}: the run is not copied")


def write_json(obj: dict, path: Path) -> None:
    atomic_write(Path(path), lambda p: p.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str)))


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state() -> dict[str, str | bool | None]:
    """Commit of the code that ran and whether the work tree had uncommitted changes. Where the code is a
    copy without git (ppo.pipeline.remote on another machine), the copy's origin as PPO_REPRO_GIT gives it."""
    if "PPO_REPRO_GIT" in os.environ and not (PROJECT_ROOT / ".git").exists():
        try:
            given = json.loads(os.environ["PPO_REPRO_GIT"])
            return {"commit": given.get("commit"), "dirty": given.get("dirty"), "from": "PPO_REPRO_GIT"}
        except (json.JSONDecodeError, AttributeError):
            return {"commit": None, "dirty": None}
    def git(*args):
        return subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def cpu_model() -> str | None:
    """The processor's name (floating-point results can differ between processor models)."""
    return _cpuinfo().get("model name") or platform.processor() or None


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    fields = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break  # the end of the first processor's block
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def numerics_platform() -> dict[str, str | None]:
    """What a run's floats depend on besides the code, the seeds and the package versions (docs/reproducibility.md).

    The math libraries pick their kernels at run time from the processor: MKL, which torch calls for every
    matrix product on the CPU, takes one code path on Intel processors and another on AMD ones (shown there:
    on AMD its float32 products sum without FMA), and torch's own kernels follow the SIMD level it detects
    (AVX2, AVX512). ``key`` names that combination, vendor-family-SIMD level, e.g. ``GenuineIntel-6-AVX512``:
    the same key and packages, the same bits."""
    import torch  # here, not at the top: records are read by processes that never train

    info = _cpuinfo()
    vendor, family = info.get("vendor_id") or platform.machine() or "unknown", info.get("cpu family")
    simd = torch.backends.cpu.get_cpu_capability()
    return {"key": f"{vendor}-{family or 'unknown'}-{simd}", "vendor": vendor, "family": family,
            "model": info.get("model"), "model_name": info.get("model name") or platform.processor() or None,
            "simd": simd, "machine": platform.machine()}


def recorded_platform(manifest: dict) -> dict:
    """The numerics platform a run was trained on, from its manifest: recorded since 2026-11-26; before, only
    the processor's name was, and the vendor is read from it (family and SIMD level then unknown, "?")."""
    if isinstance(manifest.get("platform"), dict):
        return manifest["platform"]
    name = (manifest.get("host") or {}).get("cpu") or "unknown"
    vendor = "GenuineIntel" if "Intel" in name else "AuthenticAMD" if "AMD" in name else "unknown"
    return {"key": f"{vendor}-?-?", "vendor": vendor, "model_name": name, "simd": None, "inferred": True}


def host_info() -> dict[str, str | int | None]:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "cpu": cpu_model(),
            "python": sys.version.split()[0], "cpu_count": os.cpu_count()}
