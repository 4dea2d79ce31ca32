"""PPO for continuous control, for a *group* of independent runs trained in one process.

Read top to bottom: set-up, then per update (1) collect a rollout, (2) advantages, (3) K epochs of
minibatch updates of the surrogate objective, (4) adapt β and record. Every run in the group has its own
seeds, environments, parameters, Adam state, normalizer and β; they share only the batched tensor
operations, so a run's records do not depend on which runs share its group
(tests/test_group_independence.py).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from . import records
from . import gaussian
from .batched import BatchedAdam, GaussianActorCritic, per_run_grad_norm_clip
from .config import PPOConfig
from .envs import LockstepEnvs, task_version
from .gae import gae
from .normalizer import ObsNormalizer
from .objective import adapt_beta, objective_terms


@dataclass
class RunSpec:
    """One run: a task, a resolved config, a root seed, and where its records go."""

    run_id: str
    task: str
    config: PPOConfig
    seed: int
    out_dir: Path | None = None  # None: keep records in memory only (tests, benchmarks)
    meta: dict = field(default_factory=dict)  # study, variant, label, paper_row... copied to the manifest


@dataclass
class RunResult:
    spec: RunSpec
    episodes: pd.DataFrame
    updates: pd.DataFrame
    status: str  # "completed" | "diverged"
    diverged_at_step: int | None
    diverged_reason: str | None
    derived_seeds: dict


def derive_seeds(root: int, num_envs: int) -> dict:
    """Independent streams from one root seed (numpy SeedSequence), recorded in the manifest."""
    env_ss, init_ss, sample_ss = np.random.SeedSequence(root).spawn(3)
    return {
        "root": root,
        "envs": [int(s) for s in env_ss.generate_state(num_envs, dtype=np.uint32)],
        "init": int(init_ss.generate_state(1, dtype=np.uint64)[0] >> 1),
        "sampling": int(sample_ss.generate_state(1, dtype=np.uint64)[0] >> 1),
    }


def per_run(values, fill: float) -> torch.Tensor:
    return torch.tensor([fill if v is None else float(v) for v in values], dtype=torch.float32)


def explained_variance(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """1 − Var[target − pred] / Var[target], per row."""
    var = target.var(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var == 0, np.nan, 1 - (target - pred).var(axis=1) / var)


def train_group(specs: list[RunSpec], log=print, checkpoint: Path | None = None,
                checkpoint_every: int = 0) -> list[RunResult]:
    """Train the runs of ``specs`` together. With ``checkpoint``, the whole group state is saved there
    every ``checkpoint_every`` updates and a later call resumes from it, with records identical to an
    uninterrupted run (tests/test_checkpoint.py)."""
    cfg = specs[0].config
    task = specs[0].task
    for s in specs:
        if s.task != task or s.config.structural_key() != cfg.structural_key():
            raise ValueError(f"run {s.run_id} cannot share a group with {specs[0].run_id}: "
                             "task or non-objective settings differ")
    G, E, T, M = len(specs), cfg.num_envs, cfg.horizon, cfg.minibatch_size
    N, B = G * E, E * T  # actors in the group; samples per run per update
    num_updates = math.ceil(cfg.total_steps / B)

    # ---- set-up: per-run seeds, environments, networks, optimizer, normalizer, objective parameters
    seeds = [derive_seeds(s.seed, E) for s in specs]
    envs = LockstepEnvs(task, [env_seed for sd in seeds for env_seed in sd["envs"]])  # actor i -> run i // E
    d, A = envs.obs_dim, envs.act_dim
    init_gens = [torch.Generator().manual_seed(sd["init"]) for sd in seeds]
    sample_gens = [torch.Generator().manual_seed(sd["sampling"]) for sd in seeds]
    agent = GaussianActorCritic(d, A, cfg.hidden_sizes, cfg.init, cfg.log_std_init, init_gens)
    flat = agent.params.flat  # every parameter of every run, [G, P]
    optimizer = BatchedAdam(flat, lr=cfg.learning_rate, eps=cfg.adam_eps)
    normalizer = ObsNormalizer(G, d, cfg.obs_clip, cfg.obs_norm)
    objectives = [s.config.objective for s in specs]
    clip_eps = per_run([o.clip_epsilon for o in objectives], math.inf).view(G, 1)
    beta = per_run([o.kl_beta for o in objectives], 0.0)
    kl_target = per_run([o.kl_target for o in objectives], math.nan)
    ent_coef = per_run([o.ent_coef for o in objectives], 0.0).view(G, 1)
    bootstrap_time_limit = cfg.time_limit == "bootstrap"

    obs_buf = np.zeros((T, N, d))
    act_buf = torch.zeros(T, N, A)
    rew_buf, val_buf, final_val_buf = np.zeros((T, N)), np.zeros((T, N)), np.zeros((T, N))
    term_buf, trunc_buf, end_buf = np.zeros((T, N), bool), np.zeros((T, N), bool), np.zeros((T, N), bool)
    episodes = [[] for _ in range(G)]
    update_rows = [[] for _ in range(G)]
    alive = np.ones(G, dtype=bool)
    diverged = [(None, None)] * G
    run_of_actor = np.arange(N) // E
    start = last_log = time.perf_counter()
    first_update = 0
    fingerprint = [(s.run_id, s.task, s.seed, json.dumps(s.config.to_dict(), sort_keys=True)) for s in specs]

    def save_checkpoint(next_update: int) -> None:
        state = {
            "fingerprint": fingerprint, "next_update": next_update, "elapsed": time.perf_counter() - start,
            "params": flat.detach().clone(), "optimizer": optimizer.state_dict(),
            "normalizer": [normalizer.state(g) for g in range(G)], "beta": beta.clone(),
            "sample_rng": [g.get_state() for g in sample_gens], "envs": envs.state(),
            "episodes": episodes, "update_rows": update_rows, "alive": alive.tolist(), "diverged": diverged,
        }
        records.atomic_write(checkpoint, lambda p: torch.save(state, p))

    state = load_checkpoint(Path(checkpoint), log) if checkpoint is not None else None
    if state is not None:
        if [tuple(f) for f in state.get("fingerprint", [])] != fingerprint:
            log(f"checkpoint {checkpoint} belongs to other runs or settings; starting from scratch")
        else:
            with torch.no_grad():
                flat.copy_(state["params"])
            optimizer.load_state_dict(state["optimizer"])
            normalizer.load_states(state["normalizer"])
            beta = state["beta"]
            for g, rng in zip(sample_gens, state["sample_rng"]):
                g.set_state(rng)
            envs.load_state(state["envs"])
            episodes, update_rows = state["episodes"], state["update_rows"]
            episodes = [[tuple(e) for e in ep] for ep in episodes]
            alive, diverged = np.array(state["alive"]), [tuple(x) for x in state["diverged"]]
            first_update = state["next_update"]
            start -= state["elapsed"]
            log(f"resumed from {checkpoint} at update {first_update + 1}/{num_updates}")

    def to_runs(x):  # [T, N, ...] -> [G, T*E, ...]: each run's batch, sample index t*E + e
        # Contiguous on purpose: a reduction over a strided row sums in another order than over a
        # contiguous one, and the memory layout would then depend on the group size.
        x = x.reshape(T, G, E, *x.shape[2:]).swapaxes(0, 1).reshape(G, B, *x.shape[2:])
        return x.contiguous() if isinstance(x, torch.Tensor) else np.ascontiguousarray(x)

    for update in range(first_update, num_updates):
        t_update = time.perf_counter()
        lr = cfg.learning_rate * (1 - update / num_updates if cfg.lr_schedule == "linear" else 1.0)
        optimizer.set_lr(lr)

        # ---- (1) rollout: all actors in lock-step; exploration noise drawn per run from its own stream
        noise = torch.stack([torch.randn(T, E, A, generator=g) for g in sample_gens], dim=1)  # [T, G, E, A]
        with torch.no_grad():
            std = agent.log_std.exp()
            for t in range(T):
                obs_buf[t] = envs.obs
                x = normalizer(envs.obs.reshape(G, E, d))
                action = agent.policy_mean(x) + std * noise[t]
                val_buf[t] = agent.value_of(x).view(N).numpy()
                act_buf[t] = action.view(N, A)
                env_action = action.view(N, A).numpy().astype(np.float64)
                if not np.isfinite(env_action).all():  # only a diverged run's; it is no longer recorded
                    env_action = np.nan_to_num(env_action, posinf=0.0, neginf=0.0)
                if cfg.action_clip:
                    env_action = np.minimum(np.maximum(env_action, envs.low), envs.high)
                rew_buf[t], term, trunc, final_obs, finished = envs.step(env_action)
                term_buf[t], trunc_buf[t], end_buf[t] = term, trunc, term | trunc
                if bootstrap_time_limit and trunc.any():
                    # V of the final observation of a time-limited episode, batched over all actors
                    final = envs.obs.copy()
                    for i in np.flatnonzero(trunc):
                        final[i] = final_obs[i]
                    final_val_buf[t] = agent.value_of(normalizer(final.reshape(G, E, d))).view(N).numpy()
                global_step = (update * T + t + 1) * E
                wall = time.perf_counter() - start
                for i, ret, length in finished:
                    if alive[run_of_actor[i]]:
                        episodes[run_of_actor[i]].append((global_step, ret, length, wall))
            last_value = agent.value_of(normalizer(envs.obs.reshape(G, E, d))).view(N).numpy()
        next_values = np.concatenate([val_buf[1:], last_value[None]])
        if bootstrap_time_limit:
            next_values = np.where(trunc_buf, final_val_buf, next_values)

        t_optimize = time.perf_counter()

        # ---- (2) advantages: GAE over each actor's rollout
        terminated = (term_buf if bootstrap_time_limit else end_buf).astype(np.float64)  # "terminal": time limits end value too
        adv, returns = gae(rew_buf, val_buf, next_values, terminated, end_buf.astype(np.float64), cfg.gamma, cfg.gae_lambda)

        # ---- (3) optimize: normalizer first (as ppo1), then π_old on the batch, then K epochs
        raw_obs = to_runs(obs_buf)
        normalizer.update(raw_obs)
        x_all = normalizer(raw_obs)
        act_all = to_runs(act_buf)
        adv_all = torch.from_numpy(to_runs(adv)).float()
        ret_all = torch.from_numpy(to_runs(returns)).float()
        if cfg.adv_norm == "batch":
            adv_all = (adv_all - adv_all.mean(1, keepdim=True)) / (adv_all.std(1, correction=0, keepdim=True) + 1e-8)
        with torch.no_grad():
            old_mean, old_log_std = agent.policy_mean(x_all), agent.log_std.clone()
            old_logp = gaussian.log_prob(act_all, old_mean, old_log_std)
        # Per-sample data in one tensor, so a minibatch is a single gather.
        packed = torch.cat([x_all, act_all, old_mean, adv_all[..., None], ret_all[..., None], old_logp[..., None]], -1)
        widths = [d, A, A, 1, 1, 1]

        stats = torch.zeros(6, G)  # policy loss, value loss, entropy, approx kl, clip fraction, surrogate
        n_minibatches = 0
        rows = torch.arange(G).unsqueeze(1)
        for epoch in range(cfg.epochs):
            perm = torch.stack([torch.randperm(B, generator=g) for g in sample_gens])  # [G, B]
            for lo in range(0, B, M):
                x, act, mean_old, adv_mb, ret_mb, logp_old = packed[rows, perm[:, lo:lo + M]].split(widths, -1)
                adv_mb, ret_mb, logp_old = adv_mb.squeeze(-1), ret_mb.squeeze(-1), logp_old.squeeze(-1)
                if cfg.adv_norm == "minibatch":
                    adv_mb = (adv_mb - adv_mb.mean(1, keepdim=True)) / (adv_mb.std(1, keepdim=True) + 1e-8)
                mean = agent.policy_mean(x)
                logratio = gaussian.log_prob(act, mean, agent.log_std) - logp_old
                ratio = logratio.exp()
                kl = gaussian.kl(mean_old, old_log_std, mean, agent.log_std)
                entropy = gaussian.entropy(agent.log_std)  # [G, 1]: the same for every state
                policy_loss, surr = objective_terms(ratio, adv_mb, kl, entropy, clip_eps, beta.view(G, 1), ent_coef)
                value_loss = (agent.value_of(x) - ret_mb).square().mean(1)
                # Summing over runs keeps them independent: d(sum)/d(run g's slice) = run g's gradient.
                loss = policy_loss + cfg.vf_coef * value_loss
                agent.params.zero_grad_()  # in place: the parameters' .grad are views of flat.grad
                loss.sum().backward()
                if cfg.max_grad_norm is not None:
                    per_run_grad_norm_clip(flat, cfg.max_grad_norm)
                optimizer.step()
                with torch.no_grad():
                    stats += torch.stack([
                        policy_loss, value_loss, entropy.mean(1), ((ratio - 1) - logratio).mean(1),
                        ((ratio - 1).abs() > clip_eps).float().mean(1), surr])
                n_minibatches += 1
        stats /= n_minibatches

        # ---- (4) β rule on the full-batch KL of this update, divergence check, records
        with torch.no_grad():
            batch_kl = gaussian.kl(old_mean, old_log_std, agent.policy_mean(x_all), agent.log_std).mean(1)
            finite = flat.isfinite().all(1)
            finite &= stats.isfinite().all(0) & batch_kl.isfinite()
        next_beta = adapt_beta(beta, batch_kl, kl_target)
        ev = explained_variance(to_runs(val_buf), to_runs(returns))
        seconds = time.perf_counter() - t_update
        rollout_seconds = t_optimize - t_update
        global_step = (update + 1) * B
        for g in np.flatnonzero(alive):
            update_rows[g].append({
                "update": update, "global_step": global_step,
                "policy_loss": stats[0, g].item(), "value_loss": stats[1, g].item(),
                "entropy": stats[2, g].item(), "approx_kl": stats[3, g].item(),
                "clipfrac": stats[4, g].item() if math.isfinite(clip_eps[g, 0]) else math.nan,
                "surrogate": stats[5, g].item(), "kl": batch_kl[g].item(), "beta": beta[g].item(),
                "explained_variance": float(ev[g]), "learning_rate": lr,
                "log_std_mean": agent.log_std[g].mean().item(), "sps": B / seconds,
                "rollout_seconds": rollout_seconds, "optimize_seconds": seconds - rollout_seconds,
                "wall_time": time.perf_counter() - start, "diverged": not bool(finite[g]),
            })
            if not finite[g]:
                alive[g] = False
                diverged[g] = (global_step, "non-finite loss, parameters or KL after update")
                log(f"[{specs[g].run_id}] diverged at step {global_step}; recorded, the group goes on")
        beta = next_beta
        elapsed = time.perf_counter() - start
        if time.perf_counter() - last_log > 30 or update in (0, num_updates - 1):  # a line per ~30 s at most
            last_log = time.perf_counter()
            recent = [np.mean([e[1] for e in ep[-10:]]) for ep in episodes if ep]
            eta = elapsed / (update + 1) * (num_updates - update - 1)
            log(f"update {update + 1}/{num_updates}  step {global_step:,}/{num_updates * B:,}  "
                f"{G * B / seconds:,.0f} steps/s (group of {G})  ETA {eta / 60:.1f} min  "
                f"recent return {np.mean(recent) if recent else math.nan:.1f}  alive {alive.sum()}/{G}")
        if not alive.any():
            break
        if checkpoint is not None and checkpoint_every and (update + 1) % checkpoint_every == 0:
            save_checkpoint(update + 1)
    envs.close()

    results = []
    for g, spec in enumerate(specs):
        ep = pd.DataFrame(episodes[g], columns=records.EPISODE_COLUMNS)
        ep = ep.astype({"global_step": "int64", "episode_length": "int64"})
        status = "completed" if alive[g] else "diverged"
        result = RunResult(spec, ep, pd.DataFrame(update_rows[g]), status, *diverged[g], seeds[g])
        if spec.out_dir is not None:
            write_run(result, agent, normalizer, g, group=[s.run_id for s in specs],
                      wall_seconds=time.perf_counter() - start)
        results.append(result)
    if checkpoint is not None:
        Path(checkpoint).unlink(missing_ok=True)  # every record is written; nothing left to resume
    return results


def load_checkpoint(path: Path, log) -> dict | None:
    """The saved group state, or None. A checkpoint that cannot be read is moved aside (never deleted)
    and the group starts from scratch: nothing is lost, its records are not written yet."""
    if not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True)  # tensors and plain containers only: no code runs
    except Exception as err:  # noqa: BLE001 - any unreadable file means the same thing here
        aside = path.with_name(path.name + ".corrupt")
        path.replace(aside)
        log(f"checkpoint {path} is unreadable ({type(err).__name__}: {err}); moved to {aside.name}, starting from scratch")
        return None


def write_run(result: RunResult, agent, normalizer: ObsNormalizer, g: int, group: list[str],
              wall_seconds: float) -> None:
    """Parquet tables, final model and normalizer, then the manifest (last: its presence means complete)."""
    spec, out = result.spec, Path(result.spec.out_dir)
    records.write_parquet(result.episodes, out / "episodes.parquet")
    records.write_parquet(result.updates, out / "updates.parquet")
    model = agent.params.run_state(g)
    records.atomic_write(out / "model.pt", lambda p: torch.save({"params": model, "obs_norm": normalizer.state(g)}, p))
    manifest = {
        "run_id": spec.run_id, "task": spec.task, "env_version": task_version(spec.task),
        "seed": spec.seed, "derived_seeds": result.derived_seeds, "status": result.status,
        "diverged_at_step": result.diverged_at_step, "diverged_reason": result.diverged_reason,
        "total_steps": spec.config.total_steps, "config": spec.config.to_dict(),
        "n_episodes": len(result.episodes), "group": group, "wall_seconds": wall_seconds,
        "torch_threads": torch.get_num_threads(), "packages": records.package_versions(),
        "git": records.git_state(), "host": records.host_info(),
        "env_protocol": {"id": spec.task, "made_with": "gymnasium.make(id, disable_env_checker=True)",
                         "time_limit_handling": spec.config.time_limit,
                         "action_clip": spec.config.action_clip},
        **spec.meta,
    }
    records.write_json(manifest, out / "manifest.json")
