"""ACER (Wang et al. 2016, "Sample Efficient Actor-Critic with Experience Replay") for discrete actions on
Atari, for every run of a group at once: the third algorithm of the PPO paper's Atari comparison.

One iteration, top to bottom:
  (1) collect a segment of ``horizon`` steps from every actor with the current policy, keeping the
      behaviour policy's probabilities μ(·|x_t) (ppo/algorithms/rollout.py's conventions: per-run sampling streams,
      clipped rewards, a lost life ends the learner's horizon, raw full-game episodes recorded);
  (2) store it in the run's replay buffer (raw frames, ``ReplayBuffer``) and take one on-policy step on it;
  (3) once every actor holds ``replay_start`` steps, Poisson(``replay_ratio``) more steps, each on one segment
      per actor drawn uniformly from that actor's buffer (baselines acer: ``Buffer.get``).

One step, on segments x_0..x_T with actions a_t, μ_t, rewards r_t and dones d_t (per actor):
  f = π(·|x) (probabilities), Q(x, ·) from the Q head, V(x) = Σ_a f(a) Q(x, a) (no gradient);
  ρ(a) = f(a) / μ(a);  Q_ret from Retrace (``retrace_targets``) with ρ̄_t = min(1, ρ_t(a_t));
  gain = min(c, ρ(a_t)) (Q_ret − V) log f(a_t) + Σ_a [1 − c/ρ(a)]₊ f(a) (Q(x, a) − V) log f(a)
         (every coefficient without gradient: truncated importance weight and its bias correction);
  loss = −mean(gain) − ent_coef·mean(H[f]) + q_coef·mean(½(Q_ret − Q(x_t, a_t))²).
With ``trust_region`` the policy part reaches the network through the probabilities f of every sample:
  g = ∂(gain + ent_coef·H)/∂f,  k = ∂KL[f_avg ‖ f]/∂f = −f_avg/f,  z* = g − max(0, (kᵀg − δ)/‖k‖²)·k,
and −z*/B is back-propagated from f (the Q loss as it is); f_avg comes from the average network, an
exponential moving average of the parameters, θ_avg ← α θ_avg + (1 − α) θ after every step. The statistics
φ are the probabilities, not the logits, because baselines acer projects there (``k = −f_pol/(f + eps)``,
``tf.gradients(f, params, grads_f)``). One consequence: k has a part along (1, …, 1) that the softmax ignores
(at f = f_avg, k = −1), so "active" can be reported where the step into the logits is unchanged.
Each run's gradient norm is clipped separately, then one RMSprop step over the [G, P] buffer.

Runs stay independent: every random draw (actions, Poisson replay counts, replay indices) comes from the
run's own generator; every loss is a [G] vector summed before backward. Runs draw different replay counts:
the group takes max_g steps and a run past its own count keeps its parameters, RMSprop state and average
network bit-unchanged (rows restored after the step, ``step``); its rows of that batch are discarded.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..config.registry import CONVNETS, AlgorithmSpec, Line
from ..config.settings import ACERSettings
from ..nn.convnet import CNNActorCritic
from ..nn.optim import make_rmsprop, per_run_grad_norm_clip
from .a2c import trust_region_projection
from .rollout import GroupContext, explained_variance
from .schedule import annealed

EPS = 1e-6  # baselines acer: eps in f/(μ + eps), log(f + eps), c/(ρ + eps), f_pol/(f + eps), and the entropy


# ---- the loss, as functions of plain tensors (tests/algorithms/test_acer.py checks them by hand)


def retrace_targets(rewards: torch.Tensor, dones: torch.Tensor, q_taken: torch.Tensor, values: torch.Tensor,
                    rho_taken: torch.Tensor, gamma: float) -> torch.Tensor:
    """Retrace targets Q_ret(x_t, a_t) over the last dim (time), for t = 0..T−1.

    ``rewards``, ``dones`` (1.0 where the learner's horizon ended after step t), ``q_taken`` = Q(x_t, a_t) and
    ``rho_taken`` = ρ_t(a_t) are [..., T]; ``values`` = V(x_t) is [..., T+1] (V(x_T) bootstraps the segment).
        Q_ret(x_t, a_t) = r_t + γ (1 − d_t) [ρ̄_{t+1} (Q_ret(x_{t+1}, a_{t+1}) − Q(x_{t+1}, a_{t+1})) + V(x_{t+1})],
    ρ̄ = min(1, ρ), and Q_ret(x_T, ·) stands for V(x_T), as the reverse loop of baselines acer ``q_retrace``.
    """
    T = rewards.shape[-1]
    rho_bar = rho_taken.clamp(max=1.0)
    out = torch.empty_like(rewards)
    ret = values[..., T]
    for t in reversed(range(T)):
        ret = rewards[..., t] + gamma * (1.0 - dones[..., t]) * ret
        out[..., t] = ret
        ret = rho_bar[..., t] * (ret - q_taken[..., t]) + values[..., t]  # what step t−1 bootstraps from
    return out


def importance_weights(probs: torch.Tensor, mu: torch.Tensor, actions: torch.Tensor, c: float):
    """ρ(a) = f(a)/μ(a) for every action ([..., A]), ρ at the taken action ([...]), the truncated weight
    min(c, ρ(a_t)) and the bias-correction weight [1 − c/ρ(a)]₊ ([..., A], 0 wherever ρ(a) ≤ c)."""
    rho = probs / (mu + EPS)
    rho_taken = rho.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    return rho, rho_taken, rho_taken.clamp(max=c), (1.0 - c / (rho + EPS)).clamp(min=0.0)


def gain_gradient_wrt_probs(probs: torch.Tensor, actions: torch.Tensor, weighted_adv: torch.Tensor,
                            bc_coef: torch.Tensor, ent_coef: float) -> torch.Tensor:
    """g = ∂(gain + ent_coef·H)/∂f per sample, [..., A], with ``weighted_adv`` = min(c, ρ(a_t))·(Q_ret − V)
    and ``bc_coef`` = [1 − c/ρ]₊ f (Q − V) held fixed:
        ∂/∂f(a) = (1[a = a_t]·weighted_adv + bc_coef(a))/(f(a) + ε) − ent_coef·(log(f(a) + ε) + f(a)/(f(a) + ε)).
    """
    inv = 1.0 / (probs + EPS)
    g = bc_coef * inv - ent_coef * ((probs + EPS).log() + probs * inv)
    index = actions.unsqueeze(-1)
    return g.scatter_add(-1, index, weighted_adv.unsqueeze(-1) * inv.gather(-1, index))


def kl_gradient_wrt_probs(probs_avg: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """k = ∂ KL[f_avg ‖ f]/∂f = −f_avg/(f + ε) per sample (KL = Σ f_avg (log f_avg − log f))."""
    return -probs_avg / (probs + EPS)


# ---- segments, and the replay buffer of raw frames


@dataclass
class Segment:
    """``horizon`` steps of every actor of every run, [G, E, T(+1), ...]."""

    obs: torch.Tensor  # uint8 [G, E, T+1, K, H, W]: the stacks the policy saw, then the one after the last step
    actions: torch.Tensor  # int64 [G, E, T]
    mu: torch.Tensor  # float32 [G, E, T, A]: the behaviour policy's probabilities
    rewards: torch.Tensor  # float32 [G, E, T], as the learner sees them (clipped)
    dones: torch.Tensor  # bool [G, E, T]: the learner's horizon ended after step t (life loss, game over, time cap)


def new_frame_counts(obs: torch.Tensor) -> torch.Tensor:
    """How many frames each stack adds to its predecessor: the smallest s in 1..K−1 with x_t[:K−s] equal to
    x_{t−1}[s:], else K (a new stack). Usually 1; more where the environment steps on its own (a reset, the
    FIRE reset's extra steps after a lost life). Exact by construction: x_t is x_{t−1}[s:] then its s newest
    frames. [N, T+1, K, H, W] -> [N, T+1] (K at t = 0: the whole first stack)."""
    N, T1, K = obs.shape[:3]
    counts = torch.full((N, T1), K, dtype=torch.int64)
    for s in reversed(range(1, K)):  # the smallest matching shift wins
        slides = (obs[:, 1:, :K - s] == obs[:, :-1, s:]).flatten(2).all(-1)
        counts[:, 1:] = torch.where(slides, s, counts[:, 1:])
    return counts


def encode_frames(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Stacks [N, T+1, K, H, W] -> (frames [L, H, W]: each actor's x_0, then each later stack's new frames,
    actor after actor; counts [N, T+1] of ``new_frame_counts``)."""
    K = obs.shape[2]
    counts = new_frame_counts(obs)
    keep = torch.arange(K) >= K - counts.unsqueeze(-1)  # [N, T+1, K]: the newest counts[n, t] frames of x_t
    return obs[keep], counts


def decode_frames(frames: torch.Tensor, counts: torch.Tensor, K: int) -> torch.Tensor:
    """Inverse of ``encode_frames``: x_t is the K frames that end at actor n's frame Σ_{u≤t} counts[n, u]."""
    ends = counts.cumsum(1)  # [N, T+1], within each actor's frames
    offsets = ends[:, -1].cumsum(0) - ends[:, -1]  # where each actor's frames start
    index = (offsets[:, None, None] + ends.unsqueeze(-1) - K) + torch.arange(K)  # [N, T+1, K]
    return frames[index]


class ReplayBuffer:
    """The last ``slots`` segments of every actor of every run, as raw uint8 frames; run g samples only
    its own rows, actor e only its own segments (baselines acer: one segment per actor per draw).

    Slot k holds segment k of the whole group, one tensor per field; slots are replaced, never written in
    place, and each owns its storage, so a checkpoint saves exactly the filled slots without a copy.
    Bytes per run ≈ E · slots · [(T + K)·H·W + T·(1 + 4·A + 4 + 1) + 8·(T + 2)] (frames; actions uint8, μ and
    rewards float32, dones bool; frame counts and starts int64), plus 2-3 frames per lost life or new game
    where the FIRE reset steps the game on its own. With the preset (E = 16, T = 20, K = 4, 84×84, slots =
    50000/20 = 2500) and 18 actions: 16 · 2500 · (24·7056 + 20·79 + 176) = 6.84 GB per run once full (frames
    6.77 GB), reached after 800k agent steps. Frame stacks instead of frames would take 4× that.
    """

    FIELDS = ("actions", "mu", "rewards", "dones")

    def __init__(self, slots: int, frame_stack: int):
        self.slots, self.K = slots, frame_stack
        self.segments: list[dict[str, torch.Tensor]] = []
        self.next = 0  # the slot the next segment replaces once the buffer is full

    def __len__(self) -> int:
        return len(self.segments)

    def put(self, seg: Segment) -> None:
        G, E = seg.actions.shape[:2]
        frames, counts = encode_frames(seg.obs.view(G * E, *seg.obs.shape[2:]))
        lengths = counts.sum(1)
        record = {"frames": frames, "counts": counts.view(G, E, -1), "starts": (lengths.cumsum(0) - lengths).view(G, E),
                  "actions": seg.actions.to(torch.uint8), "mu": seg.mu.clone(), "rewards": seg.rewards.clone(),
                  "dones": seg.dones.clone()}
        if len(self.segments) < self.slots:
            self.segments.append(record)
        else:
            self.segments[self.next] = record
        self.next = (self.next + 1) % self.slots

    def get(self, index: torch.Tensor) -> Segment:
        """The segments at slots ``index`` [G, E] (run g, actor e: its own row of slot index[g, e])."""
        G, E = index.shape
        pairs = [(self.segments[int(index[g, e])], g, e) for g in range(G) for e in range(E)]
        counts = torch.stack([slot["counts"][g, e] for slot, g, e in pairs])
        frames = [slot["frames"][int(slot["starts"][g, e]):][:int(n)] for (slot, g, e), n in zip(pairs, counts.sum(1))]
        obs = decode_frames(torch.cat(frames), counts, self.K)
        picked = {k: torch.stack([slot[k][g, e] for slot, g, e in pairs]) for k in self.FIELDS}
        shape = lambda x: x.view(G, E, *x.shape[1:])  # noqa: E731
        return Segment(obs=shape(obs), actions=shape(picked["actions"]).long(), mu=shape(picked["mu"]),
                       rewards=shape(picked["rewards"]), dones=shape(picked["dones"]))

    def state(self) -> dict:
        return {"segments": self.segments, "next": self.next}  # no copies: torch.save writes them at once

    def load_state(self, state: dict) -> None:
        self.segments, self.next = list(state["segments"]), int(state["next"])


def collect_segment(ctx: GroupContext, agent: CNNActorCritic) -> Segment:
    """``horizon`` lock-steps of every actor under the current policy, as ppo/algorithms/rollout.py's Atari rollout:
    actions by inverse-CDF from each run's own uniforms, the learner's rewards and horizon ends as the family's
    ``learner_signal`` makes them (the protocol's reward clipping and life-loss signal), raw full-game episodes
    recorded."""
    envs, G, E, T = ctx.envs, ctx.num_runs, ctx.cfg.num_envs, ctx.cfg.horizon
    N, shape, A = G * E, envs.obs_shape, envs.num_actions
    obs = np.zeros((T + 1, N, *shape), dtype=np.uint8)
    actions, mu = torch.zeros(T, N, dtype=torch.int64), torch.zeros(T, N, A)
    rewards, dones = np.zeros((T, N), dtype=np.float32), np.zeros((T, N), dtype=bool)
    uniforms = torch.stack([torch.rand(T, E, generator=g) for g in ctx.sample_gens], dim=1)  # [T, G, E]
    with torch.no_grad():
        for t in range(T):
            obs[t] = envs.obs
            policy, _ = agent.evaluate(torch.from_numpy(envs.obs).view(G, E, *shape))
            actions[t] = policy.sample(uniforms[t]).view(N)
            mu[t] = policy.logits.exp().view(N, A)
            raw_reward, terminated, truncated, _, finished = envs.step(actions[t].numpy())
            rewards[t], terminated, truncated = ctx.family.learner_signal(envs, raw_reward, terminated, truncated)
            # A time cap ends the horizon like a termination (baselines: every done ends the return).
            dones[t] = terminated | truncated
            ctx.log.tick()
            ctx.log.finished(finished)
    obs[T] = envs.obs

    def runs_actors(x):  # [T', G·E, ...] (time, actor) -> [G, E, T', ...], contiguous
        x = torch.as_tensor(x)
        return x.reshape(x.shape[0], G, E, *x.shape[2:]).permute(1, 2, 0, *range(3, x.dim() + 1)).contiguous()

    return Segment(obs=runs_actors(obs), actions=runs_actors(actions), mu=runs_actors(mu),
                   rewards=runs_actors(rewards), dones=runs_actors(dones))


# ---- the algorithm


class ACER:
    def __init__(self, ctx: GroupContext):
        cfg, envs = ctx.cfg, ctx.envs
        s = self.settings = cfg.acer
        if cfg.time_limit != "terminal":
            raise ValueError("acer supports time_limit 'terminal' only (a time cap ends the Retrace horizon, "
                             "as in baselines acer)")
        G, A = ctx.num_runs, envs.num_actions
        self.ctx, self.num_actions = ctx, A
        self.agent = CNNActorCritic(cfg.network, envs.obs_shape, A, ctx.init_gens, value_outputs=A,
                                    policy_init_scale=cfg.policy_init_scale)
        self.flat = self.agent.params.flat  # every parameter of every run, [G, P]
        # The average network: same layout, parameters copied (its own initialisation is thrown away).
        self.average_net = CNNActorCritic(cfg.network, envs.obs_shape, A, [torch.Generator() for _ in range(G)],
                                          value_outputs=A)
        self.average = self.average_net.params.flat.requires_grad_(False)
        with torch.no_grad():
            self.average.copy_(self.flat)
        # RMSprop over one [G, P] tensor: elementwise, so G independent optimizers (by default TensorFlow 1's, as
        # baselines' acer_simple.py ran it: mean square from 1, ε inside the root)
        self.optimizers = {s.optimizer: make_rmsprop(self.flat, s.optimizer, s.learning_rate, s.rmsprop_alpha,
                                                     s.optimizer_eps)}
        self.optimizer = self.optimizers[s.optimizer]
        self.batch_size = cfg.num_envs * cfg.horizon  # agent steps per run per iteration
        self.num_iterations = math.ceil(cfg.total_steps / self.batch_size)
        self.decay_iterations = math.ceil((s.lr_decay_steps or cfg.total_steps) / self.batch_size)
        slots = s.buffer_size // cfg.horizon  # whole segments per actor, as baselines Buffer(size // nsteps)
        if slots < 1:
            raise ValueError(f"acer.buffer_size {s.buffer_size} holds no segment of horizon {cfg.horizon}")
        self.buffer = ReplayBuffer(slots, envs.obs_shape[0])
        self.replay_start_slots = s.replay_start // cfg.horizon  # baselines Buffer.has_atleast(replay_start)

    # ---- interface of ppo/algorithms

    def finite(self) -> torch.Tensor:
        return self.flat.isfinite().all(1)

    def state_dict(self) -> dict:
        return {"params": self.flat.detach().clone(), "average": self.average.clone(),
                "optimizers": {k: opt.state_dict() for k, opt in self.optimizers.items()},
                "buffer": self.buffer.state()}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            self.flat.copy_(state["params"])
            self.average.copy_(state["average"])
        for k, opt in self.optimizers.items():
            opt.load_state_dict(state["optimizers"][k])
        self.buffer.load_state(state["buffer"])

    def run_model(self, g: int) -> dict:
        return {"params": self.agent.params.run_state(g), "obs_norm": None}

    def learning_rate(self, iteration: int) -> float:
        s = self.settings
        return annealed(s.learning_rate, s.lr_schedule, iteration, self.decay_iterations)

    def iterate(self, iteration: int) -> dict:
        ctx, s, G = self.ctx, self.settings, self.ctx.num_runs
        lr = self.learning_rate(iteration)
        for group in self.optimizer.param_groups:
            group["lr"] = lr  # the same for the on-policy and the replay steps of this iteration (baselines)

        # ---- (1) on-policy segment
        t0 = time.perf_counter()
        segment = collect_segment(ctx, self.agent)
        rollout_seconds = time.perf_counter() - t0

        # ---- (2) into the buffer, then one step on it
        self.buffer.put(segment)
        stats = self.step(segment)

        # ---- (3) replay: Poisson(replay_ratio) steps per run, each on one stored segment per actor
        replays = torch.zeros(G, dtype=torch.int64)
        if s.replay_ratio > 0 and len(self.buffer) >= self.replay_start_slots:
            rate = torch.tensor([float(s.replay_ratio)])
            replays = torch.cat([torch.poisson(rate, generator=g) for g in ctx.sample_gens]).long()
            E, filled = ctx.cfg.num_envs, len(self.buffer)
            for k in range(int(replays.max())):
                active = replays > k
                # Only the runs that take this step draw indices: the others' streams stay as if alone.
                index = torch.stack([torch.randint(filled, (E,), generator=gen) if active[g]
                                     else torch.zeros(E, dtype=torch.int64) for g, gen in enumerate(ctx.sample_gens)])
                self.step(self.buffer.get(index), active)
        return {**stats, "replay_updates": replays.float(), "learning_rate": np.full(G, lr),
                "rollout_seconds": rollout_seconds}

    # ---- one ACER step

    def step(self, seg: Segment, active: torch.Tensor | None = None) -> dict:
        """One optimizer step of every run on its segments; with ``active`` ([G] bool) the other runs'
        parameters, RMSprop state and average network are restored afterwards, bit for bit."""
        s, agent, flat = self.settings, self.agent, self.flat
        stats = self.loss_and_gradient(seg)
        stats["grad_norm"] = (per_run_grad_norm_clip(flat, s.max_grad_norm) if s.max_grad_norm is not None
                              else flat.grad.square().sum(1).sqrt())
        with torch.no_grad():
            keep = None if active is None or bool(active.all()) else torch.nonzero(~active).squeeze(1)
            if keep is not None:
                # torch's RMSprop makes its state at the first step (TF-style's exists from the start): 0 until then
                state = self.optimizer.state[flat]
                square_avg = state["square_avg"][keep].clone() if "square_avg" in state else 0.0
                saved = (flat[keep].clone(), self.average[keep].clone(), square_avg)
            self.optimizer.step()
            # θ_avg ← α θ_avg + (1 − α) θ, after the step (baselines: the EMA op runs after the optimizer's)
            self.average.mul_(s.average_policy_decay).add_(flat, alpha=1 - s.average_policy_decay)
            if keep is not None:
                flat[keep], self.average[keep] = saved[0], saved[1]
                self.optimizer.state[flat]["square_avg"][keep] = saved[2]
        agent.params.zero_grad_()
        return stats

    def loss_and_gradient(self, seg: Segment) -> dict:
        """Every run's ACER loss on its segments, back-propagated into flat.grad; statistics per run."""
        s, agent, G, A = self.settings, self.agent, self.ctx.num_runs, self.num_actions
        E, T1 = seg.obs.shape[1], seg.obs.shape[2]
        T, frame_shape = T1 - 1, seg.obs.shape[3:]
        policy, q_all = agent.evaluate(seg.obs.reshape(G, E * T1, *frame_shape))
        probs_all = policy.logits.exp().view(G, E, T1, A)  # f: the probabilities, as the rollout's μ
        q_all = q_all.view(G, E, T1, A)
        probs, q = probs_all[:, :, :T], q_all[:, :, :T]  # x_T only bootstraps
        actions = seg.actions.unsqueeze(-1)
        q_taken = q.gather(-1, actions).squeeze(-1)
        with torch.no_grad():
            values = (probs_all * q_all).sum(-1)  # V(x_t) = Σ_a f(a) Q(x_t, a), t = 0..T
            f = probs.detach()
            rho, rho_taken, weight, correction = importance_weights(f, seg.mu, seg.actions, s.truncation_c)
            q_ret = retrace_targets(seg.rewards, seg.dones.float(), q_taken.detach(), values, rho_taken,
                                    self.ctx.cfg.gamma)
            v = values[:, :, :T]
            weighted_adv = weight * (q_ret - v)  # min(c, ρ(a_t))·(Q_ret − V)
            bc_coef = correction * f * (q.detach() - v.unsqueeze(-1))  # [1 − c/ρ(a)]₊ f(a) (Q(a) − V)
        log_probs = (probs + EPS).log()
        loss_f = -(weighted_adv * log_probs.gather(-1, actions).squeeze(-1)).mean((1, 2))
        loss_bc = -(bc_coef * log_probs).sum(-1).mean((1, 2))
        entropy = -(probs * log_probs).sum(-1).mean((1, 2))  # baselines cat_entropy_softmax
        loss_q = 0.5 * (q_ret - q_taken).square().mean((1, 2))
        stats = {"policy_loss": (loss_f + loss_bc).detach(), "loss_truncated": loss_f.detach(),
                 "loss_bias_correction": loss_bc.detach(), "q_loss": loss_q.detach(), "entropy": entropy.detach(),
                 "explained_variance": explained_variance(q_taken.detach().reshape(len(q_ret), -1).numpy(),
                                                          q_ret.reshape(len(q_ret), -1).numpy()),
                 "rho_mean": rho_taken.mean((1, 2)),
                 "truncated_fraction": (rho_taken > s.truncation_c).float().mean((1, 2))}
        if s.trust_region:
            with torch.no_grad():
                avg_policy, _ = self.average_net.evaluate(seg.obs[:, :, :T].reshape(G, E * T, *frame_shape))
                f_avg = avg_policy.logits.exp().view(G, E, T, A)
                g = gain_gradient_wrt_probs(f, seg.actions, weighted_adv, bc_coef, s.ent_coef)
                z, tr_active = trust_region_projection(g, kl_gradient_wrt_probs(f_avg, f), s.trust_region_delta)
                stats["kl_average"] = (f_avg * ((f_avg + EPS).log() - (f + EPS).log())).sum(-1).mean((1, 2))
                stats["trust_region_active"] = tr_active.float().mean((1, 2))
            # Its gradient w.r.t. every sample's f is −z*/B: the projected gradient in place of the policy loss's.
            policy_term = -(z * probs).sum(-1).mean((1, 2))
        else:
            policy_term = loss_f + loss_bc - s.ent_coef * entropy
        loss = policy_term + s.q_coef * loss_q
        agent.params.zero_grad_()  # in place: the parameters' .grad are views of flat.grad
        loss.sum().backward()  # a sum over runs: each run's slice receives its own gradient
        return stats


def acer_memory_mb(cfg, num_runs: int, total_steps: int) -> int:
    """The replay buffer of raw frames: about 8.6 kB per stored agent step and run (6.8 GB at baselines'
    800k steps), beside one batch."""
    stored = min(total_steps, cfg.acer.buffer_size * cfg.num_envs)
    return 1000 + num_runs * int(1500 + 8.6e-3 * stored)


SPEC = AlgorithmSpec(
    name="acer", build=ACER, order=5, settings=ACERSettings,
    summary="Actor-critic with experience replay (Wang et al. 2016), discrete actions on Atari",
    lines=(Line("acer", "ACER", variant="atari_acer"),),
    networks=CONVNETS, continuous=False,
    nan_allowed=frozenset({"explained_variance"}),
    memory_mb=acer_memory_mb,
    # 2 actors x 5 steps per iteration, 8 iterations; replay from the 2nd, a ring of 4 segments
    tiny={"total_steps": 80, "num_envs": 2, "horizon": 5, "acer": {"buffer_size": 20, "replay_start": 10}},
    tiny_task="ALE/Pong-v5",
    group_exact=False,  # a grouped convolution may sum in another order (tests/nn/test_convnet.py)
    # no Atari game learns in a test's budget: its loss is checked by hand in tests/algorithms/test_acer.py
    learning=(),
)
