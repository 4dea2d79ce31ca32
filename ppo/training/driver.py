"""Train a *group* of independent runs of one task in one process, with any algorithm of ppo/algorithms.

The driver around the algorithms: per-run seeds and environments, the iteration loop, divergence
detection, progress lines, checkpoints (resume is bit-identical, tests/test_checkpoint.py) and the run
records. Every run in the group has its own seeds, environments, parameters, optimizer state and
normalizer; they share only batched tensor operations, so a run's records do not depend on which runs
share its group (tests/test_group_training.py). The PPO update itself reads top to bottom in
ppo/algorithms/ppo.py.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..algorithms.rollout import group_context
from ..config.registry import algorithm_spec
from ..config.run_config import SCHEMA_VERSION, RunConfig
from ..config.schema import current_config
from ..envs import family_of
from . import records


@dataclass
class RunSpec:
    """One run: a task, a resolved config, a root seed, and where its records go."""

    run_id: str
    task: str
    config: RunConfig
    seed: int
    out_dir: Path | None = None  # None: keep records in memory only (tests, benchmarks)
    meta: dict = field(default_factory=dict)  # study, variant, label, paper_row... copied to the manifest


@dataclass
class RunResult:
    spec: RunSpec
    episodes: pd.DataFrame
    updates: pd.DataFrame  # per iteration: the algorithm's statistics
    timing: pd.DataFrame  # per iteration: steps/s, seconds spent, wall time (records.TIMING_COLUMNS)
    status: str  # "completed" | "diverged"
    diverged_at_step: int | None
    diverged_reason: str | None
    derived_seeds: dict


def train_group(specs: list[RunSpec], log=print, checkpoint: Path | None = None,
                checkpoint_every: int = 0, max_iterations: int | None = None) -> list[RunResult]:
    """Train the runs of ``specs`` together. With ``checkpoint``, the whole group state is saved there
    every ``checkpoint_every`` iterations and a later call resumes from it, with records identical to an
    uninterrupted run (tests/test_checkpoint.py). ``max_iterations`` stops after that many iterations,
    the records then being the start of the full runs' (``ppo.training.verify``); such records are never written."""
    if max_iterations is not None and any(s.out_dir is not None for s in specs):
        raise ValueError("max_iterations trains the start of a run only: its records are not to be written")
    cfg, task = specs[0].config, specs[0].task
    for s in specs:
        if s.task != task or s.config.structural_key() != cfg.structural_key():
            raise ValueError(f"run {s.run_id} cannot share a group with {specs[0].run_id}: "
                             "task, algorithm or a setting that is not per-run differ")
    G = len(specs)

    # ---- set-up: per-run seeds and environments; the algorithm builds its networks from the context
    code = records.git_state()  # at the start: the code that ran, even if the tree changes during training
    ctx = group_context(task, [s.config for s in specs], [s.seed for s in specs])
    seeds, start = ctx.seeds, ctx.log.start
    spec = algorithm_spec(cfg.algorithm)
    algo = spec.build(ctx)
    update_rows = [[] for _ in range(G)]
    timing_rows = [[] for _ in range(G)]  # wall-clock measures, kept apart from the deterministic records
    alive = np.ones(G, dtype=bool)
    diverged = [(None, None)] * G
    iteration = 0
    # Where each part of the training ran: a run resumed on another processor records both (docs/reproducibility.md)
    parts = [training_part(0, 0, code)]
    fingerprint = [(s.run_id, s.task, s.seed, json.dumps(s.config.to_dict(), sort_keys=True),
                    json.dumps(env_protocol_record(s.task, s.config), sort_keys=True), SCHEMA_VERSION) for s in specs]

    def save_checkpoint() -> None:
        state = {"fingerprint": fingerprint, "iteration": iteration, "algorithm": algo.state_dict(),
                 "sample_rng": [g.get_state() for g in ctx.sample_gens], "envs": ctx.envs.state(),
                 "log": ctx.log.state(), "update_rows": update_rows, "timing_rows": timing_rows, "alive": alive.tolist(), "diverged": diverged,
                 "parts": parts}
        records.atomic_write(checkpoint, lambda p: torch.save(state, p))

    state = load_checkpoint(Path(checkpoint), log) if checkpoint is not None else None
    if state is not None:
        if [current_fingerprint(f) for f in state["fingerprint"]] != fingerprint:
            log(f"checkpoint {checkpoint} belongs to other runs or settings; starting from scratch")
        else:
            try:
                algo.load_state_dict(state["algorithm"])
                for g, rng in zip(ctx.sample_gens, state["sample_rng"], strict=True):
                    g.set_state(rng)
                ctx.envs.load_state(state["envs"])
                ctx.log.load_state(state["log"])
                update_rows, timing_rows = state["update_rows"], state["timing_rows"]
                alive, diverged = np.array(state["alive"]), [tuple(x) for x in state["diverged"]]
                iteration = int(state["iteration"])
                # a checkpoint from before parts were recorded: its first part's processor is unknown
                parts = [*state.get("parts", [{"from_iteration": 0, "from_step": 0, "platform": None}]),
                         training_part(iteration, int(ctx.log.steps.min()), code)]
                if len(update_rows) != G or len(timing_rows) != G or alive.shape != (G,) or len(diverged) != G:
                    raise ValueError(f"it holds the records of {len(update_rows)} runs, the group has {G}")
            except Exception as err:  # noqa: BLE001 - half-restored state: set the file aside, start afresh
                ctx.envs.close()
                set_aside(Path(checkpoint), err, log)
                return train_group(specs, log, checkpoint, checkpoint_every)
            start = ctx.log.start
            log(f"resumed from {checkpoint} at iteration {iteration + 1}")

    def budget_left() -> np.ndarray:
        if algo.num_iterations is not None:
            return np.full(G, iteration < algo.num_iterations)
        return ctx.log.steps < cfg.total_steps  # CEM: generations until each run spent its steps

    last_log = 0.0
    while alive.any() and (budget_left() & alive).any() and (max_iterations is None or iteration < max_iterations):
        t0 = time.perf_counter()
        recorded = alive & budget_left()
        steps_before = ctx.log.steps.copy()
        stats = algo.iterate(iteration)
        rollout_seconds = stats.pop("rollout_seconds", math.nan)
        stats = {k: np.asarray(v.detach() if isinstance(v, torch.Tensor) else v, dtype=np.float64).reshape(G)
                 for k, v in stats.items()}
        finite = algo.finite().numpy() & np.all([np.isfinite(v) | np.isnan(v) & (k in spec.nan_allowed)
                                                 for k, v in stats.items()], axis=0)
        seconds = time.perf_counter() - t0
        for g in np.flatnonzero(recorded):
            update_rows[g].append({
                "update": iteration, "global_step": int(ctx.log.steps[g]), **{k: float(v[g]) for k, v in stats.items()},
                "diverged": not bool(finite[g]),
            })
            timing_rows[g].append({
                "update": iteration, "global_step": int(ctx.log.steps[g]),
                "sps": float(ctx.log.steps[g] - steps_before[g]) / seconds, "rollout_seconds": rollout_seconds,
                "optimize_seconds": seconds - rollout_seconds, "wall_time": time.perf_counter() - start,
            })
            if not finite[g]:
                alive[g] = False
                diverged[g] = (int(ctx.log.steps[g]), "non-finite loss, parameters or KL after update")
                log(f"[{specs[g].run_id}] diverged at step {int(ctx.log.steps[g])}; recorded, the group goes on")
        iteration += 1
        ctx.log.recording = alive & budget_left()
        done = min(1.0, float(np.mean(np.minimum(ctx.log.steps, cfg.total_steps))) / cfg.total_steps)
        if time.perf_counter() - last_log > 10 or iteration == 1 or done >= 1:  # a line per ~10 s at most (the progress display reads it)
            last_log = time.perf_counter()
            elapsed = last_log - start
            log(f"iteration {iteration}  step {int(ctx.log.steps.min()):,}/{cfg.total_steps:,}  "
                f"{float((ctx.log.steps - steps_before).sum()) / seconds:,.0f} steps/s (group of {G})  "
                f"ETA {elapsed / max(done, 1e-9) * (1 - done) / 60:.1f} min  "
                f"recent return {ctx.log.recent_return():.1f}  alive {alive.sum()}/{G}")
        if checkpoint is not None and checkpoint_every and iteration % checkpoint_every == 0:
            save_checkpoint()
    ctx.envs.close()

    results = []
    for g, spec in enumerate(specs):
        ep = pd.DataFrame(ctx.log.episodes[g], columns=records.EPISODE_COLUMNS)
        ep = ep.astype({"global_step": "int64", "episode_length": "int64"})
        status = "completed" if alive[g] else "diverged"
        timing = pd.DataFrame(timing_rows[g], columns=records.TIMING_COLUMNS)
        result = RunResult(spec, ep, pd.DataFrame(update_rows[g]), timing, status, *diverged[g], seeds[g])
        if spec.out_dir is not None:
            write_run(result, algo.run_model(g), group=[s.run_id for s in specs],
                      wall_seconds=time.perf_counter() - start, git=code, parts=parts)
        results.append(result)
    if checkpoint is not None and max_iterations is None:
        Path(checkpoint).unlink(missing_ok=True)  # every record is written; nothing left to resume
    return results


CHECKPOINT_KEYS = {"fingerprint", "iteration", "algorithm", "sample_rng", "envs", "log", "update_rows", "timing_rows",
                   "alive", "diverged"}
OPTIONAL_CHECKPOINT_KEYS = {"parts"}  # absent from checkpoints written before 2026-11-26


def training_part(iteration: int, step: int, code: dict) -> dict:
    """One stretch of a group's training on one machine: where it started and what ran it."""
    where = records.numerics_platform()
    return {"from_iteration": iteration, "from_step": step, "platform": where["key"], "processor": where["model_name"],
            "commit": code.get("commit"), "packages": records.package_versions()}


def current_fingerprint(entry) -> tuple:
    """A checkpoint's entry for one run with its config in the current schema: a group checkpointed before a
    change of the record's shape (entries of schema 1 have no version) resumes after it."""
    *fields, version = entry if len(entry) == 6 else (*entry, 1)
    if version == SCHEMA_VERSION:
        return (*fields, version)
    try:
        config = json.dumps(current_config(json.loads(fields[3]), version), sort_keys=True)
    except (TypeError, ValueError, KeyError, AttributeError):
        return tuple(entry)  # not a run's config: no match, the group starts afresh
    return (*fields[:3], config, fields[4], SCHEMA_VERSION)


def load_checkpoint(path: Path, log) -> dict | None:
    """The saved group state, or None. A checkpoint that cannot be read, or is not a group's state, is
    moved aside (never deleted) and the group starts from scratch: nothing is lost, its records are not
    written yet, and the retry does not fail on the same file."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True)  # tensors and plain containers only: no code runs
        if not isinstance(state, dict) or not CHECKPOINT_KEYS <= set(state) <= CHECKPOINT_KEYS | OPTIONAL_CHECKPOINT_KEYS:
            raise ValueError("not a group's saved state (other fields)")
        if not isinstance(state["fingerprint"], list) or not all(isinstance(f, (list, tuple)) for f in state["fingerprint"]):
            raise ValueError("its field fingerprint is not a list of runs")
        return state
    except Exception as err:  # noqa: BLE001 - any unreadable file means the same thing here
        set_aside(path, err, log)
        return None


def set_aside(path: Path, err: BaseException, log) -> None:
    """Move an unusable checkpoint to <name>.corrupt (or .corrupt.<n>: never over an earlier one)."""
    aside = path.with_name(path.name + ".corrupt")
    n = 0
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.corrupt.{n}")
    path.replace(aside)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # torch colours some of its messages
    first_line = next((line for line in text.splitlines() if line.strip()), "")[:200]
    log(f"checkpoint {path} is unreadable ({type(err).__name__}: {first_line}); moved to {aside.name}, "
        "starting from scratch")


def env_protocol_record(task: str, config: RunConfig) -> dict:
    """How the run's environments were made and what the learner saw of them, for the manifest."""
    return family_of(task).record(task, config)


def resumed_elsewhere(parts: list[dict]) -> bool | None:
    """Whether the parts ran on more than one numerics platform; None when that is unknown (a part
    from before platforms were recorded, and the known ones agree)."""
    known = {p.get("platform") for p in parts} - {None}
    if len(known) > 1:
        return True
    return None if len(known) < len({p.get("platform") for p in parts}) else False


def write_run(result: RunResult, model: dict, group: list[str], wall_seconds: float, git: dict,
              parts: list[dict] | None = None) -> None:
    """Parquet tables, final model and normalizer, then the manifest (last: its presence means complete).
    ``parts``: where each stretch of the training ran (train_group); one part when it never stopped."""
    spec, out = result.spec, Path(result.spec.out_dir)
    records.write_parquet(result.episodes, out / "episodes.parquet")
    records.write_parquet(result.updates, out / "updates.parquet")
    records.write_parquet(result.timing, out / "timing.parquet")
    records.atomic_write(out / "model.pt", lambda p: torch.save(model, p))
    manifest = {
        "run_id": spec.run_id, "algorithm": spec.config.algorithm_key, "task": spec.task, "env_version": family_of(spec.task).version(spec.task),
        "seed": spec.seed, "derived_seeds": result.derived_seeds, "status": result.status,
        "diverged_at_step": result.diverged_at_step, "diverged_reason": result.diverged_reason,
        "total_steps": spec.config.total_steps, "config_schema": SCHEMA_VERSION, "config": spec.config.to_dict(),
        "n_episodes": len(result.episodes), "group": group, "wall_seconds": wall_seconds,
        "torch_threads": torch.get_num_threads(), "packages": records.package_versions(),
        "git": git, "host": records.host_info(), "platform": records.numerics_platform(),
        "training_parts": parts or [training_part(0, 0, git)],
        "resumed_on_another_platform": resumed_elsewhere(parts or []),
        "env_protocol": env_protocol_record(spec.task, spec.config),
        **spec.meta,
        "sha256": records.record_hashes(out),  # what the records are: a later change of a bit is noticed
    }
    records.write_json(manifest, out / "manifest.json")
