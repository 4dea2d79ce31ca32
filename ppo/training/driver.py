"""Train a *group* of independent runs of one task in one process, with any algorithm of ppo/algorithms.

The driver around the algorithms: per-run seeds and environments, the iteration loop, divergence
detection, progress lines, checkpoints (resume is bit-identical, tests/training/test_checkpoint.py) and the run
records. Every run in the group has its own seeds, environments, parameters, optimizer state and
normalizer; they share only batched tensor operations, so a run's records do not depend on which runs
share its group (tests/training/test_group_training.py). The PPO update itself reads top to bottom in
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


# A checkpoint's records as columns, one tensor per field and run. A late A2C checkpoint on Atari is mostly records
# (125,000 updates × 16 fields): as pickled rows they took 23 of its 31 MB at 8.85M agent steps and about 1 s to save,
# as columns 13 MB and 0.3 s, encoding included. A checkpoint carried to the repository again (ppo.pipeline.carry)
# then grows by appending to them, which git stores as a delta: 5.2 against 8.2 MB per carry of Breakout's A2C
# seed 2 (docs/performance.md, "Checkpoints' records as columns")
ROW_TYPES = {bool: torch.bool, int: torch.int64, float: torch.float64}


def rows_as_columns(rows: list[dict]) -> dict | list[dict]:
    """One run's rows as {"names": [field, ...], "columns": [tensor, ...]}, each value kept exactly (a Python bool,
    int or float in bool, int64 or float64); the rows as they are where they are not all of one shape and type."""
    names = list(rows[0]) if rows else []
    if not names or any(len(row) != len(names) for row in rows):
        return rows
    columns = []
    for name in names:
        values = [row.get(name) for row in rows]  # a row without the field gives None: not a column
        kinds = {type(v) for v in values}
        if len(kinds) != 1 or (kind := kinds.pop()) not in ROW_TYPES:
            return rows
        columns.append(torch.tensor(values, dtype=ROW_TYPES[kind]))
    return {"names": names, "columns": columns}


def rows_from_columns(saved: dict | list[dict]) -> list[dict]:
    """The rows ``rows_as_columns`` stored (rows stored as rows, by earlier checkpoints too, come back as they are)."""
    if isinstance(saved, list):
        return saved
    columns = [column.tolist() for column in saved["columns"]]  # bool, int and float: the values the rows held
    return [dict(zip(saved["names"], values)) for values in zip(*columns)]


@dataclass
class GroupProgress:
    """What a group's training has recorded so far, per run; with the algorithm's, environments' and sampling
    state, what a checkpoint holds (its keys are :data:`CHECKPOINT_KEYS`, unchanged since 2026-11-26; the records
    saved as columns since 2026-11-29, :func:`rows_as_columns`, and read in either form)."""

    update_rows: list[list[dict]]
    timing_rows: list[list[dict]]  # wall-clock measures, kept apart from the deterministic records
    alive: np.ndarray
    diverged: list[tuple[int | None, str | None]]
    parts: list[dict]  # where each stretch of the training ran (docs/reproducibility.md)
    iteration: int = 0

    @classmethod
    def start(cls, runs: int, code: dict) -> GroupProgress:
        return cls([[] for _ in range(runs)], [[] for _ in range(runs)], np.ones(runs, dtype=bool),
                   [(None, None)] * runs, [training_part(0, 0, code)])

    def restore(self, state: dict, step: int, code: dict) -> None:
        """Take a checkpoint's records; ``step`` and ``code`` start the new part."""
        runs = len(self.alive)
        self.update_rows = [rows_from_columns(rows) for rows in state["update_rows"]]
        self.timing_rows = [rows_from_columns(rows) for rows in state["timing_rows"]]
        self.alive, self.diverged = np.array(state["alive"]), [tuple(x) for x in state["diverged"]]
        self.iteration = int(state["iteration"])
        # a checkpoint carried without its replay buffer (ppo.pipeline.carry.without_replay_buffer): this part
        # starts with an empty one, which the part says
        dropped = {"replay_buffer_dropped": int(state["replay_buffer_dropped"])} if "replay_buffer_dropped" in state else {}
        # a checkpoint from before parts were recorded: its first part's processor is unknown
        self.parts = [*state.get("parts", [{"from_iteration": 0, "from_step": 0, "platform": None}]),
                      training_part(self.iteration, step, code) | dropped]
        if (len(self.update_rows) != runs or len(self.timing_rows) != runs or self.alive.shape != (runs,)
                or len(self.diverged) != runs):
            raise ValueError(f"it holds the records of {len(self.update_rows)} runs, the group has {runs}")

    def saved_records(self) -> dict:
        """The records as a checkpoint holds them: each run's as columns."""
        return {"update_rows": [rows_as_columns(rows) for rows in self.update_rows],
                "timing_rows": [rows_as_columns(rows) for rows in self.timing_rows]}

    def record(self, recorded: np.ndarray, steps: np.ndarray, steps_before: np.ndarray,
               stats: dict[str, np.ndarray], finite: np.ndarray, seconds: float, rollout_seconds: float,
               wall_time: float) -> list[int]:
        """This iteration's rows for the runs still recording; the runs that diverged in it are returned."""
        iteration, newly_diverged = self.iteration, []
        for g in np.flatnonzero(recorded):
            self.update_rows[g].append({
                "update": iteration, "global_step": int(steps[g]), **{k: float(v[g]) for k, v in stats.items()},
                "diverged": not bool(finite[g]),
            })
            self.timing_rows[g].append({
                "update": iteration, "global_step": int(steps[g]),
                "sps": float(steps[g] - steps_before[g]) / seconds, "rollout_seconds": rollout_seconds,
                "optimize_seconds": seconds - rollout_seconds, "wall_time": wall_time,
            })
            if not finite[g]:
                self.alive[g] = False
                self.diverged[g] = (int(steps[g]), "non-finite loss, parameters or KL after update")
                newly_diverged.append(int(g))
        return newly_diverged


def check_group(specs: list[RunSpec]) -> None:
    """Runs share a group only with the same task and every setting that is not per-run."""
    first = specs[0]
    for s in specs:
        if s.task != first.task or s.config.structural_key() != first.config.structural_key():
            raise ValueError(f"run {s.run_id} cannot share a group with {first.run_id}: "
                             "task, algorithm or a setting that is not per-run differ")


def iteration_stats(stats: dict, algo, spec) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
    """What one iteration of the algorithm returned (``stats``), as statistics per run (float64); which runs
    are still finite (parameters and every statistic not allowed NaN); and the rollout's seconds."""
    rollout_seconds = stats.pop("rollout_seconds", math.nan)
    finite = algo.finite().numpy()  # the parameters, once: a pass over every run's tensors
    stats = {k: np.asarray(v.detach() if isinstance(v, torch.Tensor) else v, dtype=np.float64).reshape(len(finite))
             for k, v in stats.items()}
    finite &= np.all([np.isfinite(v) | np.isnan(v) & (k in spec.nan_allowed) for k, v in stats.items()], axis=0)
    return stats, finite, rollout_seconds


# With checkpoint_seconds, the process spends at least this many times a save's CPU time training before the next
# save: ACER's checkpoint holds its replay buffer (GBs), whose save may take longer than a minute's share. CPU time,
# not wall clock: a grid runs at nice 19, and a save during a burst of other work once took over 26 s of wall clock,
# which held the next save off for most of an hour after the burst had passed (2026-12-06)
SAVE_TIME_FACTOR = 100


def train_group(specs: list[RunSpec], log=print, checkpoint: Path | None = None,
                checkpoint_every: int = 0, max_iterations: int | None = None,
                checkpoint_seconds: float = 0.0) -> list[RunResult]:
    """Train the runs of ``specs`` together. With ``checkpoint``, the whole group state is saved there
    every ``checkpoint_every`` iterations, and a later call resumes from it, with records identical to an
    uninterrupted run (tests/training/test_checkpoint.py). With ``checkpoint_seconds``, a save also waits that long
    after the last one (or the start), and SAVE_TIME_FACTOR times the last save's CPU time: A2C on Atari updates
    every 80 agent steps (0.09 s) and its checkpoint holds every update's records (benchmarks/checkpoint_cost.py).
    ``max_iterations`` stops after that many iterations, the records then being the start of the full runs'
    (``ppo.training.verify``); such records are never written."""
    if max_iterations is not None and any(s.out_dir is not None for s in specs):
        raise ValueError("max_iterations trains the start of a run only: its records are not to be written")
    check_group(specs)
    cfg, task, G = specs[0].config, specs[0].task, len(specs)

    # ---- set-up: per-run seeds and environments; the algorithm builds its networks from the context
    code = records.git_state()  # at the start: the code that ran, even if the tree changes during training
    ctx = group_context(task, [s.config for s in specs], [s.seed for s in specs])
    spec = algorithm_spec(cfg.algorithm)
    algo = spec.build(ctx)
    progress = GroupProgress.start(G, code)
    fingerprint = [(s.run_id, s.task, s.seed, json.dumps(s.config.to_dict(), sort_keys=True),
                    json.dumps(env_protocol_record(s.task, s.config), sort_keys=True), SCHEMA_VERSION) for s in specs]

    def save_checkpoint() -> None:
        state = {"fingerprint": fingerprint, "iteration": progress.iteration, "algorithm": algo.state_dict(),
                 "sample_rng": [g.get_state() for g in ctx.sample_gens], "envs": ctx.envs.state(),
                 "log": ctx.log.state(), **progress.saved_records(),
                 "alive": progress.alive.tolist(), "diverged": progress.diverged, "parts": progress.parts}
        records.atomic_write(checkpoint, lambda p: torch.save(state, p))

    state = load_checkpoint(Path(checkpoint), log) if checkpoint is not None else None
    if state is not None:
        if [current_fingerprint(f) for f in state["fingerprint"]] != fingerprint:
            log(f"checkpoint {checkpoint} belongs to other runs or settings; starting from scratch")
        else:
            try:
                restore_group(state, algo, ctx, progress, code)
            except Exception as err:  # noqa: BLE001 - half-restored state: set the file aside, start afresh
                ctx.envs.close()
                set_aside(Path(checkpoint), err, log)
                return train_group(specs, log, checkpoint, checkpoint_every, checkpoint_seconds=checkpoint_seconds)
            log(f"resumed from {checkpoint} at iteration {progress.iteration + 1}")

    def budget_left() -> np.ndarray:
        if algo.num_iterations is not None:
            return np.full(G, progress.iteration < algo.num_iterations)
        return ctx.log.steps < cfg.total_steps  # CEM: generations until each run spent its steps

    last_log, last_save, last_save_cpu, cpu_gap = 0.0, time.perf_counter(), time.process_time(), 0.0
    while (progress.alive.any() and (budget_left() & progress.alive).any()
           and (max_iterations is None or progress.iteration < max_iterations)):
        t0 = time.perf_counter()
        recorded = progress.alive & budget_left()
        steps_before = ctx.log.steps.copy()
        stats, finite, rollout_seconds = iteration_stats(algo.iterate(progress.iteration), algo, spec)
        seconds = time.perf_counter() - t0
        for g in progress.record(recorded, ctx.log.steps, steps_before, stats, finite, seconds, rollout_seconds,
                                 time.perf_counter() - ctx.log.start):
            log(f"[{specs[g].run_id}] diverged at step {int(ctx.log.steps[g])}; recorded, the group goes on")
        progress.iteration += 1
        ctx.log.recording = progress.alive & budget_left()
        done = min(1.0, float(np.mean(np.minimum(ctx.log.steps, cfg.total_steps))) / cfg.total_steps)
        if time.perf_counter() - last_log > 10 or progress.iteration == 1 or done >= 1:  # the progress display reads it
            last_log = time.perf_counter()
            steps_per_second = float((ctx.log.steps - steps_before).sum()) / seconds
            log(progress_line(progress, ctx, cfg.total_steps, done, steps_per_second))
        if (checkpoint is not None and checkpoint_every and progress.iteration % checkpoint_every == 0
                and time.perf_counter() - last_save >= checkpoint_seconds
                and time.process_time() - last_save_cpu >= cpu_gap):
            started_cpu = time.process_time()
            save_checkpoint()
            last_save, last_save_cpu = time.perf_counter(), time.process_time()
            if checkpoint_seconds:  # saving keeps to about 1 % of the CPU time, however large the state
                cpu_gap = SAVE_TIME_FACTOR * (last_save_cpu - started_cpu)
    ctx.envs.close()

    results = [group_result(g, spec_g, ctx, progress) for g, spec_g in enumerate(specs)]
    wall_seconds, cpu_seconds = time.perf_counter() - ctx.log.start, ctx.log.cpu_seconds()  # the group's training
    for g, result in enumerate(results):
        if result.spec.out_dir is not None:
            write_run(result, algo.run_model(g), group=[s.run_id for s in specs], wall_seconds=wall_seconds,
                      git=code, parts=progress.parts, cpu_seconds=cpu_seconds)
    if checkpoint is not None and max_iterations is None:
        Path(checkpoint).unlink(missing_ok=True)  # every record is written; nothing left to resume
    return results


def restore_group(state: dict, algo, ctx, progress: GroupProgress, code: dict) -> None:
    """Put a checkpoint's state back: the algorithm's, the sampling generators', the environments' (emulator
    states included), the episode log's and the records so far."""
    algo.load_state_dict(state["algorithm"])
    for g, rng in zip(ctx.sample_gens, state["sample_rng"], strict=True):
        g.set_state(rng)
    ctx.envs.load_state(state["envs"])
    ctx.log.load_state(state["log"])  # its clock carries on: wall times and wall_seconds cover every part
    progress.restore(state, int(ctx.log.steps.min()), code)


def progress_line(progress: GroupProgress, ctx, total_steps: int, done: float, steps_per_second: float) -> str:
    """The line the progress display and the job's log read."""
    elapsed = time.perf_counter() - ctx.log.start
    runs = len(progress.alive)
    return (f"iteration {progress.iteration}  step {int(ctx.log.steps.min()):,}/{total_steps:,}  "
            f"{steps_per_second:,.0f} steps/s (group of {runs})  "
            f"ETA {elapsed / max(done, 1e-9) * (1 - done) / 60:.1f} min  "
            f"recent return {ctx.log.recent_return():.1f}  alive {progress.alive.sum()}/{runs}")


def group_result(g: int, spec: RunSpec, ctx, progress: GroupProgress) -> RunResult:
    """Run ``g``'s records as tables."""
    episodes = pd.DataFrame(ctx.log.episodes[g], columns=records.EPISODE_COLUMNS)
    episodes = episodes.astype({"global_step": "int64", "episode_length": "int64"})
    timing = pd.DataFrame(progress.timing_rows[g], columns=records.TIMING_COLUMNS)
    status = "completed" if progress.alive[g] else "diverged"
    return RunResult(spec, episodes, pd.DataFrame(progress.update_rows[g]), timing, status, *progress.diverged[g],
                     ctx.seeds[g])


CHECKPOINT_KEYS = {"fingerprint", "iteration", "algorithm", "sample_rng", "envs", "log", "update_rows", "timing_rows",
                   "alive", "diverged"}
# parts: absent from checkpoints written before 2026-11-26; replay_buffer_dropped: only in one carried without it
OPTIONAL_CHECKPOINT_KEYS = {"parts", "replay_buffer_dropped"}


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
    """Whether the parts ran on more than one numerics platform: processor key or package versions (the same key and
    packages, the same bits: records.numerics_platform); None when that is unknown (a part from before platforms
    were recorded, and the known ones agree). Any package counts, those that cannot move a float too: a false
    "resumed elsewhere" costs a reader a look at the parts, a false "same" would hide another draw."""
    def where(part: dict):
        platform = part.get("platform")
        return None if platform is None else (platform, json.dumps(part.get("packages") or {}, sort_keys=True))

    known = {where(p) for p in parts} - {None}
    if len(known) > 1:
        return True
    return None if any(where(p) is None for p in parts) else False


def write_run(result: RunResult, model: dict, group: list[str], wall_seconds: float, git: dict,
              parts: list[dict] | None = None, cpu_seconds: float | None = None) -> None:
    """Parquet tables, final model and normalizer, then the manifest (last: its presence means complete).
    ``parts``: where each stretch of the training ran (train_group); one part when it never stopped. ``wall_seconds``
    and ``cpu_seconds``: the whole group's (its process's CPU time, every part; None when a part did not keep it): a
    wall clock at nice 19 beside other work is longer than the training's cost, the CPU time is that cost."""
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
        "n_episodes": len(result.episodes), "group": group, "wall_seconds": wall_seconds, "cpu_seconds": cpu_seconds,
        "torch_threads": torch.get_num_threads(), "packages": records.package_versions(),
        "git": git, "host": records.host_info(), "platform": records.numerics_platform(),
        "training_parts": parts or [training_part(0, 0, git)],
        "resumed_on_another_platform": resumed_elsewhere(parts or []),
        # ACER resumed elsewhere from a checkpoint carried without its replay buffer: at these agent steps it
        # started again with an empty one (ppo.pipeline.carry.without_replay_buffer)
        "resumed_without_replay_buffer_at_steps": [p["from_step"] for p in parts or [] if "replay_buffer_dropped" in p],
        "env_protocol": env_protocol_record(spec.task, spec.config),
        **spec.meta,
        "sha256": records.record_hashes(out),  # what the records are: a later change of a bit is noticed
    }
    records.write_json(manifest, out / "manifest.json")
