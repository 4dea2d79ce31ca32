"""Noisy cross-entropy method (Szita & Lőrincz 2006, the PPO paper's [SL06]) over the policy's parameters,
for every run of a group at once.

Each run keeps a diagonal Gaussian N(μ, diag σ²) over the D parameters of its deterministic tanh policy
MLP (no value function, no gradients). One iteration is one generation, top to bottom:

  (1) sample the population: num_envs parameter vectors per run, from the run's own random stream;
  (2) evaluate them: actor i of run g acts with candidate i until its episode(s) end, all candidates of
      all runs in one batched forward pass; an actor whose episode ended waits (it is not stepped and
      its waiting is not counted) until every actor of the group is done;
  (3) refit: μ ← mean of the elites (the best round(elite_fraction · num_envs) by fitness),
      σ² ← their variance + Z_{t+1}, the decaying extra noise Z_t = Z_0 · max(0, 1 − t / T) of the
      "noisy" CE method (Szita & Lőrincz 2006 use Z_t = max(5 − t/10, 0): Z_0 = 5, T = 50);
  (4) update each run's observation normalizer with the observations its actors acted on. It is frozen
      during a generation, so every candidate of a generation is judged under the same input transform.

(1) and (3) are the pure functions ``sample_population`` and ``refit``, composed by ``generation``, which
the tests also drive on toy objectives.

Budget: generations go on until each run's environment steps reach total_steps (num_iterations = None);
a generation is never cut short, so a run's last one may end past its budget. A run that has spent its
budget (or diverged) while others go on sits their generations out: its actors do not step, and its
distribution, normalizer and records stay as they were, so nothing of a run depends on its group.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from ..config.errors import ConfigError
from ..config.registry import MLP, AlgorithmSpec, LearningCheck, Line
from ..config.settings import CEMSettings
from ..nn.normalizer import ObsNormalizer
from ..nn.parameters import FlatParameters, mlp_forward, mlp_weights
from .rollout import GroupContext


def extra_variance(settings: CEMSettings, t: int) -> float:
    """Z_t = Z_0 · max(0, 1 − t / T): the variance added to every parameter for generation t."""
    return settings.extra_noise * max(0.0, 1.0 - t / settings.extra_noise_decay_generations)


def sample_population(mean: torch.Tensor, var: torch.Tensor, gens: list[torch.Generator],
                      population: int) -> torch.Tensor:
    """[G, D] mean and variance -> [G, population, D] samples, run g's from its own generator."""
    noise = torch.stack([torch.randn(population, mean.shape[1], generator=g, dtype=mean.dtype) for g in gens])
    return mean.unsqueeze(1) + var.sqrt().unsqueeze(1) * noise


def refit(candidates: torch.Tensor, fitness: torch.Tensor, n_elite: int, extra: float):
    """Maximum-likelihood diagonal Gaussian of each run's ``n_elite`` fittest candidates, plus ``extra``
    variance. candidates [G, n, D], fitness [G, n] -> (mean [G, D], var [G, D], elite indices [G, n_elite]).
    Ties go to the lower index (stable sort); the variance divides by n_elite, as Szita & Lőrincz."""
    elite = torch.sort(fitness, dim=1, descending=True, stable=True).indices[:, :n_elite]
    elites = torch.gather(candidates, 1, elite.unsqueeze(-1).expand(-1, -1, candidates.shape[2]))
    mean = elites.mean(1)
    var = (elites - mean.unsqueeze(1)).square().mean(1) + extra
    return mean, var, elite


def generation(mean, var, fitness_fn, gens, population: int, n_elite: int, extra: float):
    """One generation: sample, evaluate with ``fitness_fn([G, n, D]) -> [G, n]``, refit.
    Returns (new mean, new var, candidates, fitness, elite indices)."""
    candidates = sample_population(mean, var, gens, population)
    fitness = fitness_fn(candidates)
    new_mean, new_var, elite = refit(candidates, fitness, n_elite, extra)
    return new_mean, new_var, candidates, fitness, elite


class CEM:
    def __init__(self, ctx: GroupContext):
        cfg, envs = ctx.cfg, ctx.envs
        self.ctx, self.settings = ctx, cfg.cem
        G, E = ctx.num_runs, cfg.num_envs
        self.population = E  # one candidate per actor
        self.n_elite = round(cfg.cem.elite_fraction * E)
        if self.n_elite < 1:
            raise ConfigError(f"cem.elite_fraction {cfg.cem.elite_fraction} of num_envs {E} (the population) "
                              "keeps no elite; raise num_envs or cem.elite_fraction")
        self.num_iterations = None  # generations until every run has spent total_steps
        sizes = [envs.obs_dim, *cfg.hidden_sizes, envs.act_dim]
        init = mlp_weights("policy", sizes, cfg.policy_init_scale, cfg.init, ctx.init_gens)  # the initial mean, per run
        # The mean network (what model.pt keeps) and the candidates' network, G·E rows: row g·E + i is
        # candidate i of run g, acted on by actor g·E + i. Same aligned layout as the actor-critic nets.
        self.policy = FlatParameters(init)
        self.candidates = FlatParameters({k: v.repeat_interleave(E, 0) for k, v in init.items()})
        for module in (self.policy, self.candidates):
            for p in module.parameters():
                p.requires_grad_(False)
                p.grad = None  # no gradients here: free the buffers FlatParameters allocates
        n_layers = len(sizes) - 1
        v = self.candidates.views
        self.candidate_layers = [(v[f"policy.w{i}"], v[f"policy.b{i}"]) for i in range(n_layers)]
        # Columns of the padded [., P] rows that hold real parameters: the D coordinates of the Gaussian.
        marker = FlatParameters({k: torch.ones_like(t[:1]) for k, t in init.items()}).flat.detach()[0]
        self.slots = torch.nonzero(marker).squeeze(1)
        self.mean = self.policy.flat[:, self.slots].clone()  # [G, D]
        self.var = torch.full_like(self.mean, cfg.cem.init_std ** 2)
        self.normalizer = ObsNormalizer(G, envs.obs_dim, cfg.obs_clip, cfg.obs_norm)

    def iterate(self, iteration: int) -> dict:
        ctx, s, G = self.ctx, self.settings, self.ctx.num_runs
        t0 = time.perf_counter()
        steps_before = ctx.log.steps.copy()
        extra = extra_variance(s, iteration + 1)  # Z_{t+1}: the variance added for the next generation
        sitting_out = torch.from_numpy(~ctx.log.recording).unsqueeze(1)  # see evaluate(); they keep their μ, σ²
        mean, var, _, fitness, elite = generation(
            self.mean, self.var, self.evaluate, ctx.sample_gens, self.population, self.n_elite, extra)
        self.mean, self.var = torch.where(sitting_out, self.mean, mean), torch.where(sitting_out, self.var, var)
        with torch.no_grad():
            self.policy.flat[:, self.slots] = self.mean
        elite_fitness = torch.gather(fitness, 1, elite)
        return {"fitness_mean": fitness.mean(1), "fitness_max": fitness.max(1).values,
                "fitness_min": fitness.min(1).values, "elite_fitness_mean": elite_fitness.mean(1),
                "elite_fitness_min": elite_fitness.min(1).values, "param_std_mean": self.var.sqrt().mean(1),
                "extra_variance": np.full(G, extra), "generation_steps": ctx.log.steps - steps_before,
                "rollout_seconds": time.perf_counter() - t0}

    def evaluate(self, candidates: torch.Tensor) -> torch.Tensor:
        """Fitness [G, E] (float64) of candidates [G, E, D]: the mean undiscounted return of
        ``episodes_per_candidate`` full episodes of the deterministic policy, actor g·E + i playing
        candidate i of run g. Every environment step taken is counted, every finished episode recorded
        (when the generation ends, in actor order)."""
        ctx, cfg, envs = self.ctx, self.ctx.cfg, self.ctx.envs
        G, E, d, A = ctx.num_runs, self.population, envs.obs_dim, envs.act_dim
        N = G * E
        with torch.no_grad():
            self.candidates.flat[:, self.slots] = candidates.reshape(N, -1)
        # Episodes each actor still has to play. Runs no longer recorded (budget spent, or diverged) sit the
        # generation out: nothing of theirs is kept, and their long episodes would hold up the group.
        left = np.where(np.repeat(ctx.log.recording, E), self.settings.episodes_per_candidate, 0)
        returns = np.zeros(N)
        episodes = []  # (actor, return, length) of the generation's finished episodes
        active = left > 0
        # Per-run moments of the observations acted on, for the normalizer update after the generation.
        count, total, total_sq = np.zeros(G), np.zeros((G, d)), np.zeros((G, d))
        while active.any():
            obs = envs.obs.reshape(G, E, d)
            mask = active.reshape(G, E, 1)
            count += mask.sum((1, 2))
            total += (obs * mask).sum(1)  # adding exact zeros for waiting actors leaves the sums as they were
            total_sq += (obs * obs * mask).sum(1)
            with torch.no_grad():
                action = mlp_forward(self.candidate_layers, self.normalizer(obs).view(N, 1, d))
            env_action = action.view(N, A).numpy().astype(np.float64)
            if not np.isfinite(env_action).all():  # only a diverged run's; it is no longer recorded
                env_action = np.nan_to_num(env_action, nan=0.0, posinf=0.0, neginf=0.0)
            if cfg.action_clip:
                env_action = np.minimum(np.maximum(env_action, envs.low), envs.high)
            *_, finished = envs.step(env_action, active)
            ctx.log.tick(active)
            episodes += finished
            for actor, ret, _ in finished:
                returns[actor] += ret
                left[actor] -= 1
            active = left > 0
        # The generation's episodes are recorded when it ends, in actor order (candidate order), not in
        # the order they ended: that order sorts them by length, so the last episodes of a run would be
        # its longest-lived candidates and "mean of the last 100 episodes" would overstate the population
        # (InvertedPendulum preset run: 1000 for the last 100 of 200 vs 677 for all). Candidates are
        # i.i.d., so any outcome-blind subset of them is a fair sample. Their global_step is the step at
        # which the generation, and so every one of them, was complete.
        ctx.log.finished(sorted(episodes, key=lambda e: e[0]))  # stable: a candidate's episodes in order
        if self.normalizer.enabled:
            for stat, n, m1, m2 in zip(self.normalizer.stats, count, total, total_sq):
                if n == 0:  # a run that sat the generation out
                    continue
                mean = m1 / n
                stat.update_from_moments(mean, np.maximum(m2 / n - mean * mean, 0.0), n)
            self.normalizer._refresh()  # the normalizer's own batch update, from moments
        fitness = returns / self.settings.episodes_per_candidate
        return torch.from_numpy(fitness.reshape(G, E))

    def finite(self) -> torch.Tensor:
        return torch.cat([self.mean, self.var], 1).isfinite().all(1)

    def state_dict(self) -> dict:
        return {"mean": self.mean.clone(), "var": self.var.clone(),
                "normalizer": [self.normalizer.state(g) for g in range(self.ctx.num_runs)]}

    def load_state_dict(self, state: dict) -> None:
        self.mean, self.var = state["mean"].clone(), state["var"].clone()
        with torch.no_grad():
            self.policy.flat[:, self.slots] = self.mean
        self.normalizer.load_states(state["normalizer"])

    def run_model(self, g: int) -> dict:
        """The run's mean parameters (the policy is their deterministic MLP), their std, the normalizer."""
        return {"params": self.policy.run_state(g), "param_std": self.var[g].sqrt().clone(),
                "obs_norm": self.normalizer.state(g)}


SPEC = AlgorithmSpec(
    name="cem", build=CEM, order=4, settings=CEMSettings,
    summary="Noisy cross-entropy method over the policy's parameters (Szita & Lorincz 2006)",
    lines=(Line("cem", "CEM", variant="cem"),),
    networks=MLP, continuous=True,
    tiny={"total_steps": 1500, "num_envs": 6, "hidden_sizes": [8],
          "cem": {"elite_fraction": 0.34, "extra_noise": 0.01}},
    learning=(LearningCheck(
        "cem", "InvertedPendulum-v5", steps=40_000, threshold=250.0, start_below=20.0, window=20, seeds=(0,),
        overrides={"num_envs": 20, "hidden_sizes": [8],
                   "cem": {"elite_fraction": 0.2, "extra_noise": 0.01, "extra_noise_decay_generations": 100}},
        why="A small network (49 parameters), 20 candidates and 4 elites with extra noise 0.01. Seeds 0-9: the "
            "first generation's mean return was 3.7-10.3; the last generation's (noisy candidates) 325-775, so "
            "its best 20-episode mean is at least that"),),
)
