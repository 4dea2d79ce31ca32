"""The batched parameter store: layout that keeps runs bit-identical, gradients that land in one buffer."""
import torch

from ppo.nn.actor_critic import GaussianActorCritic
from ppo.nn.optim import BatchedAdam, PerRunAdam, per_run_grad_norm_clip
from ppo.nn.parameters import ROW_MULTIPLE, SLOT_ALIGN


def agent(G=3):
    return GaussianActorCritic(11, 3, (64, 64), "normc", 0.0, [torch.Generator().manual_seed(i) for i in range(G)])


def test_layout_rows_padded_and_views_aligned():
    a = agent()
    flat = a.params.flat
    assert flat.shape[1] % ROW_MULTIPLE == 0
    for view in a.params.views.values():
        assert (view.data_ptr() - flat.data_ptr()) // 4 % SLOT_ALIGN == 0
        assert view.grad.data_ptr() >= flat.grad.data_ptr()  # gradients are slices of flat.grad


def test_gradients_accumulate_into_flat_and_one_step_updates_every_view():
    a = agent()
    optimizer = BatchedAdam(a.params.flat, lr=1e-2, eps=1e-5)
    x = torch.randn(3, 5, 11)
    w_before = a.policy_layers[0][0].detach().clone()
    (a.policy_mean(x).sum() + a.value_of(x).sum() + a.log_std.sum()).backward()
    for name, view in a.params.views.items():
        assert view.grad.abs().sum() > 0, name
    optimizer.step()
    assert not torch.equal(a.policy_layers[0][0], w_before)
    a.params.zero_grad_()
    assert a.params.flat.grad.abs().sum() == 0 and a.log_std.grad.abs().sum() == 0


def test_runs_are_initialised_from_their_own_generators():
    two, one = agent(2), GaussianActorCritic(11, 3, (64, 64), "normc", 0.0, [torch.Generator().manual_seed(1)])
    assert torch.equal(two.policy_layers[0][0][1], one.policy_layers[0][0][0])
    # normc: every output unit's incoming weight vector has norm 1 (hidden) / 0.01 (policy output)
    norms = two.policy_layers[0][0].square().sum(1).sqrt()
    torch.testing.assert_close(norms, torch.ones_like(norms))
    out = two.policy_layers[-1][0].square().sum(1).sqrt()
    torch.testing.assert_close(out, torch.full_like(out, 0.01))


def test_per_run_gradient_clipping():
    a = agent(2)
    a.params.flat.grad[0] = 3.0  # run 0: large gradient; run 1: tiny
    a.params.flat.grad[1] = 1e-4
    norms = per_run_grad_norm_clip(a.params.flat, max_norm=1.0)
    clipped = a.params.flat.grad.square().sum(1).sqrt()
    assert abs(clipped[0].item() - 1.0) < 1e-4  # scaled down to the max norm
    assert abs(clipped[1].item() - norms[1].item()) < 1e-9  # left alone


def test_per_run_adam_equals_batched_adam_and_a_skipped_run_stays_exactly_as_it_was():
    a, b = agent(4), agent(4)
    batched, per_run = BatchedAdam(a.params.flat, lr=1e-3, eps=1e-5), PerRunAdam(b.params.flat, lr=1e-3, eps=1e-5)
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):  # every run active: the same bits as torch's fused Adam over the whole buffer
        grad = torch.randn(a.params.flat.shape, generator=gen)
        a.params.flat.grad.copy_(grad)
        b.params.flat.grad.copy_(grad)
        batched.step()
        per_run.step()
    assert torch.equal(a.params.flat, b.params.flat)
    assert torch.equal(batched.state[a.params.flat]["exp_avg_sq"], per_run.exp_avg_sq)
    # Runs 1 and 3 skip a step with a nonzero gradient: parameters, moments and step count untouched. (torch's
    # Adam with a zero gradient would still move them: the moments decay and the step count grows.)
    before = {k: v.clone() for k, v in per_run.state_dict().items() if k != "lr"}
    params = b.params.flat.detach().clone()
    b.params.flat.grad.copy_(torch.randn(b.params.flat.shape, generator=gen))
    per_run.step(torch.tensor([True, False, True, False]))
    assert per_run.steps.tolist() == [6, 5, 6, 5]
    for run in (1, 3):
        assert torch.equal(b.params.flat[run], params[run])
        assert torch.equal(per_run.exp_avg[run], before["exp_avg"][run])
        assert torch.equal(per_run.exp_avg_sq[run], before["exp_avg_sq"][run])
    assert not torch.equal(b.params.flat[0], params[0])
    # A run resuming after a skip uses its own step count for the bias corrections: as if alone.
    alone = agent(4)
    with torch.no_grad():
        alone.params.flat.copy_(params)
    single = PerRunAdam(alone.params.flat, lr=1e-3, eps=1e-5)
    single.load_state_dict({"lr": 1e-3, **before})
    alone.params.flat.grad.copy_(b.params.flat.grad)
    single.step(torch.tensor([False, True, False, False]))
    per_run.step(torch.tensor([False, True, False, False]))
    assert torch.equal(alone.params.flat[1], b.params.flat[1]) and per_run.steps[1] == 6
