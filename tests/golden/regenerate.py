"""Write the golden records of tests/golden/ from the code of this checkout:

    .venv/bin/python -m tests.golden.regenerate            # all goldens
    .venv/bin/python -m tests.golden.regenerate clip_0.2   # some of them, by name

Each golden is one tiny run of a variant of experiments/variants/, resolved exactly as the pipeline resolves
it (ppo.config.experiments.load_variant with the study scale's total_steps, ppo.pipeline.study.Run for its id and config digest),
trained in memory by ppo.training.driver.train_group on one CPU thread (the pipeline's setting), and kept per numerics
platform (ppo.training.records.numerics_platform: processor vendor, family and SIMD level, e.g. AuthenticAMD-25-AVX512;
the math libraries choose their kernels by it, so the same code gives other last bits on another platform,
docs/reproducibility.md) as

    tests/golden/<name>/<platform>/episodes.csv   the run's episodes table  } canonical CSV: one line per row,
    tests/golden/<name>/<platform>/updates.csv    the run's updates table   } floats as Python's repr (exact)
    tests/golden/<name>/<platform>/golden.json    variant, task, seed, steps, config digest, packages, processor

CSV rather than parquet: the comparison is of text that does not depend on the pyarrow version writing it,
and a changed number shows as a one-line diff. The wall-clock table (timing) is not part of a golden.

Regenerating writes this machine's platform only. It is a deliberate act: it declares the new numerics
correct. After a deliberate change of numerics, the goldens of the other platforms are out of date until a
machine of each regenerates them (the test says so there, naming the newer golden); published paper-scale
runs (published/) trained with the old numerics must be re-trained or marked (tests/training/test_golden_records.py).
This module is also the test's library: the list of goldens and the canonical serialisation live here.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import io
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent
REPO_ROOT = GOLDEN_DIR.parent.parent
if __name__ == "__main__" and str(REPO_ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(REPO_ROOT))  # run as a file: this checkout's code, not an editable install of another clone

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

import ppo  # noqa: E402
from ppo.config.experiments import load_variant  # noqa: E402
from ppo.config.run_config import SCHEMA_VERSION  # noqa: E402
from ppo.envs.family import task_version  # noqa: E402
from ppo.pipeline.study import Run  # noqa: E402
from ppo.training import records  # noqa: E402
from ppo.training.driver import RunSpec, train_group  # noqa: E402

TABLES = ("episodes", "updates")  # the deterministic records of a run (timing holds wall-clock measures)
# The packages whose versions can change a run's floats; a golden is only compared under the same ones.
NUMERIC_PACKAGES = {"mujoco": ("torch", "numpy", "gymnasium", "mujoco"),
                    "atari": ("torch", "numpy", "gymnasium", "ale-py"),
                    "classic": ("torch", "numpy", "gymnasium")}
RECORDED_PACKAGES = ("torch", "numpy", "gymnasium", "mujoco", "ale-py", "pandas", "pyarrow")


@dataclass(frozen=True)
class Golden:
    name: str  # folder under tests/golden/
    variant: str  # experiments/variants/<variant>.yaml
    task: str
    total_steps: int  # the scale's total_steps override, as ppo.pipeline.study.load_study applies it
    why: str  # the code path it pins
    seed: int = 0
    overrides: dict = field(default_factory=dict, hash=False)  # further load_variant overrides (rare)
    presets: dict = field(default_factory=dict, hash=False)  # a study's presets field, as load_study applies it

    @property
    def kind(self) -> str:
        if self.task.startswith("ALE/"):
            return "atari"
        return "classic" if self.task in CLASSIC_TASKS else "mujoco"


MUJOCO = "Hopper-v5"  # terminations within a few dozen steps: many episodes, 3-dimensional actions
ATARI = "ALE/Breakout-v5"
CLASSIC = "CartPole-v1"  # discrete actions: the categorical MLP policy (study classic)
CLASSIC_TASKS = (CLASSIC,)
CLASSIC_PRESETS = {"ppo_mujoco_paper": "ppo_classic"}  # experiments/studies/classic.yaml's presets field

GOLDENS = (
    # PPO on MuJoCo: one per term of the objective (ppo/algorithms/objective.py) that Table 1 turns on or off.
    # 2048 steps per batch: 2 updates; 3 for the adaptive β, which then acts twice (the 3rd update uses both).
    Golden("clip_0.2", "clip_0.2", MUJOCO, 4096, "PPO, clipped surrogate (Table 1, Figure 3's PPO)"),
    Golden("no_clip", "no_clip", MUJOCO, 4096, "PPO, plain surrogate: no clipping, no penalty"),
    Golden("kl_adaptive_0.01", "kl_adaptive_0.01", MUJOCO, 6144, "PPO, KL penalty with the adaptive β rule"),
    Golden("kl_fixed_1", "kl_fixed_1", MUJOCO, 4096, "PPO, fixed KL penalty"),
    # Figure 3's baselines on MuJoCo.
    Golden("a2c", "a2c", MUJOCO, 1600, "A2C: RMSprop, entropy bonus, return normalisation (16 actors x 5 steps)"),
    Golden("a2c_trust_region", "a2c_trust_region", MUJOCO, 1600, "A2C with ACER's trust-region projection"),
    Golden("trpo", "trpo", MUJOCO, 4096, "TRPO: conjugate gradient, line search, value fit (1024 steps per batch)"),
    Golden("vpg_adaptive", "vpg_adaptive", MUJOCO, 4096, "vanilla PG, adaptive step size (2048 steps per batch)"),
    Golden("cem", "cem", MUJOCO, 4096, "CEM: population sampling, whole-episode evaluation, elite refit"),
    # Atari: convolutional network, Categorical policy, the paper2017 protocol (FIRE, lives, reward clipping,
    # raw scores recorded), annealed lr and ε. Breakout: random play ends games within ~115 agent steps, so
    # PPO's golden has episodes (Pong's first games would take far longer than these budgets).
    Golden("atari_ppo", "atari_ppo", ATARI, 2048, "PPO on Atari: shared CNN, L^CLIP+VF+S, annealing (the smoke budget)"),
    Golden("atari_a2c", "atari_a2c", ATARI, 480, "A2C on Atari: shared CNN, RMSprop, linear lr (16 actors x 5 steps)"),
    Golden("atari_a2c_nature_cnn", "atari_a2c_nature_cnn", ATARI, 480,
           "A2C on the Nature CNN (the check atari_checks_a2c): the larger torso, built and stepped"),
    # ACER replays only once every actor holds replay_start = 10,000 steps; a golden that waited for that would
    # take minutes, so this one replays from its second iteration (replay_start lowered to one 20-step segment):
    # the on-policy step, the buffer, Poisson replay counts and off-policy corrections in 2 iterations.
    Golden("atari_acer", "atari_acer", ATARI, 640, "ACER on Atari: on-policy step, then replay (replay_start lowered)",
           overrides={"acer": {"replay_start": 20, "buffer_size": 100}}),
    # Classic control (study classic): the categorical policy on the MLP, the Table 1 variants on ppo_classic
    # (orthogonal init, minibatch advantages, gradient clipping, time limits bootstrapped).
    Golden("classic_clip_0.2", "clip_0.2", CLASSIC, 4096, "PPO, categorical MLP policy on CartPole (study classic)",
           presets=CLASSIC_PRESETS),
    Golden("classic_kl_adaptive_0.01", "kl_adaptive_0.01", CLASSIC, 6144,
           "PPO, categorical MLP policy, adaptive KL penalty (the categorical KL drives β)", presets=CLASSIC_PRESETS),
)
BY_NAME = {g.name: g for g in GOLDENS}

# (algorithm key, network) pairs that a variant file trains but no golden pins, and why. The second guard of
# tests/training/test_golden_records.py fails for any other pair without a golden.
NOT_COVERED = {
    ("ppo", "cnn_nature"): "variant atari_ppo_nature_cnn (Breakout's check, study atari_checks): the Nature CNN is "
                           "pinned by golden atari_a2c_nature_cnn, PPO's update on Atari by atari_ppo; a PPO golden on "
                           "it would take ~10 s per 1024 steps",
}


def check_checkout() -> None:
    """Goldens are of this checkout's code: refuse an installed copy of another checkout."""
    where = Path(ppo.__file__).resolve().parent.parent
    if where != REPO_ROOT:
        raise RuntimeError(f"package ppo is imported from {where}, not from this checkout {REPO_ROOT}; "
                           f"run from {REPO_ROOT} with `python -m ...` (or set PYTHONPATH={REPO_ROOT})")


def resolve(golden: Golden) -> Run:
    """The run as the pipeline would resolve it at a scale with ``golden.total_steps``."""
    variant = load_variant(golden.variant, presets=golden.presets, total_steps=golden.total_steps, **golden.overrides)
    return Run(golden.task, variant, golden.seed)


def train(golden: Golden) -> dict[str, pd.DataFrame]:
    """Train the golden's run in memory on one thread (the pipeline's ppo.pipeline.job default); its tables."""
    run = resolve(golden)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = train_group([RunSpec(run.run_id, run.task, run.variant.config, run.seed)], log=lambda _: None)[0]
    finally:
        torch.set_num_threads(threads)
    if result.status != "completed":
        raise RuntimeError(f"golden {golden.name}: the run {result.status} at step {result.diverged_at_step}")
    return {"episodes": result.episodes, "updates": result.updates}


def cell(value) -> str:
    """A table cell as text that round-trips exactly: floats as repr (shortest exact), ints, bools."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if value is None:
        return ""
    return str(value)


def canonical_rows(df: pd.DataFrame) -> list[list[str]]:
    """Header then rows, every cell by ``cell``."""
    return [[str(c) for c in df.columns]] + [[cell(v) for v in row] for row in df.itertuples(index=False, name=None)]


def canonical_csv(df: pd.DataFrame) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(canonical_rows(df))
    return out.getvalue()


def read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def dtypes(df: pd.DataFrame) -> dict[str, str]:
    return {str(c): str(t) for c, t in df.dtypes.items()}


def environment() -> dict:
    """What a golden's floats depend on besides the code: package versions, the numerics platform, threads."""
    versions = records.package_versions()
    return {"packages": {name: versions.get(name) for name in RECORDED_PACKAGES},
            "platform": records.numerics_platform(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu": records.cpu_model(), "python": sys.version.split()[0], "torch_threads": 1}


def platform_key() -> str:
    return records.numerics_platform()["key"]


def golden_folder(golden: Golden, platform: str | None = None) -> Path:
    """Where the golden of ``platform`` (default: this machine's) lives."""
    return GOLDEN_DIR / golden.name / (platform or platform_key())


def platforms(golden: Golden) -> list[str]:
    """The platforms that have a golden of this name."""
    return sorted(path.parent.name for path in (GOLDEN_DIR / golden.name).glob("*/golden.json"))


def golden_record(golden: Golden, tables: dict[str, pd.DataFrame]) -> dict:
    run = resolve(golden)
    cfg = run.variant.config
    texts = {name: canonical_csv(df) for name, df in tables.items()}
    return {
        "name": golden.name, "why": golden.why, "variant": golden.variant, "variant_label": run.variant.label,
        "preset": run.variant.preset.name, "task": golden.task, "env_version": task_version(golden.task),
        "seed": golden.seed, "total_steps": golden.total_steps, "overrides": golden.overrides,
        **({"presets": golden.presets} if golden.presets else {}),
        "run_id": run.run_id, "algorithm": cfg.algorithm, "algorithm_key": cfg.algorithm_key,
        "config_digest": run.config_digest, "config_schema": SCHEMA_VERSION, "config": cfg.to_dict(),
        "compared_packages": list(NUMERIC_PACKAGES[golden.kind]),
        **environment(), "generated_at": records.git_state(),
        "tables": {name: {"file": f"{name}.csv", "rows": len(tables[name]), "dtypes": dtypes(tables[name]),
                          "sha256": hashlib.sha256(texts[name].encode()).hexdigest()} for name in TABLES},
    }


def write(golden: Golden, tables: dict[str, pd.DataFrame]) -> Path:
    folder = golden_folder(golden)
    folder.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        records.atomic_write(folder / f"{name}.csv", lambda p, name=name: p.write_text(canonical_csv(tables[name])))
    records.write_json(golden_record(golden, tables), folder / "golden.json")
    return folder


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help=f"goldens to write (default: all): {', '.join(BY_NAME)}")
    p.add_argument("--numerics-changed", action="store_true",
                   help="the code's numerics changed on purpose: also delete these goldens' records of the other "
                        "platforms, which pin the old numerics (those platforms then skip until a machine of each "
                        "writes its own)")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        p.error(f"no golden named {unknown}; known: {list(BY_NAME)}")
    check_checkout()
    git = records.git_state()
    if git.get("dirty"):
        print("warning: the work tree has uncommitted changes to tracked files; goldens should be made from "
              "a committed revision", file=sys.stderr)
    for golden in (BY_NAME[n] for n in args.names) if args.names else GOLDENS:
        t0 = time.perf_counter()
        folder = write(golden, train(golden))
        if args.numerics_changed:
            for other in set(platforms(golden)) - {platform_key()}:
                shutil.rmtree(golden_folder(golden, other))
                print(f"{golden.name}: deleted the record of {other} (the old numerics)", flush=True)
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{golden.name}: {folder.relative_to(REPO_ROOT)} ({size:,} bytes, "
              f"{time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
