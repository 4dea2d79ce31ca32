"""How much of the shared torso's gradient is the value term's, in an Atari PPO run as it trains.

    python scripts/atari_gradient_split.py CHECKPOINT.pt [...] [--updates 4] [--vf-coefs 1 0.25]

Each checkpoint (one run's group state, as the grid writes it) is restored and trained for ``--updates`` more
iterations exactly as the run would be; at every minibatch the policy part of Eq. 9 (clipped surrogate and
entropy) and the value part (the squared error) are differentiated separately, before the run's own step is
taken. Printed per checkpoint: the median over minibatches of each part's gradient norm in the shared torso
(convolutions and the fully connected layer) and in each head, and, for each weight c1 asked for, the ratio
||c1·g_VF|| / ||g_policy|| in the torso and the factor that the gradient-norm clip (max_grad_norm) would apply to
the sum. Adam normalises each coordinate by its own gradient scale, so a uniform clip factor cancels out over
steps; what shapes the torso is which term its coordinates mostly see. A ratio well above 1 means the shared
features are trained for the value function first (docs/paper-scale.md, "Open: Breakout", candidate 3).

Nothing is written: the checkpoint is read only, and the run's own training is not touched.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppo.algorithms.objective import objective_terms, value_loss  # noqa: E402
from ppo.algorithms.ppo import PPO, Samples, UpdateStats  # noqa: E402
from ppo.algorithms.rollout import group_context, standardized  # noqa: E402
from ppo.algorithms.schedule import annealed  # noqa: E402
from ppo.config.registry import algorithm_spec  # noqa: E402
from ppo.config.run_config import build_config  # noqa: E402
from ppo.training.driver import GroupProgress, current_fingerprint, restore_group  # noqa: E402
from ppo.training.records import git_state  # noqa: E402

TORSO = ("conv", "fc.")


def part_norms(agent, grad: torch.Tensor) -> dict[str, float]:
    """Norm of one run's gradient [P] over the torso and over each head (the parameters' slices of flat)."""
    flat = agent.params.flat
    groups: dict[str, list[torch.Tensor]] = {"torso": [], "policy head": [], "value head": []}
    for name, view in agent.params.views.items():
        lo = (view.data_ptr() - flat.data_ptr()) // flat.element_size()  # run 0's slice starts here
        piece = grad[lo:lo + view[0].numel()]
        key = "torso" if name.startswith(TORSO) else "policy head" if name.startswith("policy") else "value head"
        groups[key].append(piece)
    return {key: float(torch.cat(pieces).norm()) for key, pieces in groups.items()}


def split_update(algo: PPO, iteration: int, coefs: list[float], rows: list[dict]) -> None:
    """One iteration of the run's own update (its minibatches, its steps), measuring each minibatch first."""
    cfg, agent = algo.ctx.cfg, algo.agent
    lr = annealed(cfg.ppo.learning_rate, cfg.ppo.lr_schedule, iteration, algo.num_iterations)
    clip_eps = annealed(algo.clip_eps, cfg.ppo.clip_schedule, iteration, algo.num_iterations)
    algo.optimizers["adam"].set_lr(lr)
    samples = Samples(algo.collect(), agent, cfg.ppo.vf_clip is not None)
    active = torch.ones(algo.ctx.num_runs, dtype=torch.bool)
    for _ in range(cfg.ppo.epochs):
        for index in algo.minibatches(active):
            mb = samples.minibatch(index)
            adv = standardized(mb.advantages, correction=1) if cfg.adv_norm == "minibatch" else mb.advantages
            policy, value = agent.evaluate(mb.obs)
            ratio = (policy.log_prob(mb.actions) - mb.old_logp).exp()
            policy_loss, _ = objective_terms(ratio, adv, mb.old_policy.kl(policy), policy.entropy(), clip_eps,
                                             algo.beta.view(-1, 1), algo.ent_coef)
            vf_loss = value_loss(value, mb.returns, mb.old_value, cfg.ppo.vf_clip)
            grads = []
            for term in (policy_loss, vf_loss):
                agent.params.zero_grad_()
                term.sum().backward(retain_graph=True)
                grads.append(algo.flat.grad[0].clone())
            g_pi, g_v = grads
            row = {"iteration": iteration, **{f"policy {k}": v for k, v in part_norms(agent, g_pi).items()},
                   **{f"value {k}": v for k, v in part_norms(agent, g_v).items()}}
            for c in coefs:
                total = float((g_pi + c * g_v).norm())
                row[f"clip factor c1={c:g}"] = min(1.0, cfg.ppo.max_grad_norm / total) if cfg.ppo.max_grad_norm else 1.0
            rows.append(row)
            # the run's own step: the combined loss, as PPO.minibatch_step takes it
            algo.minibatch_step(mb, clip_eps, active, UpdateStats(algo.ctx.num_runs))


def restore(path: Path):
    """The run of a one-run checkpoint, restored as the driver resumes it: (algorithm, next iteration, run id)."""
    state = torch.load(path, weights_only=True, map_location="cpu")
    if len(state["fingerprint"]) != 1:
        raise SystemExit(f"{path}: a group of {len(state['fingerprint'])} runs; this reads one-run checkpoints")
    run_id, task, seed, config_json, *_ = current_fingerprint(state["fingerprint"][0])
    cfg = build_config(json.loads(config_json), str(path))
    if cfg.algorithm != "ppo" or cfg.network is None:
        raise SystemExit(f"{path}: {run_id} is not an Atari PPO run")
    ctx = group_context(task, [cfg], [seed])
    algo = algorithm_spec(cfg.algorithm).build(ctx)
    restore_group(state, algo, ctx, GroupProgress.start(1, git_state()), git_state())
    return algo, int(state["iteration"]), run_id


def measure(path: Path, updates: int, coefs: list[float]) -> dict:
    algo, start, run_id = restore(path)
    rows: list[dict] = []
    for iteration in range(start, start + updates):
        split_update(algo, iteration, coefs, rows)
    algo.ctx.envs.close()
    cfg = algo.ctx.cfg
    return {"run": run_id, "agent steps": start * cfg.num_envs * cfg.horizon,
            "rows": rows}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="+", type=Path)
    p.add_argument("--updates", type=int, default=4, help="iterations measured from each checkpoint (default 4)")
    p.add_argument("--vf-coefs", nargs="+", type=float, default=[1.0, 0.25],
                   help="value weights c1 to compare (default: Table 5's 1 and ppo2's effective 0.25)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for path in args.checkpoints:
        result = measure(path, args.updates, args.vf_coefs)
        rows = result["rows"]
        median = {key: float(np.median([r[key] for r in rows])) for key in rows[0] if key != "iteration"}
        print(f"{result['run']} at {result['agent steps']:,} agent steps ({len(rows)} minibatches, medians):")
        for part in ("torso", "policy head", "value head"):
            print(f"  {part:12s} ||g_policy|| {median['policy ' + part]:.4f}   ||g_VF|| {median['value ' + part]:.4f}")
        ratios = [r["value torso"] / r["policy torso"] for r in rows]
        for c in args.vf_coefs:
            print(f"  c1 = {c:g}: torso ||c1·g_VF|| / ||g_policy|| median {c * np.median(ratios):.2f} "
                  f"(minibatches {c * min(ratios):.2f} to {c * max(ratios):.2f}); clip factor median "
                  f"{median[f'clip factor c1={c:g}']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
