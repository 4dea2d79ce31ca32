#!/usr/bin/env python
"""Training throughput beside the raw simulator and Stable-Baselines3, measured in one invocation.

    python benchmarks/throughput.py --tasks Hopper-v5 Walker2d-v5 InvertedDoublePendulum-v5 Swimmer-v5 \
        HalfCheetah-v5 Reacher-v5 InvertedPendulum-v5 --groups 1 33 --steps 6144 --repeats 3 --sb3 --jobs 2 \
        --out results/benchmarks/throughput_table1.csv
    python benchmarks/throughput.py --task Hopper-v5 --groups 3 --variants clip_0.2 a2c trpo cem
    python benchmarks/throughput.py --task ALE/Breakout-v5 --groups 1 --steps 8192 --variants atari_ppo atari_a2c
    python benchmarks/throughput.py --task ALE/Breakout-v5 --groups 1 --steps 8192 --variants atari_ppo --sb3
    python benchmarks/throughput.py --tasks Swimmer-v5 HalfCheetah-v5 --groups 33 --steps 6144 --repeats 5 --against HEAD~3

For each task it measures, each `--repeats` times interleaved (median reported):
  raw      gymnasium env stepped with presampled random actions (same construction as training; for an
           Atari task the 8 environments of ppo.envs.atari.AtariLockstepEnvs under the paper2017 protocol)
  lockstep-N  the N lock-step gymnasium environments of a group (ppo.envs.lockstep.LockstepEnvs), random actions
  batched-N   the same N environments as training steps them (ppo.envs.mujoco.BatchedMujocoEnvs: gymnasium's
              results bit for bit), random actions (MuJoCo v5 tasks)
  floor-N     what no implementation of this training can beat: MuJoCo's own mj_step for the group (no
              observation, reward or reset) plus the update's arithmetic (its FLOPs, update_flops) at the
              matmul rate measured on this core with the update's own shapes
  ours-N   PPO paper preset, a group of N runs in one process, each run `--steps` env steps
           (with --variants: each variant file's algorithm and settings, e.g. `trpo-N`, side by side):
           over the whole call, and in its last iteration (steady) with that iteration's rollout share
  sb3      Stable-Baselines3 PPO with the paper's hyperparameters (optional: pip install '.[bench]'); for an
           Atari task its CnnPolicy at Table 5's settings (benchmarks/atari_sb3_reference.py)
  ours@REV-N  with --against REV: the same training with the ppo package of git revision REV, interleaved with
           ours-N; prints new / old per measure (paired medians) and whether every run's records are identical
Each measure on one core (torch threads = 1); `--jobs 2` measures two tasks at once, one per core.
Steps/s counts environment steps taken, summed over the group's runs. Ratios: ours/raw (how close training
gets to pure simulation), ours/batched-N (the same simulator without learning), ours/sb3. A summary per task
follows the full table. With all seven MuJoCo tasks it projects the paper-scale
Table 1 grid (or, with --variants, one job per task and variant as Figure 3 runs) on 2 cores.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import torch

from ppo.config.experiments import load_preset
from ppo.config.protocols import load_protocol
from ppo.config.run_config import build_config
from ppo.envs.atari import AtariLockstepEnvs, is_atari
from ppo.envs.lockstep import LockstepEnvs
from ppo.envs.mujoco import BatchedMujocoEnvs, supported


def raw_steps_per_second(task: str, steps: int) -> float:
    """One environment, the simulator alone: the issue's yardstick."""
    if is_atari(task):
        return raw_atari_steps_per_second(task, steps)
    env = gym.make(task, disable_env_checker=True)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def raw_group_steps_per_second(task: str, n_envs: int, steps: int, batched: bool = False) -> float:
    """The environments of a group of ``n_envs`` runs with random actions: gymnasium's lock-step loop
    (ppo.envs.lockstep.LockstepEnvs) or, with ``batched``, the batched path training steps (BatchedMujocoEnvs)."""
    envs = (BatchedMujocoEnvs if batched else LockstepEnvs)(task, list(range(n_envs)))
    return timed_steps(envs, group_actions(task, n_envs, steps))


def group_actions(task: str, n_envs: int, steps: int) -> np.ndarray:
    """Uniform random actions [steps // n_envs, n_envs, act_dim], the same for every measure of a task."""
    space = gym.make(task, disable_env_checker=True).action_space
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    return np.random.default_rng(0).uniform(low, high, size=(max(1, steps // n_envs), n_envs, space.shape[0]))


def mj_step_steps_per_second(task: str, actions: np.ndarray) -> float:
    """MuJoCo alone for a group: set the controls, mj_step(nstep=frame_skip) on each of N MjData; no
    observation, reward, time limit or reset (a fallen Hopper stays down), so not the same states."""
    import mujoco

    env = gym.make(task, disable_env_checker=True).unwrapped
    model, skip = env.model, env.frame_skip
    datas = [mujoco.MjData(model) for _ in range(actions.shape[1])]
    for data in datas:
        mujoco.mj_resetData(model, data)
        mujoco.mj_forward(model, data)
    ctrls = [data.ctrl for data in datas]
    start = time.perf_counter()
    for row in actions:
        for ctrl, data, a in zip(ctrls, datas, row):
            ctrl[:] = a
            mujoco.mj_step(model, data, nstep=skip)
    return actions.shape[0] * actions.shape[1] / (time.perf_counter() - start)


def update_flops(obs_dim: int, act_dim: int, cfg) -> float:
    """Multiply-adds ×2 of one PPO update per environment step: ``epochs`` forward and backward passes of
    the policy and value MLPs over the batch, plus π_old and the final KL (two policy forwards). Backward
    costs twice a forward (input and weight gradients) less the first layer's input gradient."""
    def forward_and_train(sizes):
        forward = 2 * sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
        return forward, 3 * forward - 2 * sizes[0] * sizes[1]
    pol_fwd, pol_train = forward_and_train([obs_dim, *cfg.hidden_sizes, act_dim])
    _, val_train = forward_and_train([obs_dim, *cfg.hidden_sizes, 1])
    return cfg.ppo.epochs * (pol_train + val_train) + 2 * pol_fwd


def matmul_flops_per_second(runs: int, cfg, repeats: int = 5) -> float:
    """Best of ``repeats`` rates of the update's largest product, [runs, minibatch, h] @ [runs, h, h]."""
    h, m = cfg.hidden_sizes[-1], cfg.ppo.minibatch_size
    a, b = torch.randn(runs, m, h), torch.randn(runs, h, h)
    calls, best = 50, 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            torch.bmm(a, b)
        best = max(best, calls * 2 * runs * m * h * h / (time.perf_counter() - start))
    return best


def floor_steps_per_second(task: str, n_envs: int, steps: int) -> dict:
    """MuJoCo's physics for the group plus the update's arithmetic at the measured matmul rate."""
    cfg = paper_config(2048)
    actions = group_actions(task, n_envs, steps)
    sim = 1 / mj_step_steps_per_second(task, actions)
    rate = matmul_flops_per_second(n_envs, cfg)
    learn = update_flops(obs_dim(task), actions.shape[2], cfg) / rate
    return {"sps": 1 / (sim + learn), "gflops": rate / 1e9, "update_share": learn / (sim + learn)}


def obs_dim(task: str) -> int:
    return gym.make(task, disable_env_checker=True).observation_space.shape[0]


def timed_steps(envs, actions: np.ndarray) -> float:
    """Steps/s of ``envs.step`` over the rows of ``actions`` [rows, n_envs, ...]; closes ``envs``."""
    start = time.perf_counter()
    for row in actions:
        envs.step(row)
    elapsed = time.perf_counter() - start
    envs.close()
    return actions.shape[0] * actions.shape[1] / elapsed


def raw_atari_steps_per_second(task: str, steps: int, num_envs: int = 8) -> float:
    """Agent steps/s (4 frames each) of the lock-step environments the Atari runs train on."""
    envs = AtariLockstepEnvs(task, list(range(num_envs)), load_protocol("paper2017"))
    actions = np.random.default_rng(0).integers(envs.num_actions, size=(steps // num_envs, num_envs))
    start = time.perf_counter()
    for row in actions:
        envs.step(row)
    elapsed = time.perf_counter() - start
    envs.close()
    return actions.size / elapsed


def paper_config(total_steps: int):
    """The PPO paper preset (Table 3) with a benchmark's step budget."""
    return build_config({**load_preset("ppo_mujoco_paper").config, "total_steps": total_steps}, "benchmark")


def package_at(rev: str) -> str:
    """The name under which the ``ppo`` package of git revision ``rev`` imports: ``ppo_at_<commit>``, extracted
    (``git archive``, with the experiments/, config/ and reference/ it reads beside it, those the revision has)
    into the temporary folder once."""
    root = Path(__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=10", f"{rev}^{{commit}}"], capture_output=True,
                            text=True, check=True).stdout.strip()
    name = f"ppo_at_{commit}"
    folder = Path(tempfile.gettempdir()) / f"throughput_{name}"
    if not (folder / name).is_dir():
        tree = subprocess.run(["git", "-C", str(root), "ls-tree", "--name-only", commit], capture_output=True,
                              text=True, check=True).stdout.split()
        folders = [f for f in ("ppo", "experiments", "config", "reference") if f in tree]  # Table 1 rows: reference/
        archive = subprocess.run(["git", "-C", str(root), "archive", commit, *folders],
                                 capture_output=True, check=True).stdout
        work = Path(tempfile.mkdtemp(prefix=f"throughput_{name}."))
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(work, filter="data")
        (work / "ppo").rename(work / name)  # the package imports itself relatively: any name will do
        try:
            work.rename(folder)
        except OSError:  # another process (--jobs) extracted it first
            shutil.rmtree(work, ignore_errors=True)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))  # --against: the old revision's package, imported beside ours by name
    return name


def records_digest(results) -> str:
    """One hash of every run's deterministic records (updates and episodes, exact values and column names)."""
    h = hashlib.sha256()
    for r in results:
        for frame in (r.updates, r.episodes):
            h.update(repr(list(frame.columns)).encode())
            h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return h.hexdigest()


def layered(package: str, module: str, before_layers: str):
    """``package.module``, or its name before the package was split into layers (2026-11-26): a revision
    compared with --against may be either."""
    try:
        return importlib.import_module(f"{package}.{module}")
    except ModuleNotFoundError:
        return importlib.import_module(f"{package}.{before_layers}")


def ours_steps_per_second(task: str, n_runs: int, steps: int, variant: str | None = None,
                          package: str = "ppo") -> dict:
    """Group steps/s over the whole call (set-up included) and in its last iteration (steady state, what a
    1M-step run mostly sees), with that iteration's split into rollout and update. ``package``: the ppo package
    that trains (``package_at``: another revision's)."""
    train = layered(package, "training.driver", "train")
    experiments = layered(package, "config.experiments", "experiments")
    if variant is None:
        config = layered(package, "config.run_config", "config")
        cfg = config.build_config({**experiments.load_preset("ppo_mujoco_paper").config, "total_steps": steps},
                                  "benchmark")
    else:
        cfg = experiments.load_variant(variant, total_steps=steps).config
    specs = [train.RunSpec(f"bench{i}", task, cfg, i) for i in range(n_runs)]
    start = time.perf_counter()
    results = train.train_group(specs, log=lambda _: None)
    total = time.perf_counter() - start
    last = results[0].timing.iloc[-1]  # one group-wide clock: every run's row holds the same seconds
    last_seconds = last.rollout_seconds + last.optimize_seconds
    last_steps = sum(int(r.timing.global_step.iloc[-1] - (r.timing.global_step.iloc[-2] if len(r.timing) > 1 else 0))
                     for r in results)
    # steps actually taken: CEM finishes whole generations of episodes, so it can overshoot ``steps`` far
    taken = sum(int(r.timing.global_step.iloc[-1]) for r in results)
    return {"sps": taken / total, "steady_sps": last_steps / last_seconds,
            "rollout_share": last.rollout_seconds / last_seconds, "records": records_digest(results)}


def sb3_steps_per_second(task: str, steps: int) -> float:
    if is_atari(task):  # SB3's own Atari stack at Table 5's settings (benchmarks/atari_sb3_reference.py)
        from atari_sb3_reference import train_sb3
        return train_sb3(task.removeprefix("ALE/").removesuffix("-v5"), steps, 0)[1]
    from sb3_episodes import silent
    from stable_baselines3 import PPO  # optional dependency

    env = gym.make(task)
    model = PPO("MlpPolicy", env, n_steps=2048, batch_size=64, n_epochs=10, learning_rate=3e-4, gamma=0.99,
                gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, vf_coef=1.0, max_grad_norm=1e9,
                policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": torch.nn.Tanh},
                device="cpu", seed=0, verbose=0)
    silent(model)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return steps / (time.perf_counter() - start)


def measure_task(task: str, groups: list[int], steps: int, repeats: int, variants: list[str] | None,
                 sb3: bool, against: str | None = None) -> list[dict]:
    """Every measure of one task, ``repeats`` times interleaved (drift in machine load hits them alike);
    one row per measure with the median. With ``against`` (a git revision), each ours-N beside the same
    training at that revision (``ours@REV-N``)."""
    torch.set_num_threads(1)
    old_package = package_at(against) if against else None
    raw_steps = max(steps, 20_000)
    measures = {"raw": lambda: {"sps": raw_steps_per_second(task, raw_steps)}}
    for n in groups:
        if n > 1 and not is_atari(task):
            measures[f"lockstep-{n}"] = lambda n=n: {"sps": raw_group_steps_per_second(task, n, raw_steps)}
            if supported(task):  # what training steps, and the floor under it
                measures[f"batched-{n}"] = lambda n=n: {"sps": raw_group_steps_per_second(task, n, raw_steps, True)}
                measures[f"floor-{n}"] = lambda n=n: floor_steps_per_second(task, n, raw_steps)
        for variant in variants or [None]:
            measures[f"{variant or 'ours'}-{n}"] = lambda n=n, v=variant: ours_steps_per_second(task, n, steps, v)
            if old_package:
                measures[f"{variant or 'ours'}@{against}-{n}"] = lambda n=n, v=variant: ours_steps_per_second(
                    task, n, steps, v, old_package)
    if sb3:
        measures["sb3"] = lambda: {"sps": sb3_steps_per_second(task, steps)}
    samples: dict[str, list[dict]] = {k: [] for k in measures}
    for i in range(repeats):
        # against another revision: every other repeat in reverse order, so neither side always runs first
        for name, measure in (reversed(measures.items()) if against and i % 2 else measures.items()):
            samples[name].append(measure())

    def median(name: str, key: str = "sps") -> float:
        return statistics.median(s[key] for s in samples[name]) if name in samples else np.nan

    raw, ref = median("raw"), median("sb3")
    rows = []
    for name, values in samples.items():
        sps = [v["sps"] for v in values]
        med = statistics.median(sps)
        group = int(name.rsplit("-", 1)[1]) if "-" in name else 1
        # the group's simulator as training steps it: batched where the task has that path
        raw_group = raw if group == 1 else median(f"batched-{group}") if f"batched-{group}" in samples \
            else median(f"lockstep-{group}")
        rows.append({
            "task": task, "measure": name, "runs": group, "steps_per_s": round(med),
            "min": round(min(sps)), "max": round(max(sps)), "repeats": len(values),
            "steady_steps_per_s": round(median(name, "steady_sps")) if "steady_sps" in values[0] else None,
            "rollout_share": round(median(name, "rollout_share"), 2) if "rollout_share" in values[0] else None,
            "ratio_vs_raw": round(med / raw, 3),
            "steady_vs_raw": round(median(name, "steady_sps") / raw, 3) if "steady_sps" in values[0] else None,
            "steady_vs_raw_group": round(median(name, "steady_sps") / raw_group, 3) if "steady_sps" in values[0] else None,
            "ratio_vs_sb3": round(med / ref, 2) if ref == ref else None,
            "matmul_gflops": round(median(name, "gflops"), 1) if "gflops" in values[0] else None,
            "torch_threads": 1,
        })
        if against and f"@{against}-" in name:  # new / old, paired by repeat, and the records compared
            new = samples[name.replace(f"@{against}-", "-")]
            rows[-1].update({
                "new_vs_old": round(statistics.median(b["sps"] / a["sps"] for a, b in zip(values, new)), 3),
                "steady_new_vs_old": round(statistics.median(b["steady_sps"] / a["steady_sps"]
                                                             for a, b in zip(values, new)), 3),
                "records_identical": all(a["records"] == b["records"] for a, b in zip(values, new))})
    return rows


def projected_grid_hours(table: pd.DataFrame, runs: int, steps: int, cores: int, measure: str | list[str],
                         column: str = "steps_per_s") -> float:
    """Wall hours of one job per row of ``measure`` (a task, or a task and algorithm: ``runs`` runs ×
    ``steps`` steps each) on ``cores`` cores, longest job first as the pipeline schedules them
    (workflow/rules/train.smk priority), at the measured rates."""
    rows = table[table.measure.isin([measure] if isinstance(measure, str) else measure)]
    seconds = sorted((runs * steps / rate for rate in rows[column]), reverse=True)
    load = [0.0] * cores
    for s in seconds:
        load[load.index(min(load))] += s
    return max(load) / 3600


TABLE1_TASKS = ("Hopper-v5", "Walker2d-v5", "InvertedDoublePendulum-v5", "Swimmer-v5", "HalfCheetah-v5",
                "Reacher-v5", "InvertedPendulum-v5")
# Issue 20's bar for a group's steady-state training rate, as a fraction of one plain gymnasium env's
STEADY_GOAL = {"Hopper-v5": 1.0, "Walker2d-v5": 1.0}


def summary(table: pd.DataFrame, n: int) -> pd.DataFrame:
    """One row per task: the rates that matter side by side (steps/s) and the ratios to one raw env."""
    rows = []
    for task, t in table.groupby("task", sort=False):
        by = t.set_index("measure")
        get = lambda m, c="steps_per_s": by.loc[m, c] if m in by.index else np.nan  # noqa: E731
        steady, raw = get(f"ours-{n}", "steady_steps_per_s"), get("raw")
        goal = STEADY_GOAL.get(task, 0.6)
        rows.append({"task": task, "raw": get("raw"), f"lockstep-{n}": get(f"lockstep-{n}"),
                     f"batched-{n}": get(f"batched-{n}"), f"floor-{n}": get(f"floor-{n}"), "ours-1": get("ours-1"),
                     f"ours-{n}": get(f"ours-{n}"), f"ours-{n} steady": steady, "sb3": get("sb3"),
                     "steady/raw": round(steady / raw, 2), "goal": goal, "met": bool(steady / raw >= goal),
                     "steady/floor": round(steady / get(f"floor-{n}"), 2), f"ours-{n}/sb3": get(f"ours-{n}", "ratio_vs_sb3")})
    return pd.DataFrame(rows)


def show_and_save(table: pd.DataFrame, out: Path | None) -> None:
    """Every benchmark's ending: the table on stdout and, with ``--out``, as CSV."""
    print(table.to_string(index=False))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(out, index=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", "--tasks", dest="tasks", nargs="+", default=["Hopper-v5"])
    p.add_argument("--groups", type=int, nargs="+", default=[1, 11, 33])
    p.add_argument("--steps", type=int, default=8192, help="env steps per run (multiple of 2048)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--variants", nargs="+", default=None,
                   help="experiments/variants files to measure instead of the PPO preset (any algorithm)")
    p.add_argument("--sb3", action="store_true", help="also measure Stable-Baselines3 PPO")
    p.add_argument("--jobs", type=int, default=1,
                   help="tasks measured at once, one process each (2 = both cores busy, as in the pipeline)")
    p.add_argument("--against", metavar="REV", default=None,
                   help="also train with the ppo package of this git revision, interleaved (ours@REV-N): new/old rates")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    work = [(t, args.groups, args.steps, args.repeats, args.variants, args.sb3, args.against) for t in args.tasks]
    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(args.jobs) as pool:
            per_task = list(pool.map(measure_task, *zip(*work)))
    else:
        per_task = [measure_task(*w) for w in work]
    table = pd.DataFrame([row for rows in per_task for row in rows])
    table["jobs_at_once"] = args.jobs
    show_and_save(table, args.out)

    if args.against:
        print(f"\nAgainst {args.against}: steps/s of the working tree ÷ the same training at {args.against} (median of "
              "the repeats' paired ratios; steady = last iteration), and whether every run's records are identical:")
        print(table[table.measure.str.contains("@", regex=False)][
            ["task", "measure", "new_vs_old", "steady_new_vs_old", "records_identical"]].to_string(index=False))
    table1_tasks = set(TABLE1_TASKS)
    if not args.variants and any(n > 1 for n in args.groups) and not any(map(is_atari, args.tasks)):
        n = max(args.groups)
        print(f"\nSummary, steps/s (group of {n}; goal: steady/raw, issue 20):")
        print(summary(table, n).to_string(index=False))
    if table1_tasks <= set(args.tasks) and 33 in args.groups and not args.variants:
        print("\nTable 1 at paper scale (7 jobs of 33 runs × 1M steps, longest first on 2 cores), projected "
              "from the rates above:")
        hours = {}
        for label, measure, column in [("simulator alone (raw, 1 env)", "raw", "steps_per_s"),
                                       ("gymnasium's loop, 33 envs (lockstep-33)", "lockstep-33", "steps_per_s"),
                                       ("batched simulator, 33 envs (batched-33)", "batched-33", "steps_per_s"),
                                       ("floor: mj_step + update FLOPs (floor-33)", "floor-33", "steps_per_s"),
                                       ("training, steady state (last iteration)", "ours-33", "steady_steps_per_s"),
                                       ("training, whole benchmark run (set-up included)", "ours-33", "steps_per_s")]:
            hours[label] = projected_grid_hours(table[table.task.isin(table1_tasks)], 33, 1_000_000, 2, measure, column)
            print(f"  {label:52s} {hours[label]:5.2f} h")
        ratio = hours["training, steady state (last iteration)"] / hours["simulator alone (raw, 1 env)"]
        print(f"  training (steady) / simulator alone (raw): {ratio:.2f} (goal: at most 1.15)")
    if table1_tasks <= set(args.tasks) and args.variants:
        for n in args.groups:
            hours = projected_grid_hours(table[table.task.isin(table1_tasks)], n, 1_000_000, 2,
                                         [f"{v}-{n}" for v in args.variants])
            print(f"\n{len(args.variants)} variants × 7 tasks, one job of {n} runs × 1M steps per task and variant "
                  f"(Figure 3 at paper scale with n = 3), longest first on 2 cores: {hours:.2f} h projected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
