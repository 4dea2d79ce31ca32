"""The Atari actor-critic of many independent runs: one convolutional torso shared by a policy head
(logits over the game's actions) and a value head, as the paper's Atari experiments use (Eq. 9).

Architectures (``network`` in the run config):
  cnn_mnih2016  the network of Mnih et al. 2016 (A3C), which the PPO paper says it used: conv 16×8×8
                stride 4, conv 32×4×4 stride 2, fully connected 256, ReLU.
  cnn_nature    the larger network of Mnih et al. 2015 (DQN, "Nature CNN"), which openai/baselines' ppo2
                (the first public PPO code) used: conv 32×8×8/4, 64×4×4/2, 64×3×3/1, fully connected 512.

The runs' parameters live in one [G, P] buffer (ppo.nn.parameters.FlatParameters). Convolutions of all runs
are one grouped convolution (``groups=G``: run g's filters see only run g's channels), the fully
connected layers one ``baddbmm``, so a group costs one call per layer. Initialisation as baselines ppo2:
orthogonal with gain √2 for the torso, ``policy_init_scale`` for the policy head (0.01 as ppo2 and acer; baselines'
A2C of 2017 used 1), 1 for the value head, zero biases.

``value_outputs``: 1 (default) gives the state value V(s) of PPO and A2C; ACER asks for one output per action,
a Q head ``q`` (Q(s, ·), gain 1 like baselines acer's ``linear(h, 'q', nact)``) in place of the value head.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .categorical import Categorical
from .parameters import FlatParameters, init_weight

# name -> (conv layers as (channels, kernel, stride), fully connected width)
ARCHITECTURES = {
    "cnn_mnih2016": ([(16, 8, 4), (32, 4, 2)], 256),
    "cnn_nature": ([(32, 8, 4), (64, 4, 2), (64, 3, 1)], 512),
}


def conv_output_size(size: int, kernel: int, stride: int) -> int:
    return (size - kernel) // stride + 1


class CNNActorCritic(nn.Module):
    def __init__(self, architecture: str, obs_shape: tuple[int, int, int], num_actions: int,
                 gens: list[torch.Generator], value_outputs: int = 1, policy_init_scale: float = 0.01):
        super().__init__()
        convs, fc_width = ARCHITECTURES[architecture]
        channels, size, _ = obs_shape
        G = len(gens)
        tensors, self.strides = {}, []
        for i, (out, kernel, stride) in enumerate(convs):
            fan_in = channels * kernel * kernel
            # One run's filters as the [fan_in, out] matrix init_weight makes, transposed to torch's layout.
            tensors[f"conv{i}.w"] = torch.stack([
                init_weight("orthogonal", fan_in, out, math.sqrt(2), g).T.reshape(out, channels, kernel, kernel)
                for g in gens])
            tensors[f"conv{i}.b"] = torch.zeros(G, out)
            self.strides.append(stride)
            channels, size = out, conv_output_size(size, kernel, stride)
        flat_features = channels * size * size
        self.value_head = "value" if value_outputs == 1 else "q"
        for name, fan_in, fan_out, gain in [("fc", flat_features, fc_width, math.sqrt(2)),
                                            ("policy", fc_width, num_actions, policy_init_scale),
                                            (self.value_head, fc_width, value_outputs, 1.0)]:
            tensors[f"{name}.w"] = torch.stack([init_weight("orthogonal", fan_in, fan_out, gain, g) for g in gens])
            tensors[f"{name}.b"] = torch.zeros(G, 1, fan_out)
        self.params = FlatParameters(tensors)
        self.num_convs = len(convs)
        self.num_runs = G

    def evaluate(self, obs: torch.Tensor) -> tuple[Categorical, torch.Tensor]:
        """uint8 frames [G, B, C, H, W] -> (π(.|s) over [G, B], V(s) [G, B]); with a Q head, Q(s, ·) [G, B, A]."""
        G, B = obs.shape[:2]
        v = self.params.views
        # Runs side by side along channels: [B, G·C, H, W]; groups=G keeps each run's channels apart.
        # Channels-last memory makes the minibatch convolutions (oneDNN) 2x faster here, forward and backward
        # (measured: 143 vs 287 ms for 256 frames); for the rollout's few frames it costs more than it saves.
        # The 1/255 pixel scale is folded into the first layer's weights: one pass less over the frames.
        C, H, W = obs.shape[2:]
        if B >= 64:
            # [B, H, W, G, C] memory. Where the frames are stored channels-last (PPO's update keeps them so)
            # it is a view for one run; for several, whole pixels move: 4 stacked uint8 channels as one
            # int32, 10x faster than moving bytes. The float conversion is then the one pass left.
            pixels = obs.permute(1, 3, 4, 0, 2)
            if C % 4 == 0 and pixels.stride(-1) == 1 and not pixels.is_contiguous():
                pixels = pixels.view(torch.int32).contiguous().view(torch.uint8)
            x = pixels.contiguous().view(B, H, W, G * C).float().permute(0, 3, 1, 2)
        else:
            x = obs.transpose(0, 1).reshape(B, -1, H, W).float()
        for i, stride in enumerate(self.strides):
            w = v[f"conv{i}.w"].reshape(-1, *v[f"conv{i}.w"].shape[2:])
            if i == 0:
                w = w * (1 / 255.0)
            x = F.conv2d(x, w, v[f"conv{i}.b"].reshape(-1), stride=stride, groups=G)
            if i < self.num_convs - 1:
                x = F.relu_(x)  # in place: no layer keeps its output for backward, and memory is reused
        # [G, B, features], run g's own channels. The last ReLU comes after this flattening copy (the same
        # values): its gradient arrives in the flat layout, and a ReLU backward whose gradient and output have
        # different memory layouts (here channels-last) is 16x slower.
        x = F.relu_(x.reshape(B, G, -1).transpose(0, 1))
        x = F.relu_(torch.baddbmm(v["fc.b"], x, v["fc.w"]))
        logits = torch.baddbmm(v["policy.b"], x, v["policy.w"])
        if self.value_head == "q":
            return Categorical(logits), torch.baddbmm(v["q.b"], x, v["q.w"])
        value = (x * v["value.w"].transpose(1, 2)).sum(-1) + v["value.b"].squeeze(-1)
        return Categorical(logits), value

    def policy(self, obs: torch.Tensor) -> Categorical:
        """π(.|s); the shared torso runs anyway, so this is evaluate() without its value."""
        return self.evaluate(obs)[0]

    def value_of(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s) [G, B]; with a Q head, V(s) = Σ_a π(a|s) Q(s, a)."""
        policy, value = self.evaluate(obs)
        if self.value_head == "q":
            return (policy.logits.exp() * value).sum(-1)
        return value
