"""Check finished runs against this machine: retrain each one's first updates and compare the records bit for bit.

    ./repro verify published/table1/paper/runs/Hopper-v5/clip_0.2/seed0 [--updates 3]
    ./repro verify published/rlhf/full/runs/rlhf_grammar/clip_0.2-ref0.1/seed0 [--models-cache DIR]

A MuJoCo or Atari run is retrained as ppo.training.verify says. An RLHF run (its manifest names a ``models_key``)
starts from models built by a program of its config (the seeded grammar, the SFT policy pretrained on it, the reward
model trained on gold-labelled pairs): they are built again here (1-7 minutes at the full scale on one core) and what
the manifest records of them (the SFT loss, the reward model's accuracy and loss, ...; not their build times) is
compared first; then its first ``--updates`` updates (every recorded column, including the held-out evaluation at
update 0) and the responses sampled in them. ``--models-cache`` takes the models from a cache folder instead (a
study's ``results/rlhf/<scale>/models``): quicker, but then the models are not rebuilt, only the updates checked.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch

from ..config.errors import ConfigError
from ..rlhf.config import RLHFConfig, build
from ..rlhf.train import build_models, models_key, train
from ..training import records
from ..training import verify as training_verify
from ..training.verify import describe, first_difference, plain, what_a_difference_means
from .publish import WINDOW_STEPS, per_window
from .rlhf_job import cached_models, models_path


def models_measures(info: dict) -> dict:
    """What a run's manifest records of its starting models that the config and seeds determine (build times and
    the cache's path do not)."""
    return {k: v for k, v in info.items() if k != "cached" and not k.endswith("_seconds")}


def verify_rlhf(run_dir: Path, manifest: dict, updates: int, models_cache: Path | None) -> tuple[bool, str]:
    """(identical, one paragraph saying what was compared and what it found) for an RLHF run."""
    source = run_dir / "manifest.json"
    cfg = build(RLHFConfig, manifest["config"], str(source))
    if models_key(cfg) != manifest.get("models_key"):
        raise ConfigError(f"{source}: field models_key is {manifest.get('models_key')!r}, but its config's models "
                          f"are {models_key(cfg)!r}: the record does not describe one run")
    threads = torch.get_num_threads()
    torch.set_num_threads(int(manifest.get("threads") or 1))
    try:
        cached = models_cache is not None and models_path(cfg, models_cache).is_file()
        models = cached_models(cfg, models_cache) if cached else build_models(cfg)  # nothing written either way
        result = train(cfg, manifest["seed"], models, until=updates)
    finally:
        torch.set_num_threads(threads)
    recorded_models = models_measures(manifest.get("models") or {})
    here_models = models_measures(models.info)
    difference = next((f"the starting models: {name} recorded {recorded_models.get(name)!r}, here "
                       f"{plain(here_models[name]) if name in here_models else None!r}"
                       for name in sorted(set(recorded_models) | set(here_models))
                       if name not in here_models or recorded_models.get(name) != plain(here_models[name])), None)
    # best-of-n evaluates the SFT policy, one row per n, in full; a trained run's first updates
    key = "update" if "update" in result.updates.columns else "n"
    recorded = pd.read_parquet(run_dir / "updates.parquet").iloc[:len(result.updates)].reset_index(drop=True)
    samples = pd.read_parquet(run_dir / "samples.parquet")
    if key == "update":
        samples = samples[samples["update"] < len(result.updates)].reset_index(drop=True)
    # the responses the record keeps (a published run keeps some updates' only: ppo.pipeline.publish.rlhf_published)
    kept = pd.MultiIndex.from_frame(samples[[key, "index"]])
    here_samples = result.samples[pd.MultiIndex.from_frame(result.samples[[key, "index"]]).isin(kept)]
    difference = (difference or first_difference(recorded, result.updates, "update row", key=key)
                  or first_difference(samples, here_samples.reset_index(drop=True), "sample", key=key))
    there = describe(records.recorded_platform(manifest), manifest.get("packages") or {})
    here = describe(records.numerics_platform(), records.package_versions())
    origin = f"taken from {models_cache}, not rebuilt" if cached else "built again"
    compared = (f"the starting models ({origin}: {len(here_models)} measures), {len(result.updates)} update rows and "
                f"{len(samples)} sampled responses of {manifest.get('run_id', run_dir)}")
    if difference is None:
        return True, f"identical: {compared} equal the records bit for bit. Trained on {there}; here {here}."
    return False, (f"differs in {difference}. Compared {compared}. Trained on {there}; here {here}: "
                   f"{what_a_difference_means(manifest)}.")


def verify(run_dir: Path, updates: int = 3, models_cache: Path | None = None) -> tuple[bool, str]:
    manifest = training_verify.read_manifest(run_dir)  # or ConfigError, one line naming the file and the field
    if "models_key" in manifest:
        return verify_rlhf(run_dir, manifest, updates, models_cache)
    return training_verify.verify(run_dir, updates, windowing=(per_window, WINDOW_STEPS))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Exit status: 0 identical, 1 differs, 2 the run cannot be read.")
    p.add_argument("runs", nargs="+", type=Path, help="folders of finished runs (each holds manifest.json)")
    p.add_argument("--updates", type=int, default=3, help="iterations (RLHF: updates) to retrain (default 3)")
    p.add_argument("--models-cache", type=Path, default=None,
                   help="RLHF: take the starting models from this folder when it has them (not rebuilt then)")
    args = p.parse_args(argv)
    if args.updates < 1:
        p.error("--updates must be at least 1")
    status = 0
    for run_dir in args.runs:
        try:
            identical, text = verify(run_dir, args.updates, args.models_cache)
        except (ConfigError, OSError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"{run_dir}: {text}", flush=True)
        status = max(status, 0 if identical else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
