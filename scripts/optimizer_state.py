"""Per layer of an Atari run's network, from its optimizer's second moments: where the optimizer's ε, not the gradient,
sets the step, and which units have had no gradient at all.

    python scripts/optimizer_state.py CHECKPOINT.pt [...]
    python scripts/optimizer_state.py --train atari_a2c --task ALE/Pong-v5 --steps 256000 --networks cnn_mnih2016 cnn_nature

baselines' A2C and ACER step TF-style RMSProp (ppo.nn.optim.TFStyleRMSprop), lr·g/sqrt(ms + ε): where the mean square
ms is far below ε (1e-5 in both presets) a step is lr/√ε times the gradient, SGD whatever the gradient's scale, and
above ε it is normalised per coordinate, as RMSProp intends. PPO steps Adam, lr·m/(sqrt(v) + ε), whose ε weighs as much
as the gradient where v = ε². Printed for each layer, from the state the checkpoint holds (ms or v): its parameters,
the median, the share of its coordinates above that level, and its output units (filters, neurons) every one of whose
weights has a second moment below 1e-20: no gradient, or next to none, for thousands of updates (RMSProp's ms falls
100-fold in 460 updates without one, Adam's v in 4,600 steps), a ReLU that no frame activates.

A checkpoint is read only. With ``--train VARIANT``, a fresh run of the variant (seed ``--seed``) on each network of
``--networks`` trains the first ``--steps`` agent steps of its full schedule (the step size anneals as in the full run)
and its checkpoint, in a temporary folder, is read: the networks side by side at the same point.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppo.algorithms.rollout import group_context  # noqa: E402
from ppo.config.experiments import load_variant  # noqa: E402
from ppo.config.registry import algorithm_spec  # noqa: E402
from ppo.config.run_config import build_config  # noqa: E402
from ppo.training.driver import RunSpec, current_fingerprint, train_group  # noqa: E402

NO_GRADIENT = 1e-20
# optimizer -> (its state's second moment, the second moment at which its ε weighs as much as the gradient)
SECOND_MOMENT = {"rmsprop_tf": ("square_avg", lambda eps: eps),  # ε inside the root
                 "adam": ("exp_avg_sq", lambda eps: eps ** 2)}  # ε outside it


def layers(path: Path) -> tuple[str, int, str, float, list[tuple[str, torch.Tensor]]]:
    """(run id, agent steps, optimizer, the level where its ε weighs as much as the gradient, [(layer, the second
    moments of its parameters in the layer's shape)]) of a one-run checkpoint: the network is built from the run's
    config to name the slices of the flat parameter buffer."""
    state = torch.load(path, weights_only=True, map_location="cpu")
    if len(state["fingerprint"]) != 1:
        raise SystemExit(f"{path}: a group of {len(state['fingerprint'])} runs; this reads one-run checkpoints")
    run_id, task, seed, config_json, *_ = current_fingerprint(state["fingerprint"][0])
    cfg = build_config(json.loads(config_json), str(path))
    kinds = [kind for kind in state["algorithm"]["optimizers"] if kind in SECOND_MOMENT]
    if cfg.network == "mlp" or len(kinds) != 1:
        raise SystemExit(f"{path}: {run_id} is not an Atari run stepped by one of {', '.join(SECOND_MOMENT)}")
    kind = kinds[0]
    optimizer = state["algorithm"]["optimizers"][kind]
    ctx = group_context(task, [cfg], [seed])
    try:
        params = algorithm_spec(cfg.algorithm).build(ctx).agent.params
    finally:
        ctx.envs.close()
    key, level = SECOND_MOMENT[kind]
    square = optimizer["state"][0][key][0]  # run 0's [P]
    found = []
    for name, view in params.views.items():
        lo = (view.data_ptr() - params.flat.data_ptr()) // params.flat.element_size()  # run 0's slice starts here
        found.append((name, square[lo:lo + view[0].numel()].view(view[0].shape)))
    steps = int(state["iteration"]) * cfg.num_envs * cfg.horizon
    return run_id, steps, kind, level(optimizer["param_groups"][0]["eps"]), found


def units_without_gradient(name: str, square: torch.Tensor) -> tuple[int, int] | None:
    """(units none of whose weights has a gradient, units) of a weight: a convolution's [out, in, k, k] has its
    units on dim 0, a linear layer's [in, out] on dim 1; None for a bias."""
    if not name.endswith(".w"):
        return None
    per_unit = square.flatten(1).amax(1) if name.startswith("conv") else square.amax(0)
    return int((per_unit < NO_GRADIENT).sum()), per_unit.numel()


def trained(variant: str, task: str, steps: int, network: str, seed: int, folder: Path) -> Path:
    """The checkpoint of a fresh run of ``variant`` on ``network`` after the first ``steps`` agent steps."""
    cfg = load_variant(variant, network=network).config
    iterations = -(-steps // (cfg.num_envs * cfg.horizon))
    checkpoint = folder / f"{network}.pt"
    started = time.perf_counter()
    train_group([RunSpec(f"{task}/{variant}/seed{seed}", task, cfg, seed)], log=lambda _: None,
                checkpoint=checkpoint, checkpoint_every=iterations, max_iterations=iterations)
    print(f"{variant} on {network}: {iterations * cfg.num_envs * cfg.horizon:,} agent steps trained in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return checkpoint


def report(path: Path) -> None:
    run_id, steps, kind, level, found = layers(path)
    name = "mean square" if kind == "rmsprop_tf" else "v"
    total = sum(square.numel() for _, square in found)
    above = sum(int((square > level).sum()) for _, square in found)
    print(f"{run_id} at {steps:,} agent steps ({kind}): {above / total:.2%} of {total:,} parameters have a {name} "
          f"above {level:g}, where ε weighs as much as the gradient")
    print(f"  {'layer':9s} {'parameters':>10s} {'median':>9s} {'above':>7s}  units without gradient")
    for layer, square in found:
        dead = units_without_gradient(layer, square)
        print(f"  {layer:9s} {square.numel():10,d} {float(square.median()):9.1e} "
              f"{float((square > level).float().mean()):7.1%}  {f'{dead[0]} of {dead[1]}' if dead else ''}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="*", type=Path)
    p.add_argument("--train", metavar="VARIANT", help="train a fresh run of this variant per network and read it")
    p.add_argument("--task", default="ALE/Pong-v5")
    p.add_argument("--steps", type=int, default=256_000, help="agent steps to train (default: 3,200 A2C updates)")
    p.add_argument("--networks", nargs="+", default=["cnn_mnih2016", "cnn_nature"])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not args.checkpoints and not args.train:
        p.error("give checkpoints, or --train VARIANT")
    torch.set_num_threads(1)
    for path in args.checkpoints:
        report(path)
    if args.train:
        with tempfile.TemporaryDirectory() as folder:
            for network in args.networks:
                report(trained(args.train, args.task, args.steps, network, args.seed, Path(folder)))
    return 0

if __name__ == "__main__":
    sys.exit(main())
