"""Train one RLHF run and write its records:

    python -m ppo.rlhf.run --variant clip_0.2 --seed 0 --out results/rlhf/clip_0.2/seed0 \\
        [--set reference_kl.beta=0.1 --set updates=40] [--models-cache results/rlhf/models]

Writes updates.parquet (per update, or per n for best_of_n), samples.parquet (responses as text),
timing.parquet (wall-clock seconds, apart from the deterministic records) and manifest.json last. The SFT
policy and reward model depend only on the language, model, SFT and reward-model settings: with
--models-cache they are built once and shared by every run (seed, surrogate, β) that has the same ones.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

import torch
import yaml

from .. import records
from ..config import ConfigError
from .config import RLHF_DIR, RLHFConfig, load_variant
from .language import Language
from .model import Transformer
from .train import Models, build_models, train


def models_key(cfg: RLHFConfig) -> str:
    """A digest of exactly the settings the starting models depend on."""
    parts = {k: dataclasses.asdict(getattr(cfg, k)) for k in ("language", "policy_model", "sft", "reward_model")}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def cached_models(cfg: RLHFConfig, cache: Path | None) -> Models:
    """build_models, or its saved result for the same settings (torch.save of the two state dicts)."""
    path = cache / f"models-{models_key(cfg)}.pt" if cache else None
    if path is None or not path.is_file():
        models = build_models(cfg)
        if path is not None:
            state = {"sft": models.sft.state_dict(), "reward": models.reward.state_dict(), "info": models.info}
            records.atomic_write(path, lambda tmp: torch.save(state, tmp))
        return models
    state = torch.load(path)
    lang = Language(cfg.language)
    sft = Transformer(lang.vocab_size, lang.seq_len, cfg.policy_model, "policy")
    reward = Transformer(lang.vocab_size, lang.seq_len, cfg.reward_model.model or cfg.policy_model, "scalar")
    sft.load_state_dict(state["sft"])
    reward.load_state_dict(state["reward"])
    return Models(lang, sft.requires_grad_(False), reward.requires_grad_(False), {**state["info"], "cached": str(path)})


def parse_sets(items: list[str]) -> dict:
    """["reference_kl.beta=0.1", "updates=40"] -> {"reference_kl": {"beta": 0.1}, "updates": 40}."""
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected field=value (dotted for a section: reference_kl.beta=0.1)")
        *sections, name = key.split(".")
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = yaml.safe_load(value)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", required=True, help="experiments/rlhf/variants/<name>.yaml")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", type=Path, required=True, help="folder for the run's records")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override a setting last")
    p.add_argument("--models-cache", type=Path, help="folder where the SFT and reward models are kept and reused")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rlhf-dir", type=Path, default=RLHF_DIR, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        extra = parse_sets(args.set)
        variant = load_variant(args.variant, args.rlhf_dir, **extra)
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    problem = records.unwritable([args.out] + ([args.models_cache] if args.models_cache else []))
    if problem:
        print(f"error: {problem}; nothing was trained", file=sys.stderr)
        return 2
    code, start = records.git_state(), time.time()
    cfg = variant.config
    models = cached_models(cfg, args.models_cache)
    result = train(cfg, args.seed, models, log=lambda msg: print(msg, flush=True))
    records.write_parquet(result.updates, args.out / "updates.parquet")
    records.write_parquet(result.samples, args.out / "samples.parquet")
    records.write_parquet(result.timing, args.out / "timing.parquet")
    manifest = {"study": "rlhf", "variant": variant.name, "variant_label": variant.label, "preset": variant.preset,
                "overrides": variant.overrides, "set": extra, "seed": args.seed, "config": cfg.to_dict(),
                "models_key": models_key(cfg), "models": result.info, "status": "completed",
                "wall_seconds": time.time() - start, "threads": args.threads, "code": code,
                "packages": records.package_versions(), "host": records.host_info()}
    records.write_json(manifest, args.out / "manifest.json")  # last: its presence means the run finished
    print(f"wrote {args.out}: {len(result.updates)} rows, {time.time() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
