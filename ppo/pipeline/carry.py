"""Unfinished training groups' checkpoints, carried to the next machine in the repository.

A paper-scale Atari run takes longer than a machine is held (3-5 h of one core against sessions of 3 h), and
the next session may get another machine. Finished runs travel as published records (ppo.pipeline.publish); an
unfinished group's checkpoint (about 10 MB for one Atari run: parameters, Adam's moments, emulator states)
travels here:

    python -m ppo.pipeline.carry save --from ../atari-grid --commit   # at the end of a session: grid-state/ := the grid's
    python -m ppo.pipeline.carry restore --into ../atari-grid         # before the grid starts: the newer of each
    python -m ppo.pipeline.carry unfinished --from ../atari-grid      # how far each unfinished group got, and where
    python -m ppo.pipeline.carry revision --studies atari             # the commit the carried groups last trained at

``grid-state/<study>/<scale>/checkpoints/<name>.pt`` mirrors ``<grid>/results/<study>/<scale>/checkpoints/``.
``save`` copies each checkpoint that is newer (a later iteration) than the committed one and removes committed
checkpoints the grid no longer has (their group finished: its runs are published records now). ``restore``
copies a committed checkpoint into the grid where the grid has none or an older one (another machine got
further), so the group resumes where any machine left it. The run's manifest then records each part's
processor (ppo.training.driver.training_part). Each save adds the changed checkpoints to the repository's history:
about 10 MB per unfinished Atari run and session.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from ..config.files import PROJECT_ROOT
from ..training import records
from ..training.driver import current_fingerprint

STATE = PROJECT_ROOT / "grid-state"
PUBLISHED = PROJECT_ROOT / "published"


def checkpoints(results: Path, studies: list[str] | None = None) -> dict[Path, Path]:
    """<study>/<scale>/checkpoints/<name>.pt (relative) -> the file, under a results folder; of ``studies`` only,
    when given."""
    found = {path.relative_to(results): path for path in sorted(results.glob("*/*/checkpoints/*.pt"))}
    return {relative: path for relative, path in found.items() if studies is None or relative.parts[0] in studies}


def finished(relative: Path, runs: list[str], roots: list[Path]) -> bool:
    """Whether every run of a checkpoint has its records (a manifest) under one of ``roots`` (results folders
    or published/): its group is done, and its checkpoint is a leftover."""
    study_scale = relative.parent.parent  # <study>/<scale>
    return bool(runs) and all(any((root / study_scale / "runs" / run / "manifest.json").exists() for root in roots)
                              for run in runs)


@dataclass(frozen=True)
class Saved:
    """What carry compares of a group checkpoint: how far it got, its runs, their settings (each run's id, task,
    seed and resolved config, read as the training job reads them: ppo.training.driver.current_fingerprint) and the
    commit its last part trained at. ``iteration`` is -1 for a file that is not a checkpoint."""

    iteration: int
    runs: tuple[str, ...] = ()
    settings: tuple = ()
    commit: str | None = None


# A checkpoint above this is not committed: ACER's holds its replay buffer of frames (about 6.8 GB per run at
# baselines' settings), no file for a repository; Atari's PPO and A2C checkpoints are 8-35 MB. Such a checkpoint
# travels without its replay buffer (``without_replay_buffer``) where that brings it under the limit.
MAX_CARRIED_BYTES = 200 * 2**20


def load(path: Path) -> dict:
    """A checkpoint's contents, its tensors mapped from the file rather than read (a replay buffer is GBs)."""
    return torch.load(path, weights_only=True, map_location="cpu", mmap=True)


def read(path: Path) -> Saved:
    try:
        state = load(path)
        parts = state.get("parts") or []
        return Saved(int(state["iteration"]), tuple(str(entry[0]) for entry in state["fingerprint"]),
                     tuple(_settings(entry) for entry in state["fingerprint"]),
                     str(parts[-1].get("commit")) if parts and parts[-1].get("commit") else None)
    except Exception:  # noqa: BLE001 - any unreadable file means the same here
        return Saved(-1)


def _settings(entry) -> tuple:
    try:
        return tuple(current_fingerprint(entry))
    except (IndexError, TypeError, ValueError):  # not a fingerprint the job writes: compared as it is
        return tuple(entry)


def without_replay_buffer(path: Path, target: Path) -> int | None:
    """Write to ``target`` the checkpoint at ``path`` with its replay buffer emptied; the number of segments left out
    goes in as ``replay_buffer_dropped``, which the resumed training records in its new part (the run then refills
    the buffer and waits for replay_start again, as at its start: another draw of the run, said so in its manifest).
    None, and nothing written, when the checkpoint holds no replay buffer."""
    state = load(path)
    algorithm = state.get("algorithm")
    buffer = algorithm.get("buffer") if isinstance(algorithm, dict) else None
    if not isinstance(buffer, dict) or "segments" not in buffer:
        return None
    dropped = len(buffer["segments"])
    light = {**state, "algorithm": {**state["algorithm"], "buffer": {"segments": [], "next": 0}},
             "replay_buffer_dropped": dropped}
    records.atomic_write(target, lambda tmp: torch.save(light, tmp))
    return dropped


def trained_later(a: Saved, b: Saved, repo: Path = PROJECT_ROOT) -> bool | None:
    """Whether ``a``'s last part ran code that descends from ``b``'s (git history of ``repo``); None when that is
    unknown (a commit missing or unrecorded, the same commit, or neither descends from the other)."""
    if not a.commit or not b.commit or a.commit == b.commit:
        return None
    def descends(new: str, old: str) -> bool:
        return subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", old, new],
                              capture_output=True).returncode == 0
    return True if descends(a.commit, b.commit) else False if descends(b.commit, a.commit) else None


def copy_newer(source: dict[Path, Path], target_root: Path, done: list[Path], settings_win: bool,
               write=None) -> list[str]:
    """Copy each source checkpoint to target_root/<relative> unless the target is as far or further, or the
    checkpoint's runs are finished under ``done``; a file that is not a checkpoint is never copied, and always
    replaced. A target of other settings (the same runs' folders, another config: a preset changed) is no older or
    newer than the source: the one whose last part trained at later code (git ancestry) wins; when that is unknown,
    ``settings_win`` says whether the source does (``save``: the grid's checkpoint is the one its code resumes or
    writes) or not (``restore``: the training job itself sets a checkpoint of other settings aside and starts
    afresh). Iterations alone would keep a stale checkpoint of more iterations for ever, restored on every machine
    over the new settings' progress. ``write(path, target)`` writes the copy (default: the file as it is) and returns
    what to add to its line, or None when it wrote nothing."""
    copied = []
    for relative, path in source.items():
        ours = read(path)
        target = target_root / relative
        if ours.iteration < 0 or finished(relative, list(ours.runs), done):
            continue
        if target.exists():
            theirs = read(target)
            if theirs.iteration >= 0 and theirs.settings == ours.settings and theirs.iteration >= ours.iteration:
                continue
            if theirs.iteration >= 0 and theirs.settings != ours.settings:
                later = trained_later(ours, theirs)
                if not (later if later is not None else settings_win):
                    continue
        if write is None:
            records.atomic_write(target, lambda tmp, path=path: shutil.copyfile(path, tmp))
            note = ""
        elif (note := write(path, target)) is None:
            continue
        copied.append(f"{relative} (iteration {ours.iteration}: {', '.join(ours.runs)}){note}")
    return copied


def in_variants(run: str, variants: list[str] | None) -> bool:
    """Whether a run id (<task>/<variant>/seed<k>) is of ``variants`` (None: any)."""
    return variants is None or Path(run).parent.name in variants


def of_variants(path: Path, variants: list[str] | None) -> bool:
    """Whether a group checkpoint holds a run of ``variants`` (None: any)."""
    return variants is None or any(in_variants(run, variants) for run in read(path).runs)


REMOVED = "removed (its group finished)"  # save's line for a checkpoint it deletes, counted by commit's message


def save(grid: Path, state: Path = STATE, studies: list[str] | None = None,
         variants: list[str] | None = None) -> list[str]:
    """``studies``: the grid's; the other grids' committed checkpoints are left alone (the Atari grid's while the
    MuJoCo grid saves). ``variants``: the ones the grid trains now; another variant's checkpoints (the Atari grid's A2C
    runs started elsewhere while it trains PPO) are neither committed nor removed."""
    results = grid / "results"
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no grid here (scripts/paper_grid.sh start makes one)")
    done = [results, PUBLISHED]
    running = {r: p for r, p in checkpoints(results, studies).items()
               if of_variants(p, variants) and not finished(r, list(read(p).runs), done)}
    too_large = {r: p.stat().st_size for r, p in running.items() if p.stat().st_size > MAX_CARRIED_BYTES}
    changes = copy_newer({r: p for r, p in running.items() if r not in too_large}, state, done, settings_win=True)

    def light(path: Path, target: Path) -> str | None:
        dropped = without_replay_buffer(path, target)
        if dropped is not None and target.stat().st_size <= MAX_CARRIED_BYTES:
            return (f", without its replay buffer ({dropped} segments, {path.stat().st_size / 2**30:.1f} GiB): on "
                    "this machine it resumes with it, elsewhere with an empty one")
        target.unlink(missing_ok=True)  # nothing carried rather than an earlier, shorter state
        return None

    changes += copy_newer({r: running[r] for r in too_large}, state, done, settings_win=True, write=light)
    changes += [f"{r}: not carried ({size / 2**30:.1f} GiB, above {MAX_CARRIED_BYTES // 2**20} MiB): it resumes on "
                "this machine only" for r, size in too_large.items() if not (state / r).exists()]
    for relative, path in checkpoints(state, studies).items():
        if relative not in running and of_variants(path, variants):
            path.unlink()
            changes.append(f"{relative}: {REMOVED}")
    return changes


def restore(grid: Path, state: Path = STATE, studies: list[str] | None = None) -> list[str]:
    """``studies``: the grid's (another grid's checkpoints would wait in this one's results/ for ever)."""
    return copy_newer(checkpoints(state, studies), grid / "results", [grid / "results", PUBLISHED], settings_win=False)


def budget_fraction(path: Path) -> float:
    """How much of its runs' budget a group checkpoint holds (agent steps done / total steps); 0 for a file that
    is not one. Iterations do not compare across algorithms (A2C's are 5 steps per environment, PPO's 128)."""
    try:
        state = load(path)
        config = json.loads(state["fingerprint"][0][3])
        return int(state["iteration"]) * int(config["num_envs"]) * int(config["horizon"]) / int(config["total_steps"])
    except Exception:  # noqa: BLE001 - any unreadable file means the same here
        return 0.0


# Above any new training job's priority (train_priority)
RESUMED_PRIORITY = 10**9
# New jobs: a study at a time where the grid asks for it (ranks from STUDY_TIERS on share the last tier), then a seed at
# a time (seeds from SEED_WAVES on share the last wave), then, where the grid asks, a variant at a time (ranks from
# VARIANT_RANKS on share the last), then the longest first; a job's expected seconds on one core
# (workflow/rules/common.smk) count up to VARIANT_SPAN - 1 (27.8 h), above any job's (an Atari run: 5-9 h). The
# largest new-group priority, STUDY_TIERS * STUDY_TIER_SPAN - 1, stays below RESUMED_PRIORITY.
STUDY_TIERS, STUDY_TIER_SPAN = 10, 10**8
SEED_WAVES, SEED_WAVE_SPAN = 100, 10**6
VARIANT_RANKS, VARIANT_SPAN = 10, 10**5


def train_priority(expected_seconds: float, checkpoint: Path, first_seed: int = 0, study_rank: int = 0,
                   variant_rank: int = 0) -> int:
    """A training job's Snakemake priority: a group with a checkpoint before every new group, the furthest (largest
    share of its budget) first: it publishes soonest, and a stopped session loses least, where Snakemake's tie order
    resumed a run 3 % done before one 62 % done (2026-11-28). Then new groups (new_group_priority)."""
    done = budget_fraction(checkpoint) if checkpoint.exists() else 0.0
    if done > 0:
        return RESUMED_PRIORITY + int(done * 10**6)
    return new_group_priority(expected_seconds, first_seed, study_rank, variant_rank)


def new_group_priority(expected_seconds: float, first_seed: int, study_rank: int = 0, variant_rank: int = 0) -> int:
    """A group without a checkpoint. By ``study_rank`` first, the lowest first: the grid of Table 1 and Figure 3 at ten
    seeds trains Table 1 before Figure 3 (config ``studies_in_order``; 0 for every study otherwise). Then by its lowest
    seed (``first_seed``), the lowest first: a grid of many seeds that stops partway (the ten-seed Table 1 takes many
    sessions) leaves whole seeds across its cells, each a table of its own (analysis.seeds.SeedCounts.common), rather
    than some cells at ten seeds and the rest at three. Then by ``variant_rank``, the lowest first: Figure 3's groups
    (one baseline's seeds 3-9 on one task) a baseline at a time, so that each comparison of PPO with one baseline
    is complete as early as it can be (analysis.seeds_needed.figure3_needed follows each pair as far as its cells
    go); 0 where the grid does not ask (order_ranks). Last, the longest first, which balances the cores.
    ppo.pipeline.remote orders its jobs by it too."""
    tier = STUDY_TIERS - 1 - min(max(study_rank, 0), STUDY_TIERS - 1)
    wave = SEED_WAVES - 1 - min(max(first_seed, 0), SEED_WAVES - 1)
    rank = VARIANT_RANKS - 1 - min(max(variant_rank, 0), VARIANT_RANKS - 1)
    return (tier * STUDY_TIER_SPAN + wave * SEED_WAVE_SPAN + rank * VARIANT_SPAN
            + min(int(expected_seconds), VARIANT_SPAN - 1))


def order_ranks(studies: list[str], study, group, in_order: bool) -> tuple[int, int]:
    """(study rank, variant rank) of ``study``'s new ``group`` for new_group_priority where the grid trains in order
    (config ``studies_in_order``): where ``studies`` names its study, and where the study file lists the first of
    its variants; (0, 0) otherwise. The pipeline (workflow/rules/common.smk) and ppo.pipeline.remote both use it."""
    if not in_order:
        return 0, 0
    listed = [variant.name for variant in study.variants]
    return studies.index(study.name), min(listed.index(run.variant.name) for run in group.runs)


def resumable(grid: Path, variants: list[str] | None = None) -> list[Path]:
    """The manifests (relative to the grid) of the unfinished runs that have a checkpoint, furthest (the largest
    share of their budget) first, of ``variants`` only when given: the grid asks Snakemake to train these first, so
    that a carried run resumes before new ones start. A run outside the grid's variants cannot be asked for."""
    results = grid / "results"
    done = [results, PUBLISHED]
    found = []
    for relative, path in checkpoints(results).items():
        saved = read(path)
        at, runs = saved.iteration, list(saved.runs)
        runs = [run for run in runs if in_variants(run, variants)]
        if at > 0 and runs and not finished(relative, runs, done):
            study_scale = relative.parent.parent
            share = budget_fraction(path)
            found += [(share, Path("results") / study_scale / "runs" / run / "manifest.json") for run in runs]
    return [manifest for _, manifest in sorted(found, key=lambda item: -item[0])]


def unfinished(grid: Path) -> list[str]:
    """One line per unfinished group with a checkpoint in the grid: its runs, how far (agent steps of the run's
    budget, from the iteration and the config the checkpoint holds) and where it trained (its parts' processors)."""
    results, lines = grid / "results", []
    for relative, path in checkpoints(results).items():
        try:
            state = load(path)
            config = json.loads(state["fingerprint"][0][3])
            total = int(config["total_steps"])
            done = min(total, int(state["iteration"]) * int(config["num_envs"]) * int(config["horizon"]))
            parts = state.get("parts") or []
        except Exception:  # noqa: BLE001 - any unreadable file means the same here
            lines.append(f"{relative}: not a readable checkpoint")
            continue
        runs = [str(entry[0]) for entry in state["fingerprint"]]
        if finished(relative, runs, [results, PUBLISHED]):
            continue
        processors = sorted({str(part.get("platform", "?")) for part in parts})
        lines.append(f"{', '.join(runs)}: {done:,} of {total:,} agent steps ({done / total:.0%}), iteration "
                     f"{state['iteration']}, {len(parts)} part(s) on {', '.join(processors) or 'unknown'}")
    return lines


def commit(changes: list[str], repo: Path = PROJECT_ROOT) -> None:
    """Commit grid-state/ alone, whatever else the work tree holds."""
    subprocess.run(["git", "-C", str(repo), "add", "-A", "grid-state"], check=True)
    staged = subprocess.run(["git", "-C", str(repo), "diff", "--cached", "--quiet", "--", "grid-state"])
    if staged.returncode == 0:
        return
    removed = sum(change.endswith(REMOVED) for change in changes)
    carried = len(changes) - removed
    summary = "; ".join([f"{carried} unfinished groups' checkpoints carried"] * bool(carried)
                        + [f"{removed} finished groups' checkpoints removed"] * bool(removed))
    message = f"grid-state: {summary}\n\n" + "\n".join(changes)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", message, "--", "grid-state"], check=True)


def revision(state: Path = STATE, studies: list[str] | None = None) -> tuple[str | None, Counter]:
    """(the commit the carried groups last trained at, how many groups each commit was last for): a grid that
    resumes them at other code says so (scripts/paper_grid.sh start). The most common commit when they disagree;
    None when nothing is carried or no part names its commit."""
    last = Counter(saved.commit for saved in map(read, checkpoints(state, studies).values()) if saved.commit)
    return (last.most_common(1)[0][0] if last else None), last


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save", help="grid-state/ := the grid's checkpoints (the newer of each)")
    s.add_argument("--from", dest="grid", type=Path, required=True, help="the grid's clone (holds results/)")
    s.add_argument("--commit", action="store_true", help="commit grid-state/ (and nothing else)")
    r = sub.add_parser("restore", help="copy committed checkpoints the grid lacks or has older")
    r.add_argument("--into", dest="grid", type=Path, required=True, help="the grid's clone (holds results/)")
    for command in (s, r):
        command.add_argument("--studies", nargs="+", default=None, metavar="STUDY",
                             help="only these studies' checkpoints (the grid's; default: all)")
    s.add_argument("--variants", nargs="+", default=None, metavar="VARIANT",
                   help="only these variants' checkpoints (the ones the grid trains now; default: all)")
    q = sub.add_parser("resumable", help="print the manifests of unfinished runs with a checkpoint, furthest first")
    q.add_argument("--from", dest="grid", type=Path, required=True, help="the grid's clone (holds results/)")
    q.add_argument("--variants", nargs="+", default=None, metavar="VARIANT",
                   help="only these variants' runs (the grid's: Snakemake cannot be asked for others)")
    v = sub.add_parser("revision", help="print the commit the carried groups (grid-state/) last trained at")
    v.add_argument("--studies", nargs="+", default=None, metavar="STUDY", help="only these studies' checkpoints")
    u = sub.add_parser("unfinished", help="print each unfinished group's runs, steps done and processors")
    u.add_argument("--from", dest="grid", type=Path, required=True, help="the grid's clone (holds results/)")
    args = p.parse_args(argv)
    if args.command == "unfinished":
        print("\n".join(unfinished(args.grid)) or "no unfinished group has a checkpoint")
        return 0
    if args.command == "revision":
        commit_, counts = revision(studies=args.studies)
        if commit_ is None:
            return 1
        if len(counts) > 1:
            print("carry: the carried groups last trained at several commits: "
                  + ", ".join(f"{c[:10]} ({n})" for c, n in counts.most_common()) + f"; {commit_[:10]} chosen",
                  file=sys.stderr)
        print(commit_)
        return 0
    if args.command == "resumable":
        for manifest in resumable(args.grid, args.variants):  # none: no output at all (an empty line would be a path to the grid)
            print(manifest)
        return 0
    try:
        changes = (save(args.grid, studies=args.studies, variants=args.variants) if args.command == "save"
                   else restore(args.grid, studies=args.studies))
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.command}: {len(changes)} checkpoints" + "".join(f"\n  {c}" for c in changes))
    if args.command == "save" and args.commit:
        commit(changes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
