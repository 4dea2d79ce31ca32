"""Networks of many independent runs held as one batched parameter tensor.

All parameters of run ``g`` live in row ``g`` of one ``[G, P]`` tensor; layers are views into it. A
forward pass is one ``baddbmm`` per layer for all runs. Every operation acts on each run's slice
separately, so the gradient of the *sum* of the runs' losses with respect to row ``g`` is exactly run
``g``'s own gradient, and one fused Adam step over the whole tensor is G independent Adam steps.

Bit-identity across group sizes (tests/training/test_group_training.py) needs three precautions, each below:
rows padded to a multiple of 64 floats, slots aligned to 16 floats, one-column layers without gemv.
"""
from __future__ import annotations

import math
import warnings

import torch
from torch import nn

# The parameters' gradients are strided views of flat.grad on purpose (see FlatParameters).
warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")


ROW_MULTIPLE = 64  # fused Adam handles whole SIMD vectors, then a scalar tail that rounds differently
SLOT_ALIGN = 16  # every view starts 64-byte aligned relative to its row, whatever the group size


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


class FlatParameters(nn.Module):
    """Named per-run parameters whose storage (and gradients) are slices of one [G, P] buffer.

    Each parameter is an ordinary leaf, so backward is as cheap as with separate tensors; its data and
    its ``.grad`` are views into ``flat`` and ``flat.grad`` (autograd accumulates into an existing
    gradient in place), so one fused optimizer step on ``flat`` updates every parameter of every run.
    """

    def __init__(self, tensors: dict[str, torch.Tensor]):
        super().__init__()
        G = next(iter(tensors.values())).shape[0]
        offsets, offset = {}, 0
        for name, t in tensors.items():
            offsets[name] = offset
            offset += math.ceil(t[0].numel() / SLOT_ALIGN) * SLOT_ALIGN
        P = math.ceil(offset / ROW_MULTIPLE) * ROW_MULTIPLE
        self.flat = nn.Parameter(torch.zeros(G, P))
        self.flat.grad = torch.zeros(G, P)
        self.views: dict[str, nn.Parameter] = {}
        for name, t in tensors.items():
            lo, hi = offsets[name], offsets[name] + t[0].numel()
            with torch.no_grad():
                self.flat[:, lo:hi] = t.reshape(G, -1)
            param = nn.Parameter(self.flat.data[:, lo:hi].view(t.shape))
            param.grad = self.flat.grad[:, lo:hi].view(t.shape)
            self.views[name] = param
            self.register_parameter(name.replace(".", "_"), param)

    def zero_grad_(self) -> None:
        self.flat.grad.zero_()

    def run_state(self, g: int) -> dict[str, torch.Tensor]:
        return {name: v[g].detach().clone() for name, v in self.views.items()}


def mlp_weights(prefix: str, sizes: list[int], out_scale: float, init: str,
                gens: list[torch.Generator]) -> dict[str, torch.Tensor]:
    out = {}
    n_layers = len(sizes) - 1
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        # Hidden layers: ppo1 normc(1.0), ppo2 orthogonal(sqrt 2); the output layer gets out_scale.
        scale = out_scale if i == n_layers - 1 else (1.0 if init == "normc" else math.sqrt(2))
        out[f"{prefix}.w{i}"] = torch.stack([init_weight(init, fan_in, fan_out, scale, g) for g in gens])
        out[f"{prefix}.b{i}"] = torch.zeros(len(gens), 1, fan_out)
    return out


def mlp_forward(layers: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor) -> torch.Tensor:
    """tanh MLP of G runs: [G, B, in] -> [G, B, out]."""
    last = len(layers) - 1
    for i, (w, b) in enumerate(layers):
        if w.shape[-1] == 1:
            # A one-column product goes through MKL's gemv when G = 1 and gemm otherwise, which round
            # differently; a multiply-and-sum keeps a run's value bit-identical for any group size.
            x = (x * w.transpose(1, 2)).sum(-1, keepdim=True) + b
        else:
            x = torch.baddbmm(b, x, w)
        if i < last:
            x = torch.tanh(x)
    return x
