"""Where TF-style RMSProp steps as RMSProp and where as plain SGD, per layer, in an Atari A2C or ACER checkpoint.

    python scripts/rmsprop_state.py CHECKPOINT.pt [...]

baselines' A2C and ACER (ppo.nn.optim.TFStyleRMSprop) step lr·g/sqrt(ms + ε). Where the mean square ms is far below
ε (1e-5 in both presets) a step is lr/√ε times the gradient, SGD whatever the gradient's scale; above ε it is
normalised per coordinate, as RMSProp intends. Printed for each layer of the run's network, from the optimizer state
the checkpoint holds: its parameters, the median mean square, the share of its coordinates above ε, and its output
units (filters, neurons) every one of whose weights has a mean square below 1e-20: no gradient, or next to none, for
thousands of updates (a mean square falls 100-fold in 460 updates without one), a ReLU that no frame activates.

Nothing is written and nothing is trained: the checkpoint is read only.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppo.algorithms.rollout import group_context  # noqa: E402
from ppo.config.registry import algorithm_spec  # noqa: E402
from ppo.config.run_config import build_config  # noqa: E402
from ppo.training.driver import current_fingerprint  # noqa: E402

NO_GRADIENT = 1e-20


def layers(path: Path) -> tuple[str, int, float, list[tuple[str, torch.Tensor]]]:
    """(run id, agent steps, ε, [(layer, the mean squares of its parameters in the layer's shape)]) of a one-run
    checkpoint: the network is built from the run's config to name the slices of the flat parameter buffer."""
    state = torch.load(path, weights_only=True, map_location="cpu")
    if len(state["fingerprint"]) != 1:
        raise SystemExit(f"{path}: a group of {len(state['fingerprint'])} runs; this reads one-run checkpoints")
    run_id, task, seed, config_json, *_ = current_fingerprint(state["fingerprint"][0])
    cfg = build_config(json.loads(config_json), str(path))
    optimizer = state["algorithm"]["optimizers"].get("rmsprop_tf")
    if cfg.network == "mlp" or optimizer is None:
        raise SystemExit(f"{path}: {run_id} is not an Atari run stepped by TF-style RMSProp (A2C or ACER)")
    ctx = group_context(task, [cfg], [seed])
    try:
        params = algorithm_spec(cfg.algorithm).build(ctx).agent.params
    finally:
        ctx.envs.close()
    square = optimizer["state"][0]["square_avg"][0]  # run 0's [P]
    found = []
    for name, view in params.views.items():
        lo = (view.data_ptr() - params.flat.data_ptr()) // params.flat.element_size()  # run 0's slice starts here
        found.append((name, square[lo:lo + view[0].numel()].view(view[0].shape)))
    steps = int(state["iteration"]) * cfg.num_envs * cfg.horizon
    return run_id, steps, optimizer["param_groups"][0]["eps"], found


def units_without_gradient(name: str, square: torch.Tensor) -> tuple[int, int] | None:
    """(units none of whose weights has a gradient, units) of a weight: a convolution's [out, in, k, k] has its
    units on dim 0, a linear layer's [in, out] on dim 1; None for a bias."""
    if not name.endswith(".w"):
        return None
    per_unit = square.flatten(1).amax(1) if name.startswith("conv") else square.amax(0)
    return int((per_unit < NO_GRADIENT).sum()), per_unit.numel()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="+", type=Path)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for path in args.checkpoints:
        run_id, steps, eps, found = layers(path)
        total = sum(square.numel() for _, square in found)
        above = sum(int((square > eps).sum()) for _, square in found)
        print(f"{run_id} at {steps:,} agent steps: {above / total:.2%} of {total:,} parameters have a mean square "
              f"above ε = {eps:g}")
        print(f"  {'layer':9s} {'parameters':>10s} {'median ms':>10s} {'above ε':>8s}  units without gradient")
        for name, square in found:
            dead = units_without_gradient(name, square)
            print(f"  {name:9s} {square.numel():10,d} {float(square.median()):10.1e} "
                  f"{float((square > eps).float().mean()):8.1%}  {f'{dead[0]} of {dead[1]}' if dead else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
