#!/usr/bin/env python
"""What saving a group's checkpoint costs over a whole run, every N updates against at most once a minute.

    python benchmarks/checkpoint_cost.py --task ALE/Breakout-v5 --variants atari_a2c atari_ppo

A checkpoint holds the whole group state, the records of every update so far among it, so a save grows with the
run: A2C on Atari makes 125,000 updates of 80 agent steps in a 10M-step run, PPO 9,766 of 1,024. For each variant,
one run (one thread): the seconds of a steady update without checkpoints (the last of ``--iterations``), then the
state that run's checkpoint holds, its records repeated to a share of the full run's updates, saved
(``torch.save``, median of ``--repeats``) at 0 %, 50 % and 100 % of the run. The save time is close to linear in
the records held (a + b·k for k updates), so the whole run's saves sum in closed form:
- every ``--every`` updates (the pipeline's rule before checkpoint_seconds): U/N saves at k = N, 2N, …, U;
- at most once per ``--seconds`` (and every N updates): U·t/s saves, evenly over the run.
Printed per variant and form of the records (``--forms``: ``columns``, as the job saves them since 2026-11-29,
ppo.training.driver.rows_as_columns, the encoding timed with the save; ``rows``, pickled lists of dicts as before): the
updates of a run, seconds per update, a save at the start and at the end, the file at the end, and each rule's saves
as a share of the run's training time.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ppo.config.experiments import load_variant  # noqa: E402
from ppo.training.driver import RunSpec, rows_as_columns, rows_from_columns, train_group  # noqa: E402


def saved_state(task: str, variant: str, iterations: int, folder: Path) -> tuple[dict, float, int]:
    """A one-run group's checkpoint after ``iterations`` updates, the seconds of its last update (timed in a run
    without checkpoints) and the updates of a full run."""
    cfg = load_variant(variant).config
    updates = -(-cfg.total_steps // (cfg.num_envs * cfg.horizon))
    plain = train_group([RunSpec("bench", task, cfg, 0)], log=lambda _: None, max_iterations=iterations)
    last = plain[0].timing.iloc[-1]
    checkpoint = folder / f"{variant}.pt"
    train_group([RunSpec("bench", task, cfg, 0)], log=lambda _: None, checkpoint=checkpoint,
                checkpoint_every=iterations, max_iterations=iterations)
    state = torch.load(checkpoint, weights_only=True, map_location="cpu")
    return state, float(last.rollout_seconds + last.optimize_seconds), updates


def with_records_of(state: dict, k: int) -> dict:
    """The state with ``k`` updates' records, copies of the measured ones (new dicts, as a run's are: pickle
    would write a repeated object once)."""
    def grown(per_run):  # one list of rows per run (the checkpoint holds each as columns, or as rows before)
        return [[dict(rows[i % len(rows)]) for i in range(k)] for rows in map(rows_from_columns, per_run)]
    return {**state, "update_rows": grown(state["update_rows"]), "timing_rows": grown(state["timing_rows"])}


def save_seconds(state: dict, repeats: int, folder: Path, form: str) -> tuple[float, int]:
    """Median seconds of saving ``state`` (records as rows) to a file as the job does (the records encoded as
    columns when ``form`` says so, then torch.save; the rename is not timed), and its bytes."""
    times = []
    for _ in range(repeats):
        path = folder / "probe.pt"
        start = time.perf_counter()
        if form == "columns":
            torch.save({**state, **{key: [rows_as_columns(rows) for rows in state[key]]
                                    for key in ("update_rows", "timing_rows")}}, path)
        else:
            torch.save(state, path)
        times.append(time.perf_counter() - start)
    return statistics.median(times), path.stat().st_size


def cost_row(measured: dict, per_update: float, updates: int, every: int, seconds: float) -> list[str]:
    """The printed row's measures: ``measured`` maps the share of the run held (0, 0.5, 1) to (seconds, bytes)."""
    a = measured[0.0][0]
    b = (measured[1.0][0] - a) / updates  # seconds per update's records held
    training = updates * per_update
    saves_every = updates / every  # at k = N, 2N, ..., U: Σ (a + b·k) = n·a + b·N·n(n+1)/2
    old = saves_every * a + b * every * saves_every * (saves_every + 1) / 2
    saves_timed = min(saves_every, training / seconds)
    new = saves_timed * (a + b * updates / 2)
    return [f"{updates:,}", f"{per_update:.3f}", f"{a:.2f} s", f"{measured[0.5][0]:.2f} s", f"{measured[1.0][0]:.2f} s",
            f"{measured[1.0][1] / 1e6:.1f}", f"{old / training:.1%}", f"{new / training:.2%}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="ALE/Breakout-v5")
    p.add_argument("--variants", nargs="+", default=["atari_a2c", "atari_ppo"])
    p.add_argument("--iterations", type=int, default=60, help="updates trained to measure one (default 60)")
    p.add_argument("--every", type=int, default=10, help="updates between saves (config checkpoint_every)")
    p.add_argument("--seconds", type=float, default=60.0, help="at least this between saves (config checkpoint_seconds)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--forms", nargs="+", choices=["columns", "rows"], default=["columns", "rows"],
                   help="how the records are saved: as columns (the job's) and as pickled rows (before 2026-11-29)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{args.task}, one run, one thread; saves every {args.every} updates against at most once per "
          f"{args.seconds:.0f} s")
    header = ("variant", "records as", "updates/run", "s/update", "save at 0 %", "at 50 %", "at 100 %", "MB at 100 %",
              f"every {args.every}", f"≥ {args.seconds:.0f} s")
    print(" | ".join(header))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for variant in args.variants:
            state, per_update, updates = saved_state(args.task, variant, args.iterations, folder)
            grown = {share: with_records_of(state, max(1, int(share * updates))) for share in (0.0, 0.5, 1.0)}
            for form in args.forms:
                measured = {share: save_seconds(held, args.repeats, folder, form) for share, held in grown.items()}
                print(" | ".join([variant, form, *cost_row(measured, per_update, updates, args.every, args.seconds)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
