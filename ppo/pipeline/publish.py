"""The project's reproduction dataset: finished paper-scale runs (and the RLHF study's full-scale runs), published
in the repository.

``published/<study>/<scale>/runs/<task>/<variant>/seed<k>/`` holds a run's records (episodes, updates and
timing parquet in records.write_parquet's compact encoding, and the manifest; no model or checkpoint, to keep
the dataset small): episodes exactly as training wrote them, updates and timing a row per WINDOW_STEPS
environment steps (per_window; the same rows for PPO at the paper's horizon), timing in float32
(as_published).
The pipeline treats a published run whose configuration digest matches as finished and copies it instead
of training it (workflow/rules/common.smk). ``published/INDEX.csv`` lists every published run with the
code revision, packages and machine that produced it; it is written here, never by hand.

    python -m ppo.pipeline.publish --from ../ppo-grid --from /tmp/device-batch --commit   # add finished runs
    python -m ppo.pipeline.publish --status --from ../ppo-grid                            # progress, core-hours, hours left
    python -m ppo.pipeline.publish --sb3 results/sb3_reference --commit        # benchmarks/mujoco_sb3_reference.py runs
    python -m ppo.pipeline.publish --studies rlhf --from ../rlhf-grid --commit    # the RLHF study's full scale

An RLHF run (experiments/studies/rlhf.yaml at scale ``full``: ``published/rlhf/full/runs/rlhf_grammar/<setting>/seed<k>/``)
keeps updates.parquet as trained (every update: the report's curves, fits and frontier read them all), timing in
float32, and of samples.parquet the responses the report can show (RLHF_SAMPLES_EVERY below); no starting models.

With the runs, ``published/random/<task>.parquet`` keeps our random policy's episodes on every task of the
published studies (Table 1's zero point, as rule random_policy measured them in the source: 100 episodes, seed 0)
beside ``<task>.json`` (the command, the number of episodes, the file's SHA-256): the pipeline copies them instead
of measuring them again (workflow/rules/train.smk, copy_random), a few seconds of a fresh clone's first page.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..config.errors import ConfigError
from ..config.files import PROJECT_ROOT
from ..envs import family_of
from ..training import records
from ..training.layout import run_dir
from . import carry
from .study import Study, is_current, load_study, narrowed, shared_runs

PUBLISHED = PROJECT_ROOT / "published"
# Table 1 and Figure 3, and three checks of them: ε = 0.2 on the v4 tasks (CleanRL's version), with
# bootstrapping at time limits (as SB3 does), and ppo2's step-steadying details on Swimmer:
# experiments/studies/table1_v4.yaml, table1_bootstrap.yaml and swimmer_details.yaml.
CHECKS = ("table1_v4", "table1_bootstrap", "swimmer_details")
STUDIES = ("table1", "figure3", *CHECKS)
# Every study with published paper-scale runs, as INDEX.csv lists them: the MuJoCo ones and the Atari study,
# whose paper scale is trained a few games at a time (./repro atari-three, scripts/paper_grid.sh with GRID_NAME=atari),
# and its checks (experiments/studies/atari_checks*.yaml, GRID_NAME=atari-checks).
INDEXED = (*STUDIES, "atari", "atari_checks", "atari_checks_a2c", "atari_checks_a2c_zoo", "rlhf")
SCALE = "paper"
# A study published at another scale than the paper's: the RLHF study's full scale (issue 32; the paper has no RLHF)
SCALES = {"rlhf": "full"}


def scale_of(name: str) -> str:
    """The scale at which study ``name`` is published."""
    return SCALES.get(name, SCALE)


# The dataset keeps a row of updates.parquet and timing.parquet per this many environment steps of a run:
# one PPO iteration at the paper's horizon, about 26 of A2C's 80-step updates. A row per A2C update made
# an A2C run 5x a PPO run's size for statistics no report reads at that resolution (the reports read
# episodes, and of updates the last global_step and wall time), and the dataset must stay small (issue
# 15: at most 40 MB for 336 runs). Training's own records keep a row per iteration: per-update analyses
# (analysis/details.py's early-stop share) need them, and no published study runs those.
WINDOW_STEPS = 2048
# config_digest is the run's as recorded, under its manifest's config_schema (1 when absent; blank for an RLHF run,
# whose config has no versions), so equal settings recorded under two schemas have two; config_digest_current is the
# digest of the same config read in today's schema, what the planner compares and equal for equal settings.
INDEX_COLUMNS = ["study", "task", "variant", "seed", "status", "config_digest", "config_schema",
                 "config_digest_current", "commit", "dirty", "host",
                 "processor", "resumed_on_another_platform",
                 "cpu_count", "python", "torch", "numpy", "mujoco", "gymnasium", "wall_seconds", "cpu_seconds", "group",
                 "finished", "sha256_episodes", "sha256_updates", "sha256_timing", "sha256_samples"]
HASHED = (*records.RECORD_FILES, "samples.parquet")  # the record files INDEX.csv lists a hash of (an RLHF run: samples)


def per_window(rows: pd.DataFrame, window_steps: int = WINDOW_STEPS) -> pd.DataFrame:
    """Update or timing rows of one run, one row per window of ``window_steps`` environment steps.

    Window k holds the iterations that ended at global_step in ((k-1)·window_steps, k·window_steps]. A row
    keeps its window's last ``update``, ``global_step`` and ``wall_time``; seconds add up; ``sps`` is the
    window's steps over its seconds; ``diverged`` is whether any iteration diverged; every other statistic
    is its mean over the window's iterations (NaN skipped). Rows that are alone in their window, as every
    PPO iteration of 2048 steps is, come back unchanged, bit for bit."""
    if rows.empty:
        return rows
    window = -(-rows["global_step"] // window_steps)
    if window.is_unique:
        return rows
    rules = {"update": "last", "global_step": "last", "wall_time": "last", "diverged": "any",
             "rollout_seconds": lambda x: x.sum(min_count=1), "optimize_seconds": lambda x: x.sum(min_count=1)}
    how = {c: rules.get(c, "mean" if pd.api.types.is_numeric_dtype(rows[c]) and not pd.api.types.is_bool_dtype(rows[c])
                        else "last") for c in rows.columns}
    grouped = rows.groupby(window.to_numpy(), sort=False)
    out = grouped.agg(how)
    if "sps" in rows.columns:  # the window's steps over its seconds (an iteration's seconds = its steps / sps)
        steps = rows["global_step"].diff().fillna(rows["global_step"].iloc[0])
        seconds = steps / rows["sps"].where(rows["sps"] > 0)
        by_window = window.to_numpy()
        weighted = steps.groupby(by_window, sort=False).sum() / seconds.groupby(by_window, sort=False).sum()
        out["sps"] = out["sps"].where(grouped.size().to_numpy() == 1, weighted.to_numpy())
    kept = {c: rows[c].dtype for c in rows.columns if how[c] != "mean"}  # a mean of integers stays a float
    return out.reset_index(drop=True)[list(rows.columns)].astype(kept)


def as_published(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """A run's record as the dataset keeps it: episodes as trained; updates and timing a row per
    WINDOW_STEPS (per_window); timing's wall-clock measures, which no rerun reproduces anyway, in float32
    (7 significant digits: a tenth of a millisecond in an hour), 0.65x the bytes. (An RLHF run's: rlhf_published.)"""
    if name == "episodes.parquet":
        return table
    table = per_window(table)
    if name == "timing.parquet":
        table = table.astype({c: "float32" for c in table.columns if pd.api.types.is_float_dtype(table[c])})
    return table


# An RLHF run of the full scale (150 updates, 8 sampled responses kept per update) as trained, measured 2026-11-27 on
# two full-scale runs (seed 0 of PPO clip 0.2 at β = 0 and of GRPO at β = 0.03, trained as the grid trains them):
# 57.2 and 55.8 KB (updates.parquet 30.5 KB, of which 17 KB is pandas' and Arrow's schema metadata for its 34
# columns; samples 18.5 KB, 1,208 responses; timing 4.7 KB; manifest 3.5 KB): 17 MB for 300 runs. Published: 28.4
# and 26.9 KB; the grid's first 7 runs (ReMax, seeds 0-2), 53-59 KB as trained, 26.4-27.7 KB published: about 8.5 MB
# for 300. Updates are kept whole (the report's curves, fits and frontier read every
# update) and bare (write_bare: no schema metadata; 17.6 KB; plain int64, float64 and text columns read back the
# same, checked on every write); timing in float32 (1.9 KB); of samples, every RLHF_SAMPLES_EVERY-th update (the
# held-out evaluations' updates) and the three the report shows (rlhf_peaks), all 8 responses: 248-264 of 1,208, 5.2 KB.
# (The 2 responses the report shows instead of 8: 2.7 KB; every update's 8: 15.2 KB, 11.6 MB for 300 runs.)
RLHF_SAMPLES_EVERY = 5
RLHF_SAMPLES_KEPT = 8
RLHF_SMOOTH = 5  # analysis.rlhf.SMOOTH: the report's peaks are of a centred rolling mean over this many updates


def write_bare(df: pd.DataFrame, path: Path) -> None:
    """records.write_parquet's encoding without pandas' and Arrow's schema metadata (the published RLHF records:
    8-13 KB of a 34-column table of 151 rows), after checking that the table reads back equal without it (plain
    int64, float32/64, bool and text columns do); a table that would not is written with it."""
    floats = [c for c in df.columns if pd.api.types.is_float_dtype(df[c])]
    encoding = {**{c: "BYTE_STREAM_SPLIT" for c in floats},
                **{c: "DELTA_BINARY_PACKED" for c in df.columns
                   if pd.api.types.is_integer_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])}}
    table = pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)

    def write(target):
        pq.write_table(table, target, compression="zstd", compression_level=19, use_dictionary=False,
                       column_encoding=encoding or None, store_schema=False)

    buffer = io.BytesIO()
    write(buffer)
    back = pd.read_parquet(io.BytesIO(buffer.getvalue()))
    if not (back.equals(df.reset_index(drop=True)) and back.dtypes.equals(df.dtypes)):
        records.write_parquet(df, path)
        return
    records.atomic_write(Path(path), lambda tmp: tmp.write_bytes(buffer.getvalue()))


def rlhf_peaks(updates: pd.DataFrame) -> set[int]:
    """The updates where the run's proxy and gold reward peak as the report finds them (analysis.rlhf: the largest
    value of a centred rolling mean over RLHF_SMOOTH updates), and its last update."""
    rows = updates.sort_values("update")
    out = {int(rows["update"].iloc[-1])}
    for column in ("proxy_reward", "gold_reward"):
        smooth = rows[column].astype(float).rolling(RLHF_SMOOTH, center=True, min_periods=1).mean()
        if smooth.notna().any():
            out.add(int(rows["update"].iloc[int(np.nanargmax(smooth.to_numpy()))]))
    return out


def rlhf_published(table: pd.DataFrame, name: str, updates: pd.DataFrame | None = None) -> pd.DataFrame:
    """An RLHF run's record as the dataset keeps it: updates as trained; timing in float32 (as_published); of
    samples, a PPO run's first RLHF_SAMPLES_KEPT responses at every RLHF_SAMPLES_EVERY-th update and at the updates the
    report shows (rlhf_peaks of ``updates``), best-of-n's all (one row per n and response)."""
    if name == "timing.parquet":
        return table.astype({c: "float32" for c in table.columns if pd.api.types.is_float_dtype(table[c])})
    if name != "samples.parquet" or "update" not in table or table.empty:
        return table
    shown = rlhf_peaks(updates) if updates is not None and not updates.empty else set()
    keep = ((table["update"] % RLHF_SAMPLES_EVERY == 0) | table["update"].isin(shown)
            | (table["update"] == table["update"].max())) & (table["index"] < RLHF_SAMPLES_KEPT)
    return table[keep].reset_index(drop=True)


def owned_runs(studies):
    """(study, run) for every run a study trains itself: Figure 3's PPO runs are Table 1's (shared_runs)."""
    shared = shared_runs(studies)
    return [(s, r) for s in studies for r in s.runs() if (s.name, r.run_id) not in shared]


def publishable(source: Path, study, run) -> Path | None:
    """The run's folder under ``source``/results if it finished there under today's configuration."""
    return run_dir(source / "results", study, run) if is_current(source / "results", study, run) else None


def index_row(study, run, folder: Path) -> dict:
    m = json.loads((folder / "manifest.json").read_text())
    git, host, packages = m.get("git") or {}, m.get("host") or {}, m.get("packages") or {}
    return {"study": study.name, "task": run.task, "variant": run.variant.name, "seed": run.seed,
            "status": m.get("status"), "config_digest": m.get("config_digest"),
            "config_schema": None if study.kind == "rlhf" else m.get("config_schema", 1),
            "config_digest_current": run.config_digest,  # written only for a current run: its migrated digest
            "commit": git.get("commit"),
            "dirty": git.get("dirty"), "host": f"{host.get('cpu')} x{host.get('cpu_count')}",
            # the numerics platform (docs/reproducibility.md): the same key and packages reproduce the run's bits
            "processor": records.recorded_platform(m)["key"],
            "resumed_on_another_platform": m.get("resumed_on_another_platform"),
            "cpu_count": host.get("cpu_count"), "python": host.get("python"), "torch": packages.get("torch"),
            "numpy": packages.get("numpy"), "mujoco": packages.get("mujoco"),
            "gymnasium": packages.get("gymnasium"), "wall_seconds": m.get("wall_seconds"),
            "cpu_seconds": m.get("cpu_seconds"),  # the group's CPU time: absent before 2026-12-07
            # the runs trained in one process with it (an RLHF run trains alone: itself)
            "group": "; ".join(m.get("group") or ([run.run_id] if study.kind == "rlhf" else [])),
            **{f"sha256_{name.split('.')[0]}": (m.get("sha256") or {}).get(name) for name in HASHED},
            "finished": pd.Timestamp((folder / "manifest.json").stat().st_mtime, unit="s").isoformat()}


def publish(sources: list[Path], published: Path = PUBLISHED, studies: list | None = None) -> list[str]:
    """Copy every finished, current run found in ``sources`` that is not yet in ``published``
    (default: the paper-scale Table 1 and Figure 3 runs)."""
    studies = studies or [load_study(name, SCALE) for name in STUDIES]
    added = []
    for study, run in owned_runs(studies):
        if is_current(published, study, run):
            continue
        for source in sources:
            folder = publishable(source, study, run)
            if folder is None:
                continue
            manifest = json.loads((folder / "manifest.json").read_text())
            changed = records.changed_record(folder, manifest)
            if changed:
                raise ConfigError(f"{changed}: not published")
            target, files = run_dir(published, study, run), study.run_files[:-1]
            if study.kind == "rlhf":  # the samples kept depend on the run's own curves
                updates = pd.read_parquet(folder / "updates.parquet")
                for name in files:
                    write_bare(rlhf_published(pd.read_parquet(folder / name), name, updates), target / name)
            else:
                for name in files:
                    records.write_parquet(as_published(pd.read_parquet(folder / name), name), target / name)
            # the manifest last: its presence means complete; its hashes are those of the published records
            records.write_json({**manifest, "sha256": records.record_hashes(target, files)}, target / "manifest.json")
            added.append(run.run_id if study.name == "table1" else f"{study.name}:{run.run_id}")
            break
    write_index(studies, published)
    return added


RANDOM_SEED = 0  # the seed rule random_policy gives every task (workflow/rules/train.smk)


def publish_random(sources: list[Path], published: Path = PUBLISHED, studies: list | None = None) -> list[str]:
    """Copy our random policy's episodes on each task of ``studies`` (``<source>/results/random/<task>.parquet``)
    that ``published/random`` does not hold yet, with ``<task>.json``: the command that measured them, their number,
    the file's SHA-256 (the pipeline copies a file only while its content is what that recorded), the source's
    commit, and the processor and packages here (those that measured them when the source is a clone on this
    machine, as the grid's is)."""
    studies = studies or [load_study(name, SCALE) for name in STUDIES]
    # Atari: published scores; RLHF: no environment
    tasks = sorted({t for s in studies if s.kind == "mujoco" for t in s.tasks if family_of(t).name != "atari"})
    added = []
    for task in tasks:
        target = published / "random" / f"{task}.parquet"
        found = [f for f in (source / "results" / "random" / f"{task}.parquet" for source in sources) if f.is_file()]
        if target.exists() or not found:
            continue
        episodes = len(pd.read_parquet(found[0]))
        records.atomic_write(target, lambda tmp: shutil.copyfile(found[0], tmp))
        source_commit = subprocess.run(["git", "-C", str(found[0].parents[2]), "rev-parse", "HEAD"],
                                       capture_output=True, text=True).stdout.strip() or None
        packages = records.package_versions()
        records.write_json({"task": task, "episodes": episodes, "seed": RANDOM_SEED, "sha256": records.sha256(target),
                            "command": f"python -m ppo.pipeline.random_policy --task {task} --episodes {episodes} "
                                       f"--seed {RANDOM_SEED}", "source_commit": source_commit,
                            # where it was published, and so measured when the source is a clone on this machine
                            "cpu": records.cpu_model(), **{k: packages.get(k) for k in ("gymnasium", "mujoco", "numpy")}},
                           target.with_suffix(".json"))
        added.append(f"random:{task}")
    return added


def published_random(task: str, episodes: int, published: Path = PUBLISHED) -> Path | None:
    """``published/random/<task>.parquet`` when it holds what rule random_policy would measure (``episodes``
    episodes, seed 0) and its content is what its manifest recorded; else None (measured again). A changed file
    is said once, in one line naming it."""
    path = published / "random" / f"{task}.parquet"
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
        if not path.is_file() or meta.get("episodes") != episodes or meta.get("seed") != RANDOM_SEED:
            return None
        found = records.sha256(path)
    except (OSError, ValueError, AttributeError):  # none published, or an unreadable manifest: measured here
        return None
    if found != meta.get("sha256"):
        print(f"warning: {path}: its content changed after it was published (SHA-256 {found[:12]}…, its manifest "
              f"records {str(meta.get('sha256'))[:12]}…); measured again", file=sys.stderr)
        return None
    return path


def publish_sb3(source: Path, published: Path = PUBLISHED) -> list[str]:
    """Copy finished Stable-Baselines3 reference runs (benchmarks/mujoco_sb3_reference.py) not yet published."""
    added = []
    for manifest in sorted(source.glob("*/seed*/manifest.json")):
        folder, target = manifest.parent, published / "sb3_reference" / manifest.parent.relative_to(source)
        if (target / "manifest.json").exists():
            continue
        records.write_parquet(pd.read_parquet(folder / "episodes.parquet"), target / "episodes.parquet")
        records.atomic_write(target / "manifest.json", lambda tmp: shutil.copyfile(manifest, tmp))
        added.append(f"sb3_reference:{folder.relative_to(source)}")
    return added


def write_index(studies, published: Path = PUBLISHED) -> pd.DataFrame:
    """INDEX.csv with the published runs of ``studies`` rewritten from their manifests; the rows of other
    studies stay as they are."""
    index = current_index(studies, published)
    if len(index):
        records.atomic_write(published / "INDEX.csv", lambda tmp: index.to_csv(tmp, index=False))
    return index


def current_index(studies, published: Path = PUBLISHED) -> pd.DataFrame:
    """What INDEX.csv would hold after write_index(studies), written nowhere (``--status`` reads it)."""
    rows = [index_row(s, r, run_dir(published, s, r)) for s, r in owned_runs(studies) if is_current(published, s, r)]
    index = pd.DataFrame(rows, columns=INDEX_COLUMNS).astype({"config_schema": "Int64"})
    path, key = published / "INDEX.csv", ["study", "task", "variant", "seed", "config_digest"]
    if path.exists():
        listed = pd.read_csv(path, dtype={"config_digest": str, "config_digest_current": str, "config_schema": "Int64"})
        # "finished" is read from the manifest's file time, which a fresh clone sets to the checkout's: a run
        # already listed keeps the time it was first published with
        first = listed.set_index(key)["finished"]
        earlier = index.set_index(key).index.map(lambda k: first.get(k)) if len(index) else []
        index["finished"] = [old if isinstance(old, str) else new for old, new in zip(earlier, index["finished"])]
        # other studies' rows stay as they are; of these studies', the runs of seeds beyond those asked for while
        # still published (a default publish, of seeds 0-2, keeps the ten-seed grid's seeds 3-9)
        recomputed = set(index.set_index(key).index) if len(index) else set()
        scales = {s.name: s.scale for s in studies}
        kept = [study not in scales or (tuple(row) not in recomputed and (
                    published / study / scales[study] / "runs" / task / variant / f"seed{seed}" / "manifest.json").exists())
                for row in listed[key].itertuples(index=False) for study, task, variant, seed, _ in [row]]
        others = listed[kept].reindex(columns=INDEX_COLUMNS)
        index = pd.concat([others, index]) if len(others) else index
    if len(index):
        # one order whichever studies this publish rewrote: else each grid's publish moved its rows to the end
        order = {name: k for k, name in enumerate(INDEXED)}
        index = index.sort_values(["study", "task", "variant", "seed"], kind="stable",
                                  key=lambda c: c.map(order) if c.name == "study" else c).reset_index(drop=True)
    return index


def records_read(studies, published: Path = PUBLISHED) -> dict[str, tuple[int, str]]:
    """Per study, how many runs INDEX.csv lists and a digest of their records (task, variant, seed and the hashes of
    episodes and updates it keeps): what a page built from published/ was built from (scripts/results_page.py), so
    that a page left behind by a later publish can be told from a current one."""
    index = pd.read_csv(published / "INDEX.csv", dtype=str, keep_default_na=False)
    read = {}
    for study in studies:
        rows = index.loc[index["study"] == study, ["task", "variant", "seed", "sha256_episodes", "sha256_updates"]]
        text = "\n".join(sorted(",".join(row) for row in rows.itertuples(index=False)))
        read[study] = (len(rows), hashlib.sha256(text.encode()).hexdigest()[:12])
    return read


def reindex(published: Path = PUBLISHED) -> pd.DataFrame:
    """INDEX.csv rewritten from the manifests of every indexed study's published runs, each study at as many seeds as
    it has published (the ten-seed grid's 10): after a change of config schema, today's digests
    (config_digest_current) for every row. Copies nothing."""
    listed = pd.read_csv(published / "INDEX.csv", usecols=["study", "seed"])
    most = listed.groupby("study")["seed"].max()
    studies = []
    for name in INDEXED:
        study = load_study(name, scale_of(name))
        seeds = int(most.get(name, -1)) + 1
        more = study.kind == "mujoco" and seeds > study.seeds  # an RLHF study's seeds are its cells' own
        studies.append(load_study(name, scale_of(name), seeds) if more else study)
    return write_index(studies, published)


def status(sources: list[Path], published: Path = PUBLISHED, sb3_sources: tuple[Path, ...] = (),
           names: tuple[str, ...] = STUDIES, tasks: list[str] | None = None,
           variants: list[str] | None = None, seeds: int | None = None, scale: str | None = None,
           group_size: int = 0) -> str:
    """Runs published and finished per study; ``tasks``/``variants`` count only those of the studies (the
    Atari grid trains 3 of the study's 49 games), ``seeds`` at that many seeds (the ten-seed grid), at ``scale``
    (default: each study's published scale, scale_of); the projection packs the runs left in groups of ``group_size``
    (the grid's); the training time is that of every published run."""
    studies = [load_study(name, scale or scale_of(name), seeds) for name in names]
    counted = [narrowed(s, tasks, variants, "--tasks/--variants") for s in studies]
    owned = owned_runs(counted)
    # the whole studies' rows (as a publish would write them, without writing: a status changes no file)
    index = current_index(studies, published) if (published / "INDEX.csv").exists() else pd.DataFrame()
    lines = []
    for study in counted:
        mine = [r for s, r in owned if s is study]
        done = [is_current(published, study, r) for r in mine]
        elsewhere = [not d and any(publishable(src, study, r) for src in sources) for r, d in zip(mine, done)]
        lines.append(f"{study.name}: {sum(done)} of {len(mine)} runs published, {sum(elsewhere)} more finished, "
                     "not yet published")
        if seeds is not None and isinstance(study, Study):  # the ten-seed grid: how far each seed got
            lines.append(seed_waves(study.name, [r.seed for r in mine], done))
        left = [r for r, d, e in zip(mine, done, elsewhere) if not (d or e)]
        if left:
            lines.append(hours_left(study, left, index, sources, group_size))
    sb3_published = {m.parent.relative_to(published / "sb3_reference")
                     for m in published.glob("sb3_reference/*/seed*/manifest.json")}
    sb3_elsewhere = {m.parent.relative_to(folder) for folder in sb3_sources
                     for m in folder.glob("*/seed*/manifest.json")} - sb3_published
    lines.append(f"sb3_reference: {len(sb3_published)} runs published, {len(sb3_elsewhere)} more finished, "
                 "not yet published")
    # the ten-seed grid's own share, for its notes: the seeds beyond the study file's own (the paper's 3)
    own_seeds = {s.name: load_study(s.name, s.scale).seeds for s in studies} if seeds is not None else {}
    for name, runs in index.groupby("study", sort=False) if len(index) else ():
        lines.append(training_time(f"{name}'s published runs", runs))
        if name in own_seeds and (line := beyond_own_seeds(name, runs, own_seeds[name], seeds - 1)):
            lines.append(line)
    return "\n".join(lines)


def beyond_own_seeds(name: str, runs: pd.DataFrame, first: int, last: int) -> str | None:
    """training_time of the groups that trained seeds ``first``-``last`` of study ``name`` (INDEX.csv rows), or None
    if none has. A group is counted whole: one that also trained seeds below ``first`` (a variant added after the
    paper's seeds were published trains all its seeds at once) says how many of its runs those were."""
    more = runs[runs["seed"] >= first]
    if not len(more):
        return None
    groups = runs[runs["group"].isin(more["group"])]
    below = int((groups["seed"] < first).sum())
    seeds = f"seed {first}" if first == last else f"seeds {first}–{last}"
    earlier = "seed 0" if first == 1 else f"seeds 0–{first - 1}"
    what = f"{name}'s {seeds} published so far" + (
        f" (their groups also trained {below} run{'s' * (below != 1)} of {earlier}, counted with them)" if below else "")
    return training_time(what, groups)


def training_time(what: str, runs: pd.DataFrame) -> str:
    """One line: the job-hours of the groups of ``runs`` (INDEX.csv rows), in all and by processor, and the
    core-hours of CPU time of the groups that recorded it (manifests since 2026-12-07)."""
    groups = runs.drop_duplicates(["group"])
    line = (f"training time of {what}: {groups['wall_seconds'].sum() / 3600:.1f} job-hours (wall clock of {len(groups)} "
            "single-threaded groups, more than their CPU time where a core was shared; by processor: "
            + ", ".join(f"{h} {w / 3600:.1f}" for h, w in groups.groupby("processor")["wall_seconds"].sum().items())
            + ")")
    cpu = pd.to_numeric(groups["cpu_seconds"], errors="coerce").dropna()  # INDEX_COLUMNS rows: blank before 2026-12-07
    kept = groups.loc[cpu.index]
    if len(kept):
        by = cpu.groupby(kept["processor"]).sum()
        line += (f"; CPU time of the {len(kept)} of {len(groups)} groups that recorded it: "
                 f"{cpu.sum() / 3600:.1f} core-hours against {kept['wall_seconds'].sum() / 3600:.1f} job-hours of "
                 "their wall clock (by processor: " + ", ".join(f"{h} {s / 3600:.1f}" for h, s in by.items()) + ")")
    return line


def seed_waves(name: str, seeds: list[int], done: list[bool]) -> str:
    """One line: the seeds published in every cell of a study's runs (their ``seeds``, whether each is ``done``), and
    how far each later seed got: the grid trains a seed of every cell at a time (ppo.pipeline.carry.train_priority),
    and the reports follow each conclusion over the seeds every cell has."""
    cells = Counter(seeds)
    published = Counter(seed for seed, d in zip(seeds, done) if d)
    whole = 0
    while whole in cells and published[whole] == cells[whole]:
        whole += 1
    line = f"{name}: " + (f"seeds 0–{whole - 1} published in every cell" if whole > 1 else
                          "seed 0 published in every cell" if whole == 1 else "no seed published in every cell")
    later = [f"seed {seed} in {published[seed]} of {cells[seed]}" for seed in sorted(cells) if seed >= whole
             and published[seed]]
    return line + (f"; {', '.join(later)} cells" if later else "")


def hours_left(study, runs, index: pd.DataFrame, sources: list[Path], group_size: int = 0) -> str:
    """One line: the job-hours ``runs`` (unfinished runs of ``study``) still need, each the share of its budget not yet
    trained (from a group checkpoint in a source grid, ppo.pipeline.carry) times the median job-hours per run of the
    published runs of its task and variant that trained in groups of the size it will (``runs`` packed in groups of
    ``group_size``, Study.groups), else of its task and variant's groups of another size scaled by the variant's ratio
    between the two sizes where another task has both, else of its task and variant, else of its variant (a group's
    wall clock over its runs: a larger group costs less per run, 3.4 against 6.8 minutes for Hopper in groups of 11 and
    3). A variant with none published is named, not estimated. A projection from this study's own records, not a
    measurement."""
    trained: dict[str, float] = {}
    for source in sources:
        for relative, path in carry.checkpoints(source / "results", [study.name]).items():
            if relative.parts[1] == study.scale:
                share = carry.budget_fraction(path)
                for run in carry.read(path).runs:
                    trained[run] = max(trained.get(run, 0.0), min(share, 1.0))
    mine = index[index["study"] == study.name] if len(index) else pd.DataFrame(columns=INDEX_COLUMNS)
    mine = mine.assign(size=mine["group"].str.count("; ").add(1))
    mine = mine.assign(hours=mine["wall_seconds"].astype(float) / mine["size"] / 3600)
    per_run = mine.groupby("variant")["hours"].median().to_dict()
    per_task_run = mine.groupby(["task", "variant"])["hours"].median().to_dict()  # tasks differ (HalfCheetah, Pong)
    per_sized_run = mine.groupby(["task", "variant", "size"])["hours"].median().to_dict()

    def scaled(task: str, variant: str, size: int) -> float | None:
        """A task without a published group of ``size``: its groups of another size, times the variant's own ratio
        between the two sizes (the median over the tasks that have both), so a variant's first group of 7 tells the
        rest how much cheaper per run they are than its groups of 3 were; None without such a pair."""
        for other in sorted({z for t, v, z in per_sized_run if (t, v) == (task, variant) and z != size}):
            ratios = [per_sized_run[(t, v, size)] / base for (t, v, z), base in per_sized_run.items()
                      if v == variant and z == other and (t, v, size) in per_sized_run and base > 0]
            if ratios:
                return per_sized_run[(task, variant, other)] * float(np.median(ratios))
        return None

    size_of = ({run.run_id: len(group.runs) for group in study.groups(group_size, runs) for run in group.runs}
               if isinstance(study, Study) else {})  # an RLHF study trains a run per job
    hours, unknown, started = 0.0, set(), []
    for run in runs:
        share = trained.get(run.run_id, 0.0)
        if share > 0:
            started.append(f"{run.run_id} {share:.0%}")
        key = (run.task, run.variant.name, size_of.get(run.run_id, 1))
        rate = per_sized_run.get(key)
        rate = scaled(*key) if rate is None else rate
        rate = per_task_run.get(key[:2], per_run.get(run.variant.name)) if rate is None else rate
        if rate is None:
            unknown.add(run.variant.name)
        else:
            hours += (1 - share) * rate
    rates = ", ".join(f"{v} {h:.1f} h" if h >= 1 else f"{v} {h * 60:.0f} min"
                      for v, h in sorted(per_run.items()) if v in {r.variant.name for r in runs})
    estimated = sum(r.variant.name not in unknown for r in runs)
    line = f"{study.name}: {len(runs)} runs left"
    if estimated:
        line += (f", about {hours:.1f} job-hours{'' if estimated == len(runs) else f' for {estimated} of them'} at the "
                 f"median per run of the published runs of the same task and variant, from groups of the same size where "
                 f"published, else scaled by the variant's ratio between group sizes on another task (of each "
                 f"variant: {rates})")
    if unknown:
        line += f"; not estimated (no published run of {', '.join(sorted(unknown))})"
    if started:
        line += f"; trained so far: {', '.join(started)}"
    return line


def uncommitted(repo: Path = PROJECT_ROOT) -> bool:
    """Whether published/ holds changes git has not committed (new, changed or deleted files)."""
    changes = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "published"],
                             capture_output=True, text=True, check=True).stdout
    return bool(changes.strip())


def commit(added: list[str], repo: Path = PROJECT_ROOT) -> bool:
    """Commit published/ alone, whatever else the work tree holds; also what an earlier publish copied but
    did not commit (its commit met another git command's lock). Returns whether there was anything."""
    if not uncommitted(repo):
        return False
    subprocess.run(["git", "-C", str(repo), "add", "published"], check=True)
    message = (f"published: {len(added)} runs\n\n" + "\n".join(added) if added
               else "published: runs an earlier publish copied but did not commit")
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", message, "--", "published"], check=True)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="sources", type=Path, action="append", default=[],
                   help="a folder holding results/ (a grid clone, an unpacked batch); repeatable")
    p.add_argument("--sb3", type=Path, action="append", default=[],
                   help="a folder of benchmarks/mujoco_sb3_reference.py runs to publish; repeatable")
    p.add_argument("--studies", nargs="+", default=list(STUDIES), choices=INDEXED, metavar="STUDY",
                   help=f"the studies to publish (default: {' '.join(STUDIES)}; also: atari, and rlhf at its full "
                        "scale)")
    p.add_argument("--status", action="store_true", help="report progress only")
    p.add_argument("--tasks", nargs="+", default=None, help="with --status: count only these tasks' runs")
    p.add_argument("--variants", nargs="+", default=None, help="with --status: count only these variants' runs")
    p.add_argument("--seeds", type=int, default=None,
                   help="the studies at this many seeds (default: the paper scale's 3; the ten-seed grid: 10)")
    p.add_argument("--group-size", type=int, default=0,
                   help="with --status: the grid's group_size, to project from runs that trained in groups of that size")
    p.add_argument("--commit", action="store_true", help="commit published/ (and nothing else) after adding")
    p.add_argument("--reindex", action="store_true",
                   help="only rewrite INDEX.csv from the published manifests, every study (after a config schema change)")
    args = p.parse_args(argv)
    try:
        if args.reindex:
            print(f"INDEX.csv: {len(reindex())} runs")
            if args.commit:
                commit([])
            return 0
        if args.status:
            print(status(args.sources, sb3_sources=args.sb3, names=tuple(args.studies), tasks=args.tasks,
                         variants=args.variants, seeds=args.seeds, group_size=args.group_size))
            return 0
        studies = [load_study(name, scale_of(name), args.seeds) for name in args.studies]
        added = (publish(args.sources, studies=studies) + publish_random(args.sources, studies=studies)
                 + [a for folder in args.sb3 for a in publish_sb3(folder)])
    except ConfigError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(f"published {len(added)} runs" + "".join(f"\n  {a}" for a in added))
    if args.commit:
        commit(added)
    return 0


if __name__ == "__main__":
    sys.exit(main())
