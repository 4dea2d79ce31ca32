#!/usr/bin/env python
"""Raw Atari environment throughput: our lock-step loop beside gymnasium's and ale-py's vector envs.

    python benchmarks/atari_env_throughput.py --games Pong Breakout --envs 8 --steps 500 --repeats 3 \
        --out results/benchmarks/atari_env_throughput.csv

Random actions (presampled), agent steps of `frame_skip` emulator frames, the protocol's settings
(default paper2017). Steps/s counts agent steps summed over the envs; median of `--repeats`, interleaved
so drift in machine load hits every method alike. Methods:
  lockstep        ppo.envs.atari.AtariLockstepEnvs: a plain loop over make_atari_env (what the trainer uses)
  sync            gymnasium SyncVectorEnv of make_atari_env
  async           gymnasium AsyncVectorEnv of make_atari_env (one process per env)
  ale-vector-T    ale_py.vector_env.AtariVectorEnv (C++ preprocessing, T threads), set to the same protocol
AtariVectorEnv is not the same environment, even when configured alike (ale-py 0.12.1): it draws 0..noop_max-1
no-ops (gymnasium: 1..noop_max), fills a new episode's frame stack with zeros (gymnasium: copies of the first
frame), and counts the frame cap from the end of the no-ops (gymnasium: from the reset, ALE's own counter).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import ale_py
import gymnasium as gym
import numpy as np
import pandas as pd
from ale_py.registration import rom_id_to_name
from ale_py.vector_env import AtariVectorEnv
from throughput import show_and_save  # benchmarks/throughput.py

from ppo.config.protocols import AtariProtocol, load_protocol
from ppo.envs.atari import AtariLockstepEnvs, make_atari_env

ROM_IDS = {rom_id_to_name(rom): rom for rom in ale_py.roms.get_all_rom_ids()}  # "Pong" -> "pong"


class Lockstep:
    def __init__(self, task: str, n: int, protocol: AtariProtocol):
        self.envs = AtariLockstepEnvs(task, list(range(n)), protocol)
        self.num_actions = self.envs.num_actions

    def step(self, actions):
        self.envs.step(actions)

    def close(self):
        self.envs.close()


class GymVector:
    def __init__(self, task: str, n: int, protocol: AtariProtocol, vector_cls):
        self.envs = vector_cls([lambda: make_atari_env(task, protocol) for _ in range(n)])
        self.envs.reset(seed=0)
        self.num_actions = int(self.envs.single_action_space.n)

    def step(self, actions):
        self.envs.step(actions)  # next-step autoreset (the default): a step after an episode end resets

    def close(self):
        self.envs.close()


class ALEVector:
    def __init__(self, task: str, n: int, protocol: AtariProtocol, threads: int):
        p = protocol
        game = ROM_IDS[task.removeprefix("ALE/").removesuffix("-v5")]
        self.envs = AtariVectorEnv(
            game, n, num_threads=threads, repeat_action_probability=p.repeat_action_probability,
            full_action_space=p.full_action_space, noop_max=p.noop_max, frameskip=p.frame_skip,
            maxpool=p.frame_skip > 1, img_height=p.screen_size, img_width=p.screen_size, grayscale=p.grayscale,
            stack_num=p.frame_stack, max_num_frames_per_episode=p.max_episode_frames,
            # off: the learner, not the env, applies the life-loss signal and reward clipping; no FIRE at reset
            episodic_life=False, life_loss_info=False, reward_clipping=False, use_fire_reset=False)
        self.envs.reset(seed=0)
        self.num_actions = int(self.envs.single_action_space.n)

    def step(self, actions):
        self.envs.step(actions)

    def close(self):
        self.envs.close()


def steps_per_second(stepper, actions: np.ndarray) -> float:
    start = time.perf_counter()
    for row in actions:
        stepper.step(row)
    return actions.size / (time.perf_counter() - start)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", default=["Pong", "Breakout"])
    p.add_argument("--protocol", default="paper2017")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=500, help="agent steps per env in each repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts for AtariVectorEnv")
    p.add_argument("--methods", nargs="+", default=["lockstep", "sync", "async", "ale-vector"])
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    protocol = load_protocol(args.protocol)
    rng = np.random.default_rng(0)

    rows = []
    for game in args.games:
        task = f"ALE/{game}-v5"
        makers = {"lockstep": lambda: Lockstep(task, args.envs, protocol),
                  "sync": lambda: GymVector(task, args.envs, protocol, gym.vector.SyncVectorEnv),
                  "async": lambda: GymVector(task, args.envs, protocol, gym.vector.AsyncVectorEnv)}
        for t in args.threads:
            makers[f"ale-vector-{t}"] = lambda t=t: ALEVector(task, args.envs, protocol, t)
        steppers = {name: make() for name, make in makers.items()
                    if name in args.methods or name.rsplit("-", 1)[0] in args.methods}
        samples = {name: [] for name in steppers}
        for name, stepper in steppers.items():  # warm-up, untimed
            steps_per_second(stepper, rng.integers(stepper.num_actions, size=(20, args.envs)))
        for _ in range(args.repeats):
            for name, stepper in steppers.items():
                actions = rng.integers(stepper.num_actions, size=(args.steps, args.envs))
                samples[name].append(steps_per_second(stepper, actions))
        for name, stepper in steppers.items():
            stepper.close()
            values = samples[name]
            rows.append({"task": task, "protocol": protocol.name, "method": name, "envs": args.envs,
                         "steps_per_s": round(statistics.median(values)), "min": round(min(values)),
                         "max": round(max(values)), "repeats": len(values),
                         "agent_steps_per_repeat": args.steps * args.envs, "frame_skip": protocol.frame_skip})
    show_and_save(pd.DataFrame(rows), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
