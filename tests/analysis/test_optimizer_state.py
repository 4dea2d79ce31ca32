"""scripts/optimizer_state.py: the optimizer's second moments per layer of an Atari checkpoint, read in place."""
import importlib.util
from pathlib import Path

import torch

from ppo.config.experiments import load_preset
from ppo.config.files import deep_merge
from ppo.config.run_config import build_config
from ppo.training.driver import RunSpec, train_group

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("optimizer_state", ROOT / "scripts" / "optimizer_state.py")
optimizer_state = importlib.util.module_from_spec(spec)
spec.loader.exec_module(optimizer_state)

TINY = build_config(deep_merge(load_preset("a2c_atari").config, {"total_steps": 160, "num_envs": 2}), "test")


def test_the_layers_are_the_optimizer_state_s_slices(tmp_path):
    checkpoint = tmp_path / "pong.pt"
    train_group([RunSpec("ALE/Pong-v5/atari_a2c/seed0", "ALE/Pong-v5", TINY, 0)], log=lambda _: None,
                checkpoint=checkpoint, checkpoint_every=1, max_iterations=3)
    run_id, steps, kind, level, found = optimizer_state.layers(checkpoint)
    assert (run_id, steps, kind, level) == ("ALE/Pong-v5/atari_a2c/seed0", 3 * 2 * 5, "rmsprop_tf", 1e-5)
    shapes = {name: tuple(square.shape) for name, square in found}
    assert shapes == {"conv0.w": (16, 4, 8, 8), "conv0.b": (16,), "conv1.w": (32, 16, 4, 4), "conv1.b": (32,),
                      "fc.w": (2592, 256), "fc.b": (1, 256), "policy.w": (256, 6), "policy.b": (1, 6),
                      "value.w": (256, 1), "value.b": (1, 1)}
    # the slices hold the checkpoint's mean squares where ppo.nn.parameters puts each tensor: one after another, each
    # starting at a multiple of 16 floats (by hand: policy.b's 6 are padded to 16), padding left out
    square = torch.load(checkpoint, weights_only=True)["algorithm"]["optimizers"]["rmsprop_tf"]["state"][0]["square_avg"][0]
    layer = dict(found)
    assert torch.equal(layer["conv1.w"].flatten(), square[4_112:12_304])
    assert torch.equal(layer["policy.w"].flatten(), square[676_144:677_680])
    assert torch.equal(layer["value.w"].flatten(), square[677_696:677_952])
    assert torch.equal(layer["value.b"].flatten(), square[677_952:677_953])
    joined = torch.cat([s.flatten() for _, s in found])
    assert joined.numel() == 677_943 < square.numel()
    # three updates from TF's initial mean square of 1: 0.99³ plus 1 % of each g², every coordinate still far above ε
    assert joined.min() >= 0.99 ** 3 and joined.max() < 1


def test_adam_s_level_is_epsilon_squared(tmp_path):
    """PPO's Adam divides by sqrt(v) + ε: its ε weighs as much as the gradient where v = ε²."""
    tiny = build_config(deep_merge(load_preset("ppo_atari_paper").config,
                                   {"total_steps": 256, "num_envs": 2, "horizon": 32, "ppo": {"minibatch_size": 32}}),
                        "test")
    checkpoint = tmp_path / "pong.pt"
    train_group([RunSpec("ALE/Pong-v5/atari_ppo/seed0", "ALE/Pong-v5", tiny, 0)], log=lambda _: None,
                checkpoint=checkpoint, checkpoint_every=1, max_iterations=1)
    _, steps, kind, level, found = optimizer_state.layers(checkpoint)
    assert (steps, kind, level) == (64, "adam", tiny.ppo.adam_eps ** 2)
    v = torch.load(checkpoint, weights_only=True)["algorithm"]["optimizers"]["adam"]["state"][0]["exp_avg_sq"][0]
    assert torch.equal(dict(found)["value.b"].flatten(), v[677_952:677_953])

def test_units_without_gradient_by_hand():
    conv = torch.full((3, 2, 2, 2), 1e-8)
    conv[1] = 1e-30  # filter 1: no gradient on any weight
    conv[2, 0, 0, 0] = 1e-30  # filter 2: one weight without, the others with
    assert optimizer_state.units_without_gradient("conv0.w", conv) == (1, 3)
    linear = torch.full((4, 3), 1e-8)  # [in, out]: unit 2 dead
    linear[:, 2] = 0.0
    assert optimizer_state.units_without_gradient("fc.w", linear) == (1, 3)
    assert optimizer_state.units_without_gradient("fc.b", torch.zeros(3)) is None


def test_train_reads_a_fresh_run_on_the_network_asked_for(tmp_path):
    checkpoint = optimizer_state.trained("atari_a2c", "ALE/Pong-v5", 100, "cnn_nature", 0, tmp_path)
    run_id, steps, kind, level, found = optimizer_state.layers(checkpoint)
    # the variant's 16 actors x 5 steps: 100 agent steps round up to 2 updates
    assert (run_id, steps, kind) == ("ALE/Pong-v5/atari_a2c/seed0", 160, "rmsprop_tf")
    shapes = {name: tuple(square.shape) for name, square in found}
    assert shapes["conv0.w"] == (32, 4, 8, 8) and shapes["conv2.w"] == (64, 64, 3, 3) and shapes["fc.w"] == (3136, 512)
