"""ppo.nn.optim.TFStyleRMSprop: TensorFlow 1's RMSProp (baselines' A2C and ACER), checked by hand."""
import copy
import math

import pytest
import torch

from ppo.nn.optim import TFStyleRMSprop, make_rmsprop


def test_two_steps_by_hand():
    # lr 0.1, α 0.9, ε 0.01; the mean square starts at 1.
    # step 1, g = 2: ms = 1 + 0.1·(4 − 1) = 1.3;      θ = 1 − 0.1·2 / sqrt(1.31)
    # step 2, g = −1: ms = 1.3 + 0.1·(1 − 1.3) = 1.27; θ −= 0.1·(−1) / sqrt(1.28)
    theta = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    opt = TFStyleRMSprop([theta], lr=0.1, alpha=0.9, eps=0.01)
    assert opt.state[theta]["square_avg"].tolist() == [1.0]  # made at construction: a checkpoint always holds it
    theta.grad = torch.tensor([2.0], dtype=torch.float64)
    opt.step()
    assert opt.state[theta]["square_avg"].item() == pytest.approx(1.3, abs=1e-15)
    assert theta.item() == pytest.approx(1 - 0.2 / math.sqrt(1.31), abs=1e-15)
    theta.grad = torch.tensor([-1.0], dtype=torch.float64)
    opt.step()
    assert opt.state[theta]["square_avg"].item() == pytest.approx(1.27, abs=1e-15)
    assert theta.item() == pytest.approx(1 - 0.2 / math.sqrt(1.31) + 0.1 / math.sqrt(1.28), abs=1e-15)


def test_tiny_gradients_take_tiny_steps_unlike_torch():
    """The reason it exists: at baselines' ε = 1e-5 and clipped gradients of ~6e-4 per element, TF's step is
    lr·g/sqrt(ms + ε) ≈ lr·g (ms ≈ 1 at first, then ≈ g² ≪ ε: lr·g/sqrt(ε)); torch's RMSprop steps ≈ 10·lr·sign(g)
    at first (ms = 0.01·g²) and ≈ lr·sign(g) later."""
    g, lr = 6e-4, 7e-4
    ours, theirs = (torch.nn.Parameter(torch.zeros(1, dtype=torch.float64)) for _ in range(2))
    tf_like = TFStyleRMSprop([ours], lr=lr, alpha=0.99, eps=1e-5)
    torch_rms = torch.optim.RMSprop([theirs], lr=lr, alpha=0.99, eps=1e-5)
    for p, opt in ((ours, tf_like), (theirs, torch_rms)):
        p.grad = torch.tensor([g], dtype=torch.float64)
        opt.step()
    assert -ours.item() == pytest.approx(lr * g / math.sqrt(1 + 0.01 * (g * g - 1) + 1e-5), rel=1e-12)
    assert -theirs.item() == pytest.approx(lr * g / (math.sqrt(0.01 * g * g) + 1e-5), rel=1e-12)
    assert -theirs.item() > 10_000 * -ours.item()
    for _ in range(2000):  # long after the start: ms ≈ g² in both
        for p, opt in ((ours, tf_like), (theirs, torch_rms)):
            before = p.item()
            p.grad = torch.tensor([g], dtype=torch.float64)
            opt.step()
            p.last_step = before - p.item()
    assert ours.last_step == pytest.approx(lr * g / math.sqrt(g * g + 1e-5), rel=1e-3)  # ≈ lr·g/sqrt(ε)
    assert theirs.last_step == pytest.approx(lr * g / (g + 1e-5), rel=1e-3)  # ≈ lr
    assert theirs.last_step / ours.last_step == pytest.approx(math.sqrt(g * g + 1e-5) / (g + 1e-5), rel=1e-3)  # ≈ 5


def test_rows_are_independent_optimizers_and_survive_a_checkpoint():
    """One [G, P] buffer: each row steps as it would alone; state_dict round-trips to the same next step."""
    torch.manual_seed(0)
    grads = [torch.randn(3, 8) for _ in range(4)]
    flat = torch.nn.Parameter(torch.randn(3, 8))
    alone = [torch.nn.Parameter(flat.detach()[g].clone()) for g in range(3)]
    opt = make_rmsprop(flat, "rmsprop_tf", 1e-2, 0.99, 1e-5)
    opts = [TFStyleRMSprop([p], lr=1e-2, alpha=0.99, eps=1e-5) for p in alone]
    for grad in grads[:3]:
        flat.grad = grad.clone()
        opt.step()
        for g in range(3):
            alone[g].grad = grad[g].clone()
            opts[g].step()
    assert all(torch.equal(flat.detach()[g], alone[g].detach()) for g in range(3))
    resumed_flat = torch.nn.Parameter(flat.detach().clone())
    resumed = make_rmsprop(resumed_flat, "rmsprop_tf", 1e-2, 0.99, 1e-5)
    resumed.load_state_dict(copy.deepcopy(opt.state_dict()))  # as through a checkpoint file: no tensor shared
    for p, o in ((flat, opt), (resumed_flat, resumed)):
        p.grad = grads[3].clone()
        o.step()
    assert torch.equal(flat.detach(), resumed_flat.detach())


def test_make_rmsprop_names_the_two_kinds():
    flat = torch.nn.Parameter(torch.zeros(1, 64))
    assert type(make_rmsprop(flat, "rmsprop", 1e-3, 0.99, 1e-5)) is torch.optim.RMSprop
    assert type(make_rmsprop(flat, "rmsprop_tf", 1e-3, 0.99, 1e-5)) is TFStyleRMSprop
    with pytest.raises(ValueError, match="not an RMSprop: 'adam'"):
        make_rmsprop(flat, "adam", 1e-3, 0.99, 1e-5)
