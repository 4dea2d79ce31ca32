"""scripts/atari_gradient_split.py: the policy and value parts of Eq. 9's gradient, measured while the run trains
exactly as it would."""
import importlib.util
from pathlib import Path

import torch

from ppo.config.experiments import load_preset
from ppo.config.files import deep_merge
from ppo.config.run_config import build_config
from ppo.training.driver import RunSpec, train_group

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("atari_gradient_split", ROOT / "scripts" / "atari_gradient_split.py")
gradient_split = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gradient_split)

# 2 actors x 32 steps, minibatches of 32, 2 epochs: 4 minibatch steps per iteration
TINY = build_config(deep_merge(load_preset("ppo_atari_paper").config,
                               {"total_steps": 512, "num_envs": 2, "horizon": 32,
                                "ppo": {"minibatch_size": 32, "epochs": 2}}), "test")


def test_each_part_reaches_only_its_own_head_and_the_run_trains_as_it_would(tmp_path):
    checkpoint = tmp_path / "pong.pt"
    train_group([RunSpec("ALE/Pong-v5/atari_ppo/seed0", "ALE/Pong-v5", TINY, 0)], log=lambda _: None,
                checkpoint=checkpoint, checkpoint_every=1, max_iterations=2)

    result = gradient_split.measure(checkpoint, updates=1, coefs=[1.0, 0.25])
    assert result["run"] == "ALE/Pong-v5/atari_ppo/seed0" and result["agent steps"] == 2 * 64
    rows = result["rows"]
    assert len(rows) == 4
    for row in rows:
        # the policy loss has no path to the value head, the squared error none to the policy head
        assert row["policy value head"] == 0 and row["value policy head"] == 0
        assert row["policy torso"] > 0 and row["value torso"] > 0 and row["value value head"] > 0
        assert 0 < row["clip factor c1=1"] <= 1 and 0 < row["clip factor c1=0.25"] <= 1

    # measuring takes the run's own steps: the parameters after one measured iteration are those of the run's
    # own iteration from the same checkpoint, bit for bit
    measured, start, _ = gradient_split.restore(checkpoint)
    gradient_split.split_update(measured, start, [1.0], [])
    plain, start, _ = gradient_split.restore(checkpoint)
    plain.iterate(start)
    assert torch.equal(measured.flat.detach(), plain.flat.detach())
    for algo in (measured, plain):
        algo.ctx.envs.close()
