"""Train one RLHF run and write its records:

    python -m ppo.pipeline.rlhf_job --variant clip_0.2 --seed 0 --out results/rlhf/clip_0.2/seed0 \\
        [--set reference_kl.beta=0.1 --set updates=40] [--models-cache results/rlhf/models] [--pipeline-seeds]

(``--pipeline-seeds``: the seed also seeds the grammar, the SFT model and the reward model, as a study with
``pipeline_seeds: true`` does; ppo.rlhf.config.pipeline_seeded)

or one run of a study (experiments/studies/rlhf.yaml, ppo/pipeline/rlhf_study.py), as the workflow does, refusing a run
whose configuration no longer resolves to the planned digest:

    python -m ppo.pipeline.rlhf_job --study rlhf --scale reduced --cell clip_0.2-ref0.1 --seed 0 --digest <d> \\
        --out results/rlhf/reduced/runs/rlhf_grammar/clip_0.2-ref0.1/seed0 --models-cache results/rlhf/reduced/models

or only the starting models of a study's setting (workflow/rules/rlhf.smk: one job per distinct models key):

    python -m ppo.pipeline.rlhf_job --study rlhf --scale reduced --build-models <key> --models-cache results/rlhf/reduced/models

or copy a study's finished runs from elsewhere instead of training them (published with the project, or the same run
of another study), as the plan the workflow wrote says (ppo.pipeline.rlhf_study.write_copy_plan): every source is
checked first (the run's task, setting, seed and config digest; each record as its manifest hashed it), then all are
copied, or none:

    python -m ppo.pipeline.rlhf_job --copy-plan results/rlhf/full/plans/copy_published-<key>.json

Writes updates.parquet (per update, or per n for best_of_n), samples.parquet (responses as text),
timing.parquet (wall-clock seconds, apart from the deterministic records) and manifest.json last. The SFT
policy and reward model depend only on the language, model, SFT and reward-model settings: with
--models-cache they are built once and shared by every run (seed, surrogate, β) that has the same ones.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import torch
import yaml

from ..config.errors import ConfigError
from ..rlhf.config import RLHF_DIR, RLHFConfig, load_variant, pipeline_seeded
from ..rlhf.language import Language
from ..rlhf.model import Transformer
from ..rlhf.train import Models, build_models, models_key, train
from ..training import records
from .rlhf_study import RLHFRun, RLHFStudy, find_run, read_copy_plan, run_fields
from .study import load_study


def models_path(cfg: RLHFConfig, cache: Path) -> Path:
    return Path(cache) / f"models-{models_key(cfg)}.pt"


def cached_models(cfg: RLHFConfig, cache: Path | None) -> Models:
    """build_models, or its saved result for the same settings (torch.save of the two state dicts)."""
    path = models_path(cfg, cache) if cache else None
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


def _resolve(args) -> tuple:
    """(variant name, label, preset, config, manifest fields of the study's run) from the options."""
    if args.variant is not None:
        extra = parse_sets(args.set)
        variant = load_variant(args.variant, args.rlhf_dir, **extra)
        cfg = pipeline_seeded(variant.config, args.seed) if args.pipeline_seeds else variant.config
        return variant, cfg, {"variant": variant.name, "variant_label": variant.label, "set": extra,
                              "run_id": f"{variant.preset}/{variant.name}/seed{args.seed}",
                              "task": variant.preset, "pipeline_seeds": args.pipeline_seeds}

    study = load_study(args.study, args.scale, args.seeds)
    if getattr(study, "kind", None) != "rlhf":
        raise ConfigError(f"{study.path}: study {args.study} is not an RLHF study (kind: rlhf)")
    if args.build_models is not None:
        models = study.models()
        if args.build_models not in models:
            raise ConfigError(f"{study.path}: no setting of study {args.study} at scale {args.scale} starts from "
                              f"models {args.build_models!r}; its models: {sorted(models)}")
        return None, models[args.build_models].config, {}
    run = find_run(study, args.cell, args.seed)
    if args.digest is not None and args.digest != run.config_digest:
        raise ConfigError(f"{study.path}: run {run.run_id} now resolves to configuration {run.config_digest}, "
                          f"not the planned {args.digest}; re-plan (run snakemake again)")
    variant = load_variant(run.variant.variant, args.rlhf_dir)
    return variant, run.config, run_fields(study, run)


def source_manifest(source: Path, study: RLHFStudy, run: RLHFRun) -> dict:
    """The manifest of the finished run in ``source``, once it is checked to be ``run`` (same task, setting, seed and
    config digest) with every record there and as its manifest hashed it; else ConfigError in one line naming the
    file."""
    path = source / "manifest.json"
    manifest = records.manifest_to_copy(source)
    for field, expected in (("task", run.task), ("variant", run.variant.name), ("seed", run.seed),
                            ("config_digest", run.config_digest)):
        if manifest.get(field) != expected:
            raise ConfigError(f"{path}: field {field} is {manifest.get(field)!r}, but run {run.run_id} needs "
                              f"{expected!r}: not the same run")
    records.check_records_to_copy(source, manifest, study.run_files[:-1])
    return manifest


def copy_runs(plan: Path) -> list[Path]:
    """Copy the runs of an RLHF copy plan (ppo.pipeline.rlhf_study.read_copy_plan): every source checked first, then
    each run's records byte for byte and its manifest last, with this study's fields and ``copied_from``."""
    study, runs = read_copy_plan(plan, load_study)
    checked = [source_manifest(source, study, run) for run, _, source in runs]
    for (run, folder, source), manifest in zip(runs, checked):
        for name in study.run_files[:-1]:
            records.atomic_write(folder / name, lambda tmp, name=name: shutil.copyfile(source / name, tmp))
        origin = {"run_dir": str(source), "study": manifest.get("study"), "scale": manifest.get("scale")}
        records.write_json({**manifest, **run_fields(study, run), "copied_from": origin}, folder / "manifest.json")
        print(f"copied {source} -> {folder}", flush=True)
    return [folder for _, folder, _ in runs]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", help="experiments/rlhf/variants/<name>.yaml (or --study, --scale and --cell)")
    p.add_argument("--study", help="experiments/studies/<name>.yaml, an RLHF study")
    p.add_argument("--scale", help="a scale of --study")
    p.add_argument("--seeds", type=int, default=None, help="the pipeline's seeds override of the study's scale")
    p.add_argument("--cell", help="a setting of --study: <variant>-ref<beta> (a run folder's name)")
    p.add_argument("--digest", help="the configuration digest the workflow planned for the run")
    p.add_argument("--build-models", metavar="KEY", help="only build the starting models with this key (of --study)")
    p.add_argument("--seed", type=int)
    p.add_argument("--pipeline-seeds", action="store_true",
                   help="with --variant: the seed also seeds the grammar, the SFT model and the reward model")
    p.add_argument("--out", type=Path, help="folder for the run's records")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override a setting last")
    p.add_argument("--models-cache", type=Path, help="folder where the SFT and reward models are kept and reused")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--copy-plan", type=Path, metavar="FILE",
                   help="copy the finished runs this plan names (written by the workflow) instead of training")
    p.add_argument("--rlhf-dir", type=Path, default=RLHF_DIR, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.copy_plan is not None:
        try:
            copy_runs(args.copy_plan)
        except ConfigError as err:
            print(f"error: {' '.join(str(err).split())}; nothing was copied", file=sys.stderr)
            return 2
        return 0
    if (args.variant is None) == (args.study is None):
        p.error("give either --variant or --study (with --scale and --cell, or --build-models)")
    if args.study is not None and (args.scale is None or (args.cell is None) == (args.build_models is None)):
        p.error("--study needs --scale and either --cell or --build-models")
    if args.build_models is not None and args.models_cache is None:
        p.error("--build-models needs --models-cache (where the models are written)")
    if args.build_models is None and (args.seed is None or args.out is None):
        p.error("a run needs --seed and --out")
    if args.study is not None and (args.set or args.pipeline_seeds):
        p.error("--set and --pipeline-seeds apply to --variant runs; a study's settings come from its file")
    torch.set_num_threads(args.threads)
    try:
        variant, cfg, fields = _resolve(args)
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    folders = ([args.out] if args.out else []) + ([args.models_cache] if args.models_cache else [])
    problem = records.unwritable(folders)
    if problem:
        print(f"error: {problem}; nothing was trained", file=sys.stderr)
        return 2
    code, start, cpu_start = records.git_state(), time.time(), time.process_time()
    if args.build_models is not None:
        cached_models(cfg, args.models_cache)  # written to a temporary file and renamed (records.atomic_write)
        print(f"wrote {models_path(cfg, args.models_cache)}, {time.time() - start:.1f} s", flush=True)
        return 0
    models = cached_models(cfg, args.models_cache)
    result = train(cfg, args.seed, models, log=lambda msg: print(msg, flush=True))
    records.write_parquet(result.updates, args.out / "updates.parquet")
    records.write_parquet(result.samples, args.out / "samples.parquet")
    records.write_parquet(result.timing, args.out / "timing.parquet")
    manifest = {"study": "rlhf", **fields, "preset": variant.preset, "overrides": variant.overrides,
                "seed": args.seed, "config": cfg.to_dict(), "models_key": models_key(cfg), "models": result.info,
                "status": result.status, "diverged_at_update": result.diverged_at_update,
                "diverged_reason": result.diverged_reason, "wall_seconds": time.time() - start,
                "cpu_seconds": time.process_time() - cpu_start,  # core-seconds: more than the wall with threads > 1
                "threads": args.threads, "git": code, "code": code, "packages": records.package_versions(),
                "host": records.host_info(), "platform": records.numerics_platform()}
    records.write_json(manifest, args.out / "manifest.json")  # last: its presence means the run finished
    print(f"wrote {args.out}: {len(result.updates)} rows, {result.status}, {time.time() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
