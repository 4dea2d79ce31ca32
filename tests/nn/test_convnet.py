"""The Atari actor-critic (ppo/nn/convnet.py): architecture sizes by hand, runs independent in a group,
initialisation as stated, pixels scaled to [0, 1]."""
import math

import pytest
import torch
import torch.nn.functional as F

from ppo.nn.convnet import CNNActorCritic


def gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def parameter_count(net: CNNActorCritic) -> int:
    return sum(v[0].numel() for v in net.params.views.values())


def test_parameter_counts_by_hand():
    # Mnih 2016: 84 -> (84-8)/4+1 = 20 -> (20-4)/2+1 = 9; 32·9·9 = 2592 features
    small = 16 * 4 * 64 + 16 + 32 * 16 * 16 + 32 + 2592 * 256 + 256 + 256 * 6 + 6 + 256 + 1
    # Nature: 20 -> 9 -> 9-3+1 = 7; 64·7·7 = 3136 features
    nature = 32 * 4 * 64 + 32 + 64 * 32 * 16 + 64 + 64 * 64 * 9 + 64 + 3136 * 512 + 512 + 512 * 6 + 6 + 512 + 1
    assert parameter_count(CNNActorCritic("cnn_mnih2016", (4, 84, 84), 6, gens(0))) == small == 677_943
    assert parameter_count(CNNActorCritic("cnn_nature", (4, 84, 84), 6, gens(0))) == nature == 1_687_719


@pytest.mark.parametrize("architecture", ["cnn_mnih2016", "cnn_nature"])
def test_run_in_a_group_equals_run_alone(architecture):
    obs = torch.randint(0, 256, (3, 5, 4, 84, 84), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    group = CNNActorCritic(architecture, (4, 84, 84), 6, gens(10, 11, 12))
    alone = CNNActorCritic(architecture, (4, 84, 84), 6, gens(11))
    policy, value = group.evaluate(obs)
    policy1, value1 = alone.evaluate(obs[1:2])
    # Same parameters; a grouped convolution may sum in another order than a single one, so allclose.
    torch.testing.assert_close(group.params.flat[1], alone.params.flat[0], rtol=0, atol=0)
    torch.testing.assert_close(policy.logits[1:2], policy1.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(value[1:2], value1, rtol=1e-5, atol=1e-5)
    # and each run's gradient is its own: a loss on run 1 only leaves rows 0 and 2 untouched
    group.params.zero_grad_()
    value[1].sum().backward()
    assert group.params.flat.grad[[0, 2]].abs().max() == 0 and group.params.flat.grad[1].abs().max() > 0


def test_matches_a_plain_torch_network():
    """The same computation written with nn layers on run 0's parameters."""
    net = CNNActorCritic("cnn_mnih2016", (4, 84, 84), 6, gens(3, 4))
    v = {k: p[0].detach() for k, p in net.params.views.items()}
    obs = torch.randint(0, 256, (2, 7, 4, 84, 84), dtype=torch.uint8, generator=torch.Generator().manual_seed(5))
    x = obs[0].float() / 255
    x = F.relu(F.conv2d(x, v["conv0.w"], v["conv0.b"], stride=4))
    x = F.relu(F.conv2d(x, v["conv1.w"], v["conv1.b"], stride=2)).flatten(1)
    x = F.relu(x @ v["fc.w"] + v["fc.b"])
    policy, value = net.evaluate(obs)
    torch.testing.assert_close(policy.logits[0], torch.log_softmax(x @ v["policy.w"] + v["policy.b"], -1),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(value[0], (x @ v["value.w"] + v["value.b"]).squeeze(-1), rtol=1e-5, atol=1e-5)


def test_initialisation_gains():
    net = CNNActorCritic("cnn_mnih2016", (4, 84, 84), 6, gens(0))
    v = net.params.views
    # orthogonal with gain g: the [fan_in, fan_out] matrix has orthogonal columns of norm g (fan_in ≥ fan_out)
    for name, gain in [("fc.w", math.sqrt(2)), ("policy.w", 0.01), ("value.w", 1.0)]:
        w = v[name][0]
        torch.testing.assert_close(w.T @ w, gain ** 2 * torch.eye(w.shape[1]), rtol=1e-4, atol=1e-6)
    conv = v["conv1.w"][0].reshape(32, -1)  # [out, fan_in]: orthogonal rows of norm √2
    torch.testing.assert_close(conv @ conv.T, 2 * torch.eye(32), rtol=1e-4, atol=1e-5)
    assert all(v[b].abs().max() == 0 for b in v if b.endswith(".b"))
    # policy output scale 0.01: initial policy is close to uniform
    policy, _ = net.evaluate(torch.full((1, 4, 4, 84, 84), 255, dtype=torch.uint8))
    assert policy.entropy().min() > math.log(6) - 1e-3


def test_policy_init_scale_sets_the_policy_heads_gain_alone():
    """baselines' A2C of 2017 initialised its policy head at gain 1 (experiments/presets/a2c_atari.yaml): the
    setting scales that head and nothing else, from the same random draws."""
    default, a2c = (CNNActorCritic("cnn_mnih2016", (4, 84, 84), 6, gens(0), policy_init_scale=s) for s in (0.01, 1.0))
    w = a2c.params.views["policy.w"][0]
    torch.testing.assert_close(w.T @ w, torch.eye(6), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w * 0.01, default.params.views["policy.w"][0], rtol=1e-5, atol=1e-9)
    for name, p in default.params.views.items():
        if name != "policy.w":
            assert torch.equal(p, a2c.params.views[name]), name
    # at gain 1 the first policy is no longer near uniform
    policy, _ = a2c.evaluate(torch.full((1, 4, 4, 84, 84), 255, dtype=torch.uint8))
    assert policy.entropy().max() < math.log(6) - 1e-2
