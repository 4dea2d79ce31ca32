"""Networks of many independent runs held as one set of batched tensors.

Run ``g`` owns slice ``[g]`` of every parameter. A forward pass is one ``baddbmm`` per layer for all
runs, and because every operation acts on each slice separately, the gradient of the *sum* of the
runs' losses with respect to slice ``g`` is exactly run ``g``'s own gradient; Adam is elementwise, so one
optimizer over the stacked tensors is G independent optimizers.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.distributions import Normal


def init_weight(kind: str, fan_in: int, fan_out: int, scale: float, gen: torch.Generator) -> torch.Tensor:
    """One run's weight matrix of shape [fan_in, fan_out].

    normc (openai/baselines ppo1 ``normc_initializer``): Gaussian columns rescaled to norm ``scale``.
    orthogonal (baselines ppo2, CleanRL): orthogonal matrix with gain ``scale``.
    """
    if kind == "normc":
        w = torch.randn(fan_in, fan_out, generator=gen, dtype=torch.float64)
        w *= scale / w.square().sum(dim=0, keepdim=True).sqrt()
        return w.float()
    if kind == "orthogonal":
        w = torch.empty(fan_out, fan_in)
        nn.init.orthogonal_(w, gain=scale, generator=gen)
        return w.T.contiguous()
    raise ValueError(f"unknown init {kind!r}")


class BatchedMLP(nn.Module):
    """G independent tanh MLPs; input [G, B, in] -> output [G, B, out]."""

    def __init__(self, sizes: list[int], out_scale: float, init: str, gens: list[torch.Generator]):
        super().__init__()
        self.layers: list[tuple[nn.Parameter, nn.Parameter]] = []  # plain list: no ParameterList lookups per call
        n_layers = len(sizes) - 1
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            # Hidden layers get unit scale (ppo1: normc(1.0); ppo2: orthogonal gain sqrt(2)); the output
            # layer gets out_scale.
            scale = out_scale if i == n_layers - 1 else (1.0 if init == "normc" else math.sqrt(2))
            w = nn.Parameter(torch.stack([init_weight(init, fan_in, fan_out, scale, g) for g in gens]))
            b = nn.Parameter(torch.zeros(len(gens), 1, fan_out))
            self.register_parameter(f"w{i}", w)
            self.register_parameter(f"b{i}", b)
            self.layers.append((w, b))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            if w.shape[-1] == 1:
                # A one-column product goes through MKL's gemv when G = 1 and gemm otherwise, which round
                # differently; a multiply-and-sum keeps a run's value bit-identical for any group size.
                x = (x * w.transpose(1, 2)).sum(-1, keepdim=True) + b
            else:
                x = torch.baddbmm(b, x, w)
            if i < last:
                x = torch.tanh(x)
        return x


class GaussianActorCritic(nn.Module):
    """Separate policy and value MLPs (paper Sec. 6.1) and a state-independent log-std per run."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...], init: str,
                 log_std_init: float, gens: list[torch.Generator]):
        super().__init__()
        sizes = [obs_dim, *hidden]
        # ppo1: policy mean output normc(0.01), value output normc(1.0); ppo2/CleanRL: 0.01 and 1.0 too.
        self.policy = BatchedMLP([*sizes, act_dim], 0.01, init, gens)
        self.value = BatchedMLP([*sizes, 1], 1.0, init, gens)
        self.log_std = nn.Parameter(torch.full((len(gens), 1, act_dim), float(log_std_init)))

    def distribution(self, obs: torch.Tensor) -> Normal:
        """Action distribution for obs [G, B, obs_dim]; event dims are summed by the caller."""
        mean = self.policy(obs)
        # No argument validation: a diverged run (NaN parameters) must be recorded, not raise.
        return Normal(mean, self.log_std.exp().expand_as(mean), validate_args=False)

    def value_of(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value(obs).squeeze(-1)


def per_run_grad_norm_clip(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each run's global gradient norm separately; returns the pre-clip norms, shape [G]."""
    sq = sum(p.grad.square().flatten(1).sum(1) for p in params)
    norms = sq.sqrt()
    factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad.mul_(factor.view(-1, *([1] * (p.grad.dim() - 1))))
    return norms


class BatchedAdam:
    """torch's Adam over stacked per-run parameters, fused where that stays bit-identical per run.

    The fused CPU kernel handles whole SIMD vectors and then a scalar tail, which rounds differently; a
    run's slice only sees the same arithmetic for every group size if no element falls in the tail, so
    tensors whose per-run size is a multiple of 64 go to the fused kernel and the small rest (biases of
    tiny layers, log-std) to the plain multi-tensor one.
    """

    VECTOR_MULTIPLE = 64

    def __init__(self, params: list[torch.Tensor], lr: float, eps: float):
        fused = [p for p in params if (p.numel() // p.shape[0]) % self.VECTOR_MULTIPLE == 0]
        rest = [p for p in params if (p.numel() // p.shape[0]) % self.VECTOR_MULTIPLE != 0]
        self.optimizers = [torch.optim.Adam(fused, lr=lr, eps=eps, fused=True)] if fused else []
        if rest:
            self.optimizers.append(torch.optim.Adam(rest, lr=lr, eps=eps, foreach=True))

    def set_lr(self, lr: float) -> None:
        for opt in self.optimizers:
            for group in opt.param_groups:
                group["lr"] = lr

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=False)

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()
