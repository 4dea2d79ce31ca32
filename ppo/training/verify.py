"""Check a finished run against this machine: retrain its first updates and compare the records bit for bit.

    ./repro verify published/table1/paper/runs/Hopper-v5/clip_0.2/seed0 [--updates 3]   (ppo.pipeline.verify's command)

The run is rebuilt from its own manifest (config, task, seed; a record of an older config schema is read in
today's shape, ppo.config.schema) and trained alone for its first ``--updates`` iterations on one thread, as the
pipeline trains; its episodes and updates so far are then compared with the recorded ones. A run's records do
not depend on the group it was trained in (tests/training/test_group_training.py), so one run alone reproduces it.

"identical" means this machine, these packages and this code reproduce the run's floats. "differs from
episode N" with the two numerics platforms named: a run trained on another processor (vendor and SIMD level)
or other packages is expected to differ in the last bits from the first episode on, and is then only
statistically equivalent (docs/reproducibility.md); on the same platform and packages, a difference means
the code's numerics changed since the run was trained.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import torch

from ..config.errors import ConfigError
from ..config.run_config import build_config
from ..config.schema import current_config
from . import records
from .driver import RunSpec, train_group

NUMERIC_PACKAGES = ("torch", "numpy", "gymnasium", "mujoco", "ale-py")


def read_manifest(run_dir: Path) -> dict:
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise ConfigError(f"{path}: no manifest here; give the folder of a finished run (it holds manifest.json)")
    try:
        manifest = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f"{path}: not a readable manifest ({type(err).__name__})") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{path}: a manifest is a JSON object, this one is {type(manifest).__name__}")
    for field, kind in (("config", dict), ("task", str), ("seed", int)):
        if not isinstance(manifest.get(field), kind) or isinstance(manifest.get(field), bool):
            raise ConfigError(f"{path}: field {field} is missing or not a {kind.__name__}")
    return manifest


def describe(platform: dict, packages: dict) -> str:
    versions = ", ".join(f"{name} {packages.get(name)}" for name in NUMERIC_PACKAGES if packages.get(name))
    return f"{platform.get('key')} ({platform.get('model_name')}; {versions})"


def plain(value):
    """A table cell as Python's own value (numpy scalars compare and print as Python's; text is text)."""
    return value.item() if hasattr(value, "item") else value


def first_difference(recorded: pd.DataFrame, here: pd.DataFrame, what: str, key: str = "global_step") -> str | None:
    """Where two tables first differ, as one phrase naming the row (``what`` N, 1-based, and its ``key``) and
    the values."""
    if list(recorded.columns) != list(here.columns):
        return f"the {what} tables have other columns: recorded {list(recorded.columns)}, here {list(here.columns)}"
    for i in range(min(len(recorded), len(here))):
        for column in recorded.columns:
            a, b = plain(recorded[column].iloc[i]), plain(here[column].iloc[i])
            if not (a == b or (pd.isna(a) and pd.isna(b))):
                return (f"{what} {i + 1} ({key.replace('_', ' ')} {int(recorded[key].iloc[i]):,}): {column} "
                        f"recorded {a!r}, here {b!r}")
    if len(recorded) != len(here):
        return f"the number of {what}s: recorded {len(recorded)}, here {len(here)}"
    return None


def verify(run_dir: Path, updates: int = 3, windowing: tuple | None = None) -> tuple[bool, str]:
    """(identical, one paragraph saying what was compared and what it found). ``windowing``: (function, steps) by
    which a published record keeps one update row per that many steps (ppo.pipeline.publish.per_window, a fixed
    point of its own output); a record kept that way is compared window by window, over ``updates`` windows."""
    manifest = read_manifest(run_dir)
    source = str(run_dir / "manifest.json")
    try:
        settings = current_config(manifest["config"], manifest.get("config_schema", 1))
    except ValueError as err:
        raise ConfigError(f"{source}: field config_schema: {err}") from None
    config = build_config(settings, source)
    recorded_updates = pd.read_parquet(run_dir / "updates.parquet")
    window, window_steps = windowing or (None, 0)
    # a raw record of iterations shorter than a window is not a fixed point of the windowing: compared row by row
    windowed = window is not None and window(recorded_updates) is recorded_updates
    iterations = max(updates, math.ceil(updates * window_steps / (config.num_envs * config.horizon))) if windowed \
        else updates
    threads = torch.get_num_threads()
    torch.set_num_threads(int(manifest.get("torch_threads") or 1))
    try:
        result = train_group([RunSpec("verify", manifest["task"], config, manifest["seed"])],
                             log=lambda _: None, max_iterations=iterations)[0]
    finally:
        torch.set_num_threads(threads)
    here_updates, rows = result.updates, f"{len(result.updates)} updates"
    if windowed and window(here_updates) is not here_updates:
        here_updates = window(here_updates)
        if len(here_updates) and here_updates["global_step"].iloc[-1] % window_steps:  # its window goes on
            here_updates = here_updates.iloc[:-1]
        rows = (f"{len(result.updates)} updates ({len(here_updates)} rows, as the record keeps one per "
                f"{window_steps:,} steps)")
    recorded_updates = recorded_updates.iloc[:len(here_updates)].reset_index(drop=True)
    last_step = int(result.updates["global_step"].iloc[-1]) if len(result.updates) else 0
    recorded_episodes = pd.read_parquet(run_dir / "episodes.parquet")
    recorded_episodes = recorded_episodes[recorded_episodes["global_step"] <= last_step].reset_index(drop=True)
    there = describe(records.recorded_platform(manifest), manifest.get("packages") or {})
    here = describe(records.numerics_platform(), records.package_versions())
    compared = (f"{rows}, {last_step:,} steps, {len(result.episodes)} episodes of "
                f"{manifest['task']} {manifest.get('variant', config.algorithm)} seed {manifest['seed']}")
    difference = (first_difference(recorded_episodes, result.episodes, "episode")
                  or first_difference(recorded_updates, here_updates.reset_index(drop=True), "update"))
    if difference is None:
        return True, f"identical: the first {compared} equal the records bit for bit. Trained on {there}; here {here}."
    return False, (f"differs from {difference}. Compared the first {compared}. Trained on {there}; here {here}: "
                   f"{what_a_difference_means(manifest)}.")


def numerics_of(platform: dict, packages: dict) -> tuple:
    """What a run's bits depend on besides code and seeds: the platform's key and the numeric packages (not the
    processor's name: two models with one key compute the same bits, records.numerics_platform)."""
    return platform.get("key"), tuple(packages.get(name) for name in NUMERIC_PACKAGES)


def what_a_difference_means(manifest: dict) -> str:
    """A difference on the same platform and packages is a change of the code's numerics; elsewhere, a draw."""
    recorded = records.recorded_platform(manifest)
    if (not recorded.get("inferred") and numerics_of(recorded, manifest.get("packages") or {})
            == numerics_of(records.numerics_platform(), records.package_versions())):
        return "the same platform and packages: the code's numerics changed since this run was trained"
    return ("another platform or other packages: the runs are statistically equivalent, not identical "
            "(docs/reproducibility.md)")
