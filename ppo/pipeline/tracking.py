"""Optional wandb sink: replays a finished run's parquet records into a wandb run.

Parquet stays the source of truth; this only copies it, after training, so turning tracking on, off, or
from offline to online never touches a training job (Snakemake re-runs only the small export rule).
Offline unless asked: ``mode="online"`` is the only way to open a network connection.

Metric names follow CleanRL (``charts/episodic_return``, ``losses/approx_kl``, ... against
``global_step``) and the config carries ``env_id`` and ``exp_name``, so openrlbenchmark can read the runs.

    python -m ppo.pipeline.tracking --mode offline --dir results/table1/reduced/wandb RUN_DIR [RUN_DIR ...]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

from ..config.schema import current_manifest
from ..training.records import RunDataError, read_parquet

UPDATE_METRICS = {  # our updates.parquet column -> CleanRL name
    "policy_loss": "losses/policy_loss", "value_loss": "losses/value_loss", "entropy": "losses/entropy",
    "approx_kl": "losses/approx_kl", "kl": "losses/kl", "clipfrac": "losses/clipfrac",
    "explained_variance": "losses/explained_variance", "learning_rate": "charts/learning_rate",
    "sps": "charts/SPS", "beta": "charts/beta",
}
EPISODE_METRICS = {"episode_return": "charts/episodic_return", "episode_length": "charts/episodic_length"}


def history(run_dir: Path) -> list[dict]:
    """Episode and update rows as wandb log entries, ordered by global_step (updates after episodes)."""
    episodes = read_parquet(run_dir / "episodes.parquet").to_pandas()
    updates = read_parquet(run_dir / "updates.parquet").to_pandas()
    if (run_dir / "timing.parquet").exists():  # steps/s and wall time live apart from the stats
        timing = read_parquet(run_dir / "timing.parquet").to_pandas()
        updates = updates.merge(timing.drop(columns="global_step"), on="update", how="left")
    rows = [(int(r.global_step), 0, {EPISODE_METRICS[k]: getattr(r, k) for k in EPISODE_METRICS})
            for r in episodes.itertuples()]
    # every statistic an algorithm records: CleanRL's names where CleanRL has one, the rest under "stats/"
    # (TRPO's line search, ACER's replay, PPO's early stopping...), so no algorithm's statistics are lost
    names = {k: UPDATE_METRICS.get(k, f"stats/{k}") for k in updates.columns
             if k not in ("update", "global_step") and pd.api.types.is_numeric_dtype(updates[k])}
    rows += [(int(r["global_step"]), 1, {name: r[k] for k, name in names.items()})
             for r in updates.to_dict("records")]
    rows.sort(key=lambda row: row[:2])
    return [{"global_step": step, **metrics} for step, _, metrics in rows]


EXPORTED_KEYS = ("run_id", "task", "seed", "status", "config")


def read_manifest(path: Path) -> dict:
    """The manifest's fields the export reads; any failure is one line naming the file (RunDataError)."""
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as err:  # ValueError: bad JSON or UTF-8
        raise RunDataError(f"{path}: cannot read the manifest ({type(err).__name__})") from None
    missing = [k for k in EXPORTED_KEYS if not isinstance(manifest, dict) or k not in manifest]
    if missing:
        raise RunDataError(f"{path}: the manifest lacks {missing}")
    return manifest


def export_run(run_dir: Path, mode: str = "offline", project: str = "ppo-repro", directory: Path | None = None,
               entity: str | None = None) -> str:
    """Write one run to wandb; returns the wandb run id (the run's own id, so re-exports overwrite)."""
    if mode not in ("offline", "online"):
        raise ValueError(f"wandb mode must be 'offline' or 'online', got {mode!r}")
    try:
        import wandb
    except ImportError:
        raise SystemExit("wandb is not installed: pip install -e '.[tracking]' (or set tracking: none)") from None
    run_dir = Path(run_dir)
    manifest = current_manifest(read_manifest(run_dir / "manifest.json"))  # every run's config in one shape
    config = {"env_id": manifest["task"], "exp_name": manifest.get("variant", "ppo"), "seed": manifest["seed"],
              "study": manifest.get("study"), "scale": manifest.get("scale"), "status": manifest["status"],
              "git_commit": (manifest.get("git") or {}).get("commit"), **manifest["config"]}
    run_id = "-".join(str(p) for p in run_dir.parts[-3:]).replace(".", "_").replace("/", "-")
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
    run = wandb.init(project=project, entity=entity, mode=mode, dir=str(directory) if directory else None,
                     id=run_id, name=manifest["run_id"], group=f"{manifest.get('study')}/{manifest.get('variant')}",
                     config=config, reinit="create_new", settings=wandb.Settings(console="off", silent=True))
    run.define_metric("global_step")
    run.define_metric("*", step_metric="global_step")
    for entry in history(run_dir):
        run.log(entry)
    run.finish()
    return run_id


DEFAULT_SERVER = "https://api.wandb.ai"


def unreachable(url: str, timeout: float = 10.0) -> str | None:
    """Why the wandb server at ``url`` cannot be reached (a TCP connection within ``timeout`` seconds), or None.
    Asked before any export in online mode: without a network wandb retries for minutes, then prints its
    stack twice; this says it in one line at once."""
    parsed = urlparse(url)
    host, port = parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
    if not host:
        return f"{url!r} is not a server address"
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        return f"cannot connect to {host}:{port} ({err.strerror or type(err).__name__})"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="offline", choices=["offline", "online"])
    p.add_argument("--project", default="ppo-repro")
    p.add_argument("--entity", default=None)
    p.add_argument("--dir", type=Path, default=None, help="where wandb keeps its files")
    p.add_argument("--done", type=Path, default=None, help="marker file to write when every run is exported")
    p.add_argument("run_dirs", nargs="+", type=Path)
    args = p.parse_args(argv)
    if args.mode == "offline":
        os.environ["WANDB_MODE"] = "offline"  # belt and braces: no network even if a key is configured
    else:
        server = os.environ.get("WANDB_BASE_URL", DEFAULT_SERVER)
        problem = unreachable(server)
        if problem:
            print(f"error: wandb mode online: {problem}; nothing was exported and the records are untouched. "
                  "Set wandb: {mode: offline} in config/config.yaml (then `wandb sync` the runs where there is a "
                  "network), or tracking: none", file=sys.stderr)
            return 2
    try:
        ids = [export_run(d, args.mode, args.project, args.dir, args.entity) for d in args.run_dirs]
    except RunDataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.done:
        args.done.parent.mkdir(parents=True, exist_ok=True)
        args.done.write_text("\n".join(ids) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
