"""Adam for a group of runs stepping together, RMSProp as TensorFlow 1 ran it, and per-run gradient clipping."""
from __future__ import annotations

import torch
from torch import nn
from torch.optim.adam import adam as adam_step

from .parameters import ROW_MULTIPLE


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


class TFStyleRMSprop(torch.optim.Optimizer):
    """RMSProp as TensorFlow 1's ``tf.train.RMSPropOptimizer`` (momentum 0) computes it, the optimizer of openai/baselines'
    A2C and ACER on Atari: the mean square starts at 1, and ε sits inside the square root,

        ms ← ms + (1 − α)·(g² − ms);    θ ← θ − lr · g / sqrt(ms + ε)

    (TF's ``ApplyRMSProp`` kernel; the slot ``rms`` is created by ``ones_initializer``). torch.optim.RMSprop starts
    ms at 0 and divides by sqrt(ms) + ε. The two differ in more than the last bits: torch's first steps, with
    ms ≈ (1 − α)·g², are about 10·lr·sign(g) where TF's, with ms ≈ 1, are about lr·g (a warm-up of about
    1/(1 − α) steps); later, where g² is not far above ε, TF's denominator sqrt(g² + ε) is the larger. On A2C's Atari
    network (benchmarks/a2c_rmsprop_steps.py) torch's steps were 152× TF's over updates 2–251, 1.7–2.1× after 1,000.

    The state is the mean square per element (``square_avg``, the name torch's RMSprop uses, made at construction:
    a checkpoint always holds it). Elementwise, so one [G, P] buffer is G independent optimizers."""

    def __init__(self, params, lr: float, alpha: float, eps: float):
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps})
        for group in self.param_groups:
            for param in group["params"]:
                self.state[param]["square_avg"] = torch.ones_like(param, memory_format=torch.preserve_format)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                square_avg = self.state[param]["square_avg"]
                square_avg.add_(param.grad.square().sub_(square_avg), alpha=1 - group["alpha"])
                param.addcdiv_(param.grad, square_avg.add(group["eps"]).sqrt_(), value=-group["lr"])
        return loss


def make_rmsprop(flat: nn.Parameter, kind: str, lr: float, alpha: float, eps: float) -> torch.optim.Optimizer:
    """RMSprop over the [G, P] parameter, elementwise so G independent ones: ``rmsprop`` torch's (single-tensor),
    ``rmsprop_tf`` :class:`TFStyleRMSprop`."""
    if kind == "rmsprop_tf":
        return TFStyleRMSprop([flat], lr=lr, alpha=alpha, eps=eps)
    if kind == "rmsprop":
        return torch.optim.RMSprop([flat], lr=lr, alpha=alpha, eps=eps, foreach=False)
    raise ValueError(f"not an RMSprop: {kind!r}")


class PerRunAdam:
    """Adam over the [G, P] parameter with a step count per run, so that some runs can skip steps: ``step(active)``
    leaves an inactive run's parameters, moments and step count exactly as they were (PPO's ``target_kl``).

    torch's Adam, even with a zero gradient, would still decay the moments, move the parameters and count the
    step, so skipping has to be done here: each active run's row goes through torch's fused Adam kernel as a
    tensor of its own, with that run's step count for the bias corrections. The kernel's arithmetic is the same
    as BatchedAdam's over the whole buffer (rows of a multiple of 64 floats), so with every run active the two
    give the same bits (tests/nn/test_batched.py).
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
