"""Networks of many independent runs held as one batched parameter tensor.

All parameters of run ``g`` live in row ``g`` of one ``[G, P]`` tensor; layers are views into it. A
forward pass is one ``baddbmm`` per layer for all runs. Every operation acts on each run's slice
separately, so the gradient of the *sum* of the runs' losses with respect to row ``g`` is exactly run
``g``'s own gradient, and one fused Adam step over the whole tensor is G independent Adam steps.

Bit-identity across group sizes (tests/test_group_training.py) needs three precautions, each below:
rows padded to a multiple of 64 floats, slots aligned to 16 floats, one-column layers without gemv.
"""
from __future__ import annotations

import math
import warnings

import torch
from torch import nn
from torch.optim.adam import adam as adam_step

from .categorical import Categorical
from .gaussian import DiagGaussian

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


class GaussianActorCritic(nn.Module):
    """Separate policy and value MLPs (paper Sec. 6.1) and a state-independent log-std per run."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...], init: str,
                 log_std_init: float, gens: list[torch.Generator]):
        super().__init__()
        sizes = [obs_dim, *hidden]
        # ppo1: policy mean output normc(0.01), value output normc(1.0); ppo2/CleanRL: 0.01 and 1.0 too.
        tensors = {**mlp_weights("policy", [*sizes, act_dim], 0.01, init, gens),
                   **mlp_weights("value", [*sizes, 1], 1.0, init, gens),
                   "log_std": torch.full((len(gens), 1, act_dim), float(log_std_init))}
        self.params = FlatParameters(tensors)
        v = self.params.views
        n = len(sizes)
        self.policy_layers = [(v[f"policy.w{i}"], v[f"policy.b{i}"]) for i in range(n)]
        self.value_layers = [(v[f"value.w{i}"], v[f"value.b{i}"]) for i in range(n)]
        self.log_std = v["log_std"]  # [G, 1, act_dim]

    def policy_mean(self, obs: torch.Tensor) -> torch.Tensor:
        return mlp_forward(self.policy_layers, obs)

    def evaluate(self, obs: torch.Tensor) -> tuple[DiagGaussian, torch.Tensor]:
        """(π(.|s), V(s)) of normalized observations [G, B, obs_dim]."""
        return self.policy(obs), self.value_of(obs)

    def policy(self, obs: torch.Tensor) -> DiagGaussian:
        """π(.|s) alone: the value network is separate, so it need not run."""
        return DiagGaussian(self.policy_mean(obs), self.log_std)

    def value_of(self, obs: torch.Tensor) -> torch.Tensor:
        return mlp_forward(self.value_layers, obs).squeeze(-1)


class CategoricalActorCritic(nn.Module):
    """The same separate policy and value MLPs for a discrete action set (CartPole, Acrobot, LunarLander): the
    policy's outputs are the logits of a categorical distribution, its output layer initialised at scale 0.01
    like the Gaussian's mean, so the first policy is near uniform."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: tuple[int, ...], init: str,
                 gens: list[torch.Generator]):
        super().__init__()
        sizes = [obs_dim, *hidden]
        tensors = {**mlp_weights("policy", [*sizes, num_actions], 0.01, init, gens),
                   **mlp_weights("value", [*sizes, 1], 1.0, init, gens)}
        self.params = FlatParameters(tensors)
        v = self.params.views
        n = len(sizes)
        self.policy_layers = [(v[f"policy.w{i}"], v[f"policy.b{i}"]) for i in range(n)]
        self.value_layers = [(v[f"value.w{i}"], v[f"value.b{i}"]) for i in range(n)]

    def evaluate(self, obs: torch.Tensor) -> tuple[Categorical, torch.Tensor]:
        """(π(.|s), V(s)) of normalized observations [G, B, obs_dim]."""
        return self.policy(obs), self.value_of(obs)

    def policy(self, obs: torch.Tensor) -> Categorical:
        return Categorical(mlp_forward(self.policy_layers, obs))

    def value_of(self, obs: torch.Tensor) -> torch.Tensor:
        return mlp_forward(self.value_layers, obs).squeeze(-1)


class BatchedAdam(torch.optim.Adam):
    """torch's fused Adam over the [G, P] parameter: bit-identical per run because P is a multiple of 64."""

    def __init__(self, flat: nn.Parameter, lr: float, eps: float):
        assert flat.shape[1] % ROW_MULTIPLE == 0
        super().__init__([flat], lr=lr, eps=eps, fused=True)

    def set_lr(self, lr: float) -> None:
        for group in self.param_groups:
            group["lr"] = lr

    @torch.no_grad()
    def step(self, closure=None):
        """The call torch's ``Adam.step`` makes for one fused CPU parameter, made directly: the step count, then
        ``_fused_adam_`` on the same tensors with the same arguments, so the same bits. Torch's Python around
        it (grouping by device, lazy state, hooks) cost as much as the kernel on a group's buffer, once per
        minibatch. The first step, which creates the state, and anything unusual go through torch's own."""
        group = self.param_groups[0]
        flat = group["params"][0]
        state = self.state.get(flat)
        if (closure is not None or not state or flat.grad is None or len(self.param_groups) > 1
                or len(group["params"]) > 1 or not group["fused"] or group["amsgrad"] or group["decoupled_weight_decay"]
                or getattr(self, "grad_scale", None) is not None or getattr(self, "found_inf", None) is not None):
            return super().step(closure)
        step = state["step"]
        torch._foreach_add_([step], 1)
        beta1, beta2 = group["betas"]
        torch._fused_adam_([flat], [flat.grad], [state["exp_avg"]], [state["exp_avg_sq"]], [], [step],
                           amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                           weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                           grad_scale=None, found_inf=None)
        return None


class PerRunAdam:
    """Adam over the [G, P] parameter with a step count per run, so that some runs can skip steps: ``step(active)``
    leaves an inactive run's parameters, moments and step count exactly as they were (PPO's ``target_kl``).

    torch's Adam, even with a zero gradient, would still decay the moments, move the parameters and count the
    step, so skipping has to be done here: each active run's row goes through torch's fused Adam kernel as a
    tensor of its own, with that run's step count for the bias corrections. The kernel's arithmetic is the same
    as BatchedAdam's over the whole buffer (rows of a multiple of 64 floats), so with every run active the two
    give the same bits (tests/test_batched.py).
    """

    def __init__(self, flat: nn.Parameter, lr: float, eps: float, betas: tuple[float, float] = (0.9, 0.999)):
        assert flat.shape[1] % ROW_MULTIPLE == 0
        self.flat, self.lr, self.eps, self.betas = flat, lr, eps, betas
        self.exp_avg = torch.zeros_like(flat, requires_grad=False)
        self.exp_avg_sq = torch.zeros_like(flat, requires_grad=False)
        self.steps = torch.zeros(flat.shape[0])  # Adam steps taken by each run

    def set_lr(self, lr: float) -> None:
        self.lr = lr

    def step(self, active: torch.Tensor | None = None) -> None:
        """One Adam step of the runs where ``active`` ([G] bool; default all) is true, from ``flat.grad``."""
        rows = range(self.flat.shape[0]) if active is None else active.nonzero().flatten().tolist()
        if not rows:
            return
        params, grads = self.flat.detach(), self.flat.grad
        step_counts = [self.steps[g:g + 1] for g in rows]  # views: the kernel's increment lands in self.steps
        adam_step([params[g] for g in rows], [grads[g] for g in rows], [self.exp_avg[g] for g in rows],
                  [self.exp_avg_sq[g] for g in rows], [], step_counts, fused=True, amsgrad=False, beta1=self.betas[0],
                  beta2=self.betas[1], lr=self.lr, weight_decay=0.0, eps=self.eps, maximize=False)

    def state_dict(self) -> dict:
        return {"lr": self.lr, "steps": self.steps.clone(), "exp_avg": self.exp_avg.clone(),
                "exp_avg_sq": self.exp_avg_sq.clone()}

    def load_state_dict(self, state: dict) -> None:
        if state["exp_avg"].shape != self.exp_avg.shape or state["steps"].shape != self.steps.shape:
            raise ValueError(f"optimizer state of shape {tuple(state['exp_avg'].shape)} for a buffer of "
                             f"{tuple(self.exp_avg.shape)}")
        self.lr = state["lr"]
        self.steps.copy_(state["steps"])
        self.exp_avg.copy_(state["exp_avg"])
        self.exp_avg_sq.copy_(state["exp_avg_sq"])


def per_run_grad_norm_clip(flat: nn.Parameter, max_norm: float) -> torch.Tensor:
    """Clip each run's global gradient norm separately; returns the pre-clip norms, shape [G]."""
    norms = flat.grad.square().sum(1).sqrt()
    flat.grad.mul_((max_norm / (norms + 1e-6)).clamp(max=1.0).unsqueeze(1))
    return norms
