"""What every algorithm of a group shares: the group's set-up, its episode log, and on-policy rollouts.

A *group* is any number of independent runs of one task trained in one process (ppo/training/driver.py). Each run
has its own seeds, environments, parameters, optimizer state and (MuJoCo) observation normalizer; they
share only batched tensor operations, so a run's records do not depend on which runs share its group.

The on-policy rollout (``collect_batch``) steps all actors in lock-step, sampling from each run's own stream,
then computes GAE and normalizes advantages. One loop serves every family: what the network sees
(``VectorInputs``: observations through a running normalizer updated once per batch, before the policy
update, as ppo1; ``FrameInputs``: Atari's uint8 frames), how the policy acts (``GaussianActions``,
``CategoricalActions``) and what the learner is told of a step (the family's ``learner_signal``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import cv2
import numpy as np
import torch

from ..config.registry import specs
from ..config.run_config import RunConfig
from ..envs import family_of
from ..envs.family import EnvFamily, GroupEnvs
from ..nn.actor_critic import GaussianActorCritic
from ..nn.categorical import Categorical
from ..nn.normalizer import ObsNormalizer, RewardScaler
from .gae import gae


def derive_seeds(root: int, num_envs: int) -> dict:
    """Independent streams from one root seed (numpy SeedSequence), recorded in the manifest."""
    env_ss, init_ss, sample_ss = np.random.SeedSequence(root).spawn(3)
    return {
        "root": root,
        "envs": [int(s) for s in env_ss.generate_state(num_envs, dtype=np.uint32)],
        "init": int(init_ss.generate_state(1, dtype=np.uint64)[0] >> 1),
        "sampling": int(sample_ss.generate_state(1, dtype=np.uint64)[0] >> 1),
    }


class EpisodeLog:
    """Per-run environment-step counters and finished episodes (global_step, return, length).

    Runs that diverged, or already spent their budget, stop being recorded (``recording``) while the
    group goes on computing them; ``steps`` counts each run's environment steps. Its clocks, wall (``start``) and
    the process's CPU time (``cpu_start``), carry on over a checkpoint; ``cpu_start`` is None after a checkpoint
    written before CPU time was kept (2026-12-07), whose earlier parts' CPU time is unknown.
    """

    def __init__(self, num_runs: int, envs_per_run: int, start: float):
        self.envs_per_run = envs_per_run
        self.start = start
        self.cpu_start: float | None = time.process_time()
        self.steps = np.zeros(num_runs, dtype=np.int64)
        self.episodes: list[list[tuple]] = [[] for _ in range(num_runs)]
        self.recording = np.ones(num_runs, dtype=bool)

    def tick(self, active: np.ndarray | None = None) -> None:
        """One lock-step of the actors (``active``: mask over actors that stepped; default all)."""
        if active is None:
            self.steps += self.envs_per_run
        else:
            self.steps += active.reshape(len(self.steps), self.envs_per_run).sum(1)

    def finished(self, episodes: list[tuple[int, float, int]]) -> None:
        """Episodes (actor index, return, length) that ended at the current step."""
        for actor, ret, length in episodes:
            run = actor // self.envs_per_run
            if self.recording[run]:
                self.episodes[run].append((int(self.steps[run]), ret, length))

    def recent_return(self, last: int = 10) -> float:
        recent = [np.mean([e[1] for e in ep[-last:]]) for ep in self.episodes if ep]
        return float(np.mean(recent)) if recent else math.nan

    def state(self) -> dict:
        return {"steps": torch.from_numpy(self.steps.copy()), "episodes": self.episodes,
                "recording": self.recording.tolist(), "elapsed": time.perf_counter() - self.start,
                "cpu_elapsed": self.cpu_seconds()}

    def cpu_seconds(self) -> float | None:
        """The CPU time spent on the group so far (core-seconds, every part), or None where a part did not keep it."""
        return None if self.cpu_start is None else time.process_time() - self.cpu_start

    def load_state(self, state: dict) -> None:
        self.steps[:] = state["steps"].numpy()
        self.episodes = [[tuple(e) for e in ep] for ep in state["episodes"]]
        self.recording[:] = state["recording"]
        self.start = time.perf_counter() - state["elapsed"]
        cpu = state.get("cpu_elapsed")
        self.cpu_start = None if cpu is None else time.process_time() - cpu


@dataclass
class GroupContext:
    """Everything an algorithm needs from its group: configs, seeds, environments, random streams."""

    configs: list[RunConfig]  # per run; equal up to per-run objective settings (PPO only)
    seeds: list[dict]  # derive_seeds() per run
    envs: GroupEnvs  # actor i belongs to run i // num_envs
    family: EnvFamily  # whose environments: what the networks see, how a batch is collected
    log: EpisodeLog
    init_gens: list[torch.Generator] = field(default_factory=list)  # network initialisation, per run
    sample_gens: list[torch.Generator] = field(default_factory=list)  # exploration and minibatches, per run

    @property
    def cfg(self) -> RunConfig:
        return self.configs[0]

    @property
    def num_runs(self) -> int:
        return len(self.configs)


def group_context(task: str, configs: list[RunConfig], root_seeds: list[int]) -> GroupContext:
    """A group's context as the driver builds it: seeds derived from each run's root seed, the runs'
    environments in one lock-step set (actor i belongs to run i // num_envs), their random streams."""
    cfg, E = configs[0], configs[0].num_envs
    seeds = [derive_seeds(s, E) for s in root_seeds]
    env_seeds = [env_seed for sd in seeds for env_seed in sd["envs"]]
    family = family_of(task)
    envs = family.make(task, env_seeds, cfg)
    takers = [name for name, spec in specs().items() if spec.discrete_mlp]
    if family.observation == "vector" and envs.discrete and cfg.algorithm not in takers:
        envs.close()
        raise ValueError(f"{task} has discrete actions; algorithm {cfg.algorithm} is implemented for continuous "
                         f"actions only (discrete-action tasks: {', '.join(takers)})")
    return GroupContext(
        configs=list(configs), seeds=seeds, envs=envs, family=family,
        log=EpisodeLog(len(configs), E, time.perf_counter()),
        init_gens=[torch.Generator().manual_seed(sd["init"]) for sd in seeds],
        sample_gens=[torch.Generator().manual_seed(sd["sampling"]) for sd in seeds])


def to_runs(x, T: int, G: int, E: int):
    """[T, G*E, ...] (time, actor) -> [G, T*E, ...]: each run's batch, sample index t*E + e.

    Contiguous on purpose: a reduction over a strided row sums in another order than over a contiguous
    one, and the memory layout would then depend on the group size.
    """
    B = T * E
    x = x.reshape(T, G, E, *x.shape[2:]).swapaxes(0, 1).reshape(G, B, *x.shape[2:])
    return x.contiguous() if isinstance(x, torch.Tensor) else np.ascontiguousarray(x)


def from_runs(x: np.ndarray, T: int, G: int, E: int) -> np.ndarray:
    """The inverse of to_runs: [G, T*E, ...] -> [T, G*E, ...] (time, actor)."""
    return x.reshape(G, T, E, *x.shape[2:]).swapaxes(0, 1).reshape(T, G * E, *x.shape[2:])


@dataclass
class RolloutSignals:
    """What GAE needs to run again with another value function (PPO's ``adv_recompute``), [T, N] (time, actor)."""

    rewards: np.ndarray  # as the learner sees them (scaled with reward_norm)
    terminated: np.ndarray  # bool
    truncated: np.ndarray  # bool: time limits
    last_obs: torch.Tensor  # [G, E, d]: network input of each actor's observation after the last step
    final_obs: torch.Tensor | None  # [G, B, d]: network input of the final observation where a time limit ended an
    #                                 episode (other entries unused); None unless time_limit is "bootstrap"


@dataclass
class Batch:
    """One on-policy batch per run, [G, B, ...] with B = num_envs · horizon."""

    obs: torch.Tensor  # MuJoCo: normalized observations (normalizer updated with this batch first); Atari: uint8 frames
    actions: torch.Tensor  # Gaussian actions, or [G, B, 1] action indices as floats (discrete actions, Atari)
    advantages: torch.Tensor  # GAE, normalized as the config says
    returns: torch.Tensor  # λ-returns: the value targets
    values: np.ndarray  # V(s_t) at collection time (of the observations normalized with the statistics before this batch)
    explained_variance: np.ndarray  # [G]: of the returns by those values
    rollout_seconds: float
    signals: RolloutSignals | None = None  # kept only with adv_recompute
    policy: Categorical | None = None  # Atari: π(.|s) [G, B] the rollout acted with (π_old of PPO and A2C)


class VectorInputs:
    """Vector observations as an MLP sees them: normalized with each run's running statistics, which take in
    a batch once it is complete, before the update (ppo1)."""

    def __init__(self, ctx: GroupContext, normalizer: ObsNormalizer):
        self.normalizer, self.shape = normalizer, (ctx.num_runs, ctx.cfg.num_envs, ctx.envs.obs_dim)

    def buffer(self, T: int, N: int) -> np.ndarray:
        return np.zeros((T, N, self.shape[-1]))

    def __call__(self, obs: np.ndarray) -> torch.Tensor:  # [N, d] -> [G, E, d]
        return self.normalizer(obs.reshape(self.shape))

    def learn(self, obs_buf: np.ndarray) -> None:
        """The running statistics take in a complete batch [T, N, d]."""
        G, E, _ = self.shape
        self.normalizer.update(to_runs(obs_buf, len(obs_buf), G, E))

    def batch(self, obs_buf: np.ndarray) -> torch.Tensor:
        """[T, N, d] -> each run's [G, B, d], normalized."""
        G, E, _ = self.shape
        return self.normalizer(to_runs(obs_buf, len(obs_buf), G, E))


class FrameInputs:
    """Atari frame stacks as the convolutional network sees them: uint8, scaled inside the network."""

    def __init__(self, ctx: GroupContext):
        self.shape = (ctx.num_runs, ctx.cfg.num_envs, *ctx.envs.obs_shape)

    def buffer(self, T: int, N: int) -> np.ndarray:
        return np.zeros((T, N, *self.shape[2:]), dtype=np.uint8)

    def __call__(self, obs: np.ndarray) -> torch.Tensor:  # [N, C, H, W] -> [G, E, C, H, W]
        return torch.from_numpy(obs).view(self.shape)

    def learn(self, obs_buf: np.ndarray) -> None:
        """Nothing: the network's pixel scale is fixed."""

    def batch(self, obs_buf: np.ndarray) -> torch.Tensor:
        """[T, N, C, H, W] -> the batch's [G, B, C, H, W] as a view of channels-last memory ([G, B, H, W, C]),
        the layout the update's convolutions want."""
        G, E, C, H, W = self.shape
        T, N = obs_buf.shape[:2]
        frames = torch.from_numpy(channels_last(obs_buf.reshape(T * N, C, H, W)).reshape(T, N, H, W, C))
        return to_runs(frames, T, G, E).permute(0, 1, 4, 2, 3)


class GaussianActions:
    """A Gaussian policy acts with mean + σ·noise, the noise of the whole batch drawn first from each run's
    own generator; the environments get the actions clipped to their box where the config says."""

    log_probs = None  # the policy is not kept: PPO's π_old is recomputed on the whole batch

    def __init__(self, ctx: GroupContext, agent: GaussianActorCritic):
        cfg, envs, self.agent = ctx.cfg, ctx.envs, agent
        self.width = envs.act_dim
        self.shape, self.envs, self.clip = (ctx.num_runs, cfg.num_envs, envs.act_dim), envs, cfg.action_clip
        noise = torch.stack([torch.randn(cfg.horizon, cfg.num_envs, envs.act_dim, generator=g)
                             for g in ctx.sample_gens], dim=1)  # [T, G, E, A]
        # σ·noise of every step at once: an elementwise product, the same bits as one step at a time
        self.scaled_noise = agent.log_std.exp() * noise

    def __call__(self, x: torch.Tensor, t: int, out: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
        """V(s) and the environments' actions; the learner's action goes into ``out`` [N, A]."""
        value = self.agent.value_of(x)
        torch.add(self.agent.policy_mean(x), self.scaled_noise[t], out=out.view(self.shape))
        env_action = out.numpy().astype(np.float64)
        if not np.isfinite(env_action).all():  # only a diverged run's; it is no longer recorded
            env_action = np.nan_to_num(env_action, posinf=0.0, neginf=0.0)
        if self.clip:  # in place on the fresh float64 copy
            np.minimum(np.maximum(env_action, self.envs.low, out=env_action), self.envs.high, out=env_action)
        return value, env_action


class CategoricalActions:
    """A categorical policy acts by inverse-CDF sampling from each run's own uniforms (drawn for the whole
    batch first); an action is kept as a [.., 1] index, a float like a Gaussian's. With ``keep_policy`` the
    batch keeps π(.|s) the actors sampled from (the shared Atari network: π_old without another pass)."""

    width = 1

    def __init__(self, ctx: GroupContext, agent, keep_policy: bool):
        T, N = ctx.cfg.horizon, ctx.num_runs * ctx.cfg.num_envs
        self.agent, self.N = agent, N
        self.uniforms = torch.stack([torch.rand(T, ctx.cfg.num_envs, generator=g) for g in ctx.sample_gens],
                                    dim=1)  # [T, G, E]
        self.log_probs = torch.zeros(T, N, ctx.envs.num_actions) if keep_policy else None

    def __call__(self, x: torch.Tensor, t: int, out: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
        policy, value = self.agent.evaluate(x)
        action = policy.sample(self.uniforms[t]).view(self.N)
        out[:, 0] = action
        if self.log_probs is not None:
            self.log_probs[t] = policy.logits.view(self.N, -1)
        return value, action.numpy()


def collect_batch(ctx: GroupContext, agent, normalizer: ObsNormalizer | None = None,
                  reward_scaler: RewardScaler | None = None) -> Batch:
    """Roll out ``cfg.horizon`` lock-steps of every actor, then GAE and advantages: one batch per run.

    What the network sees comes from the environment family (vector observations through the running
    ``normalizer``, or Atari's frames), how it acts from the policy (Gaussian or categorical), what the
    learner is told of a step from the family's ``learner_signal`` (an Atari protocol clips rewards and ends
    the horizon at a lost life; the recorded episodes stay raw whole games), then ``reward_scaler`` where
    the config scales rewards. Every draw comes from each run's own generator."""
    t0 = time.perf_counter()
    cfg, envs, G, E, T = ctx.cfg, ctx.envs, ctx.num_runs, ctx.cfg.num_envs, ctx.cfg.horizon
    N, pixels = G * E, ctx.family.observation == "pixels"
    bootstrap_time_limit = cfg.time_limit == "bootstrap"
    inputs = FrameInputs(ctx) if pixels else VectorInputs(ctx, normalizer)
    obs_buf = inputs.buffer(T, N)
    rew_buf, val_buf, final_val_buf = np.zeros((T, N)), np.zeros((T, N)), np.zeros((T, N))
    term_buf, trunc_buf = np.zeros((T, N), bool), np.zeros((T, N), bool)
    recompute = cfg.ppo is not None and cfg.ppo.adv_recompute  # PPO's GAE before every epoch
    keep_final_obs = recompute and bootstrap_time_limit  # for V(final observation) in every epoch
    final_obs_buf = inputs.buffer(T, N) if keep_final_obs else None
    # inference mode: no autograd bookkeeping on the per-step ops (the same kernels, so the same bits)
    with torch.inference_mode():
        act = CategoricalActions(ctx, agent, keep_policy=pixels) if envs.discrete else GaussianActions(ctx, agent)
        act_buf = torch.zeros(T, N, act.width)
        for t in range(T):
            obs_buf[t] = envs.obs
            value, env_action = act(inputs(envs.obs), t, act_buf[t])
            val_buf[t] = value.view(N).numpy()
            raw_reward, terminated, truncated, final_obs, finished = envs.step(env_action)
            rew_buf[t], term_buf[t], trunc_buf[t] = ctx.family.learner_signal(envs, raw_reward, terminated, truncated)
            if reward_scaler is not None:
                rew_buf[t] = reward_scaler(rew_buf[t], term_buf[t] | trunc_buf[t])
            if bootstrap_time_limit and trunc_buf[t].any():
                # V of the final observation of a time-limited episode, batched over all actors
                final = envs.obs.copy()
                for i in np.flatnonzero(trunc_buf[t]):
                    final[i] = final_obs[i]
                final_val_buf[t] = agent.value_of(inputs(final)).view(N).numpy()
                if keep_final_obs:
                    final_obs_buf[t] = final
            ctx.log.tick()
            ctx.log.finished(finished)
        last_value = agent.value_of(inputs(envs.obs)).view(N).numpy()
    next_values = np.concatenate([val_buf[1:], last_value[None]])
    if bootstrap_time_limit:
        next_values = np.where(trunc_buf, final_val_buf, next_values)
    inputs.learn(obs_buf)
    batch = finish_batch(ctx, inputs.batch(obs_buf), to_runs(act_buf, T, G, E), rew_buf, val_buf, next_values,
                         term_buf, trunc_buf, time.perf_counter() - t0)
    if act.log_probs is not None:
        batch.policy = Categorical.of_log_probs(to_runs(act.log_probs, T, G, E))
    if recompute:  # the next values are recomputed too, so keep the observations they come from
        final = inputs.batch(final_obs_buf) if keep_final_obs else None
        batch.signals = RolloutSignals(rew_buf, term_buf, trunc_buf, inputs(envs.obs), final)
    return batch


def advantages_and_returns(cfg: RunConfig, G: int, rew_buf, val_buf, next_values, term_buf, trunc_buf):
    """GAE over [T, N] rollout arrays, then each run's advantages [G, B] (float32, normalized as the config
    says) and λ-returns [G, B] (float64)."""
    E, T = cfg.num_envs, cfg.horizon
    end_buf = term_buf | trunc_buf
    # "terminal" treats time limits as the end of value too (ppo1); "bootstrap" only true terminations
    terminated = (term_buf if cfg.time_limit == "bootstrap" else end_buf).astype(np.float64)
    adv, returns = gae(rew_buf, val_buf, next_values, terminated, end_buf.astype(np.float64), cfg.gamma,
                       cfg.gae_lambda)
    adv_all = torch.from_numpy(to_runs(adv, T, G, E)).float()
    if cfg.adv_norm == "batch":
        adv_all = standardized(adv_all, correction=0)
    return adv_all, to_runs(returns, T, G, E)


def standardized(adv: torch.Tensor, correction: int) -> torch.Tensor:
    """Each run's advantages (a row of [G, n]) to mean 0 and std 1: (A − mean) / (std + 1e-8), the std with
    ``correction`` (0: over the whole batch, as ppo1's numpy std; 1: per minibatch, as CleanRL's torch std)."""
    return (adv - adv.mean(1, keepdim=True)) / (adv.std(1, correction=correction, keepdim=True) + 1e-8)


def finish_batch(ctx: GroupContext, obs, actions, rew_buf, val_buf, next_values, term_buf, trunc_buf,
                 rollout_seconds: float) -> Batch:
    """GAE over [T, N] rollout arrays, advantage normalization, and each run's batch."""
    cfg, G, E, T = ctx.cfg, ctx.num_runs, ctx.cfg.num_envs, ctx.cfg.horizon
    adv_all, returns = advantages_and_returns(cfg, G, rew_buf, val_buf, next_values, term_buf, trunc_buf)
    values = to_runs(val_buf, T, G, E)
    return Batch(obs=obs, actions=actions, advantages=adv_all, returns=torch.from_numpy(returns).float(),
                 values=values, explained_variance=explained_variance(values, returns),
                 rollout_seconds=rollout_seconds)


def recompute_advantages(cfg: RunConfig, batch: Batch, value_of) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE again from the rollout's rewards and episode ends with ``value_of`` (the value network as it is now;
    [G, n, ...] -> [G, n]): V of the batch's observations, of each actor's observation after the last step and,
    with time_limit "bootstrap", of the final observations of time-limited episodes. Andrychowicz et al. 2021
    (arXiv:2006.05990) recompute advantages at the start of every pass over the data. Returns each run's
    advantages [G, B] (normalized as the config says) and λ-returns [G, B], float32."""
    s, G = batch.signals, batch.obs.shape[0]
    E, T = cfg.num_envs, cfg.horizon
    with torch.no_grad():
        values = from_runs(value_of(batch.obs).numpy().astype(np.float64), T, G, E)
        last = value_of(s.last_obs).reshape(G * E).numpy().astype(np.float64)
        next_values = np.concatenate([values[1:], last[None]])
        if s.final_obs is not None:
            final = from_runs(value_of(s.final_obs).numpy().astype(np.float64), T, G, E)
            next_values = np.where(s.truncated, final, next_values)
    adv, returns = advantages_and_returns(cfg, G, s.rewards, values, next_values, s.terminated, s.truncated)
    return adv, torch.from_numpy(returns).float()


def channels_last(frames: np.ndarray) -> np.ndarray:
    """uint8 frames [n, C, H, W] -> the same frames as [n, H, W, C], a copy: OpenCV's merge of the C planes,
    about 8x faster than numpy's or torch's transposing copy (measured on 1024 Atari frame stacks)."""
    n, C, H, W = frames.shape
    planes = frames.reshape(n, C, H * W)
    return cv2.merge([planes[:, c] for c in range(C)]).reshape(n, H, W, C)


def explained_variance(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """1 − Var[target − pred] / Var[target], per row."""
    var = target.var(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var == 0, np.nan, 1 - (target - pred).var(axis=1) / var)
