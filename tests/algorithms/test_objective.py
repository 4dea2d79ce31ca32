"""Hand-checked values for the surrogate family, the KL penalty, the β rule and the Gaussian policy."""
import math

import pytest
import torch
from torch.distributions import Normal, kl_divergence

from ppo.algorithms.objective import adapt_beta, objective_terms, surrogate
from ppo.nn import gaussian

EPS = torch.tensor(0.2)


@pytest.mark.parametrize(
    "ratio, adv, expected, grad",
    [
        (1.5, 2.0, 2.4, 0.0),    # A > 0, r above 1+ε: clipped at (1.2)(2); no gradient
        (0.5, 2.0, 1.0, 2.0),    # A > 0, r below 1-ε: min picks the unclipped r·A (pessimistic)
        (1.5, -2.0, -3.0, -2.0),  # A < 0, r above 1+ε: min picks the unclipped r·A
        (0.5, -2.0, -1.6, 0.0),  # A < 0, r below 1-ε: clipped at (0.8)(-2); no gradient
        (1.1, 2.0, 2.2, 2.0),    # inside the trust region: plain r·A
    ],
)
def test_clipped_surrogate_four_cases(ratio, adv, expected, grad):
    r = torch.tensor(ratio, requires_grad=True)
    value = surrogate(r, torch.tensor(adv), EPS)
    value.backward()
    assert value.item() == pytest.approx(expected)
    assert r.grad.item() == pytest.approx(grad)


def test_infinite_epsilon_is_the_unclipped_objective():
    r = torch.tensor([0.1, 1.0, 7.0])
    a = torch.tensor([-1.0, 2.0, 3.0])
    assert torch.equal(surrogate(r, a, torch.tensor(math.inf)), r * a)


def test_objective_terms_kl_penalty_and_entropy_bonus():
    # surrogate mean (1+3)/2 = 2; penalty β·mean(kl) = 2·0.2 = 0.4; bonus c2·mean(H) = 0.5·1 = 0.5
    ratio = torch.ones(1, 2)
    loss, surr = objective_terms(ratio, torch.tensor([[1.0, 3.0]]), torch.tensor([[0.1, 0.3]]),
                                 torch.ones(1, 2), torch.tensor([[math.inf]]), torch.tensor([[2.0]]),
                                 torch.tensor([[0.5]]))
    assert surr.item() == pytest.approx(2.0)
    assert loss.item() == pytest.approx(-(2.0 - 0.4 + 0.5))


def test_objective_terms_are_per_run():
    # Two runs with different ε and β in one call equal two separate calls.
    ratio = torch.tensor([[1.5, 0.7], [1.5, 0.7]])
    adv = torch.tensor([[1.0, -1.0], [1.0, -1.0]])
    kl = torch.tensor([[0.1, 0.1], [0.2, 0.2]])
    ent = torch.zeros(2, 2)
    eps, beta, c2 = torch.tensor([[0.2], [math.inf]]), torch.tensor([[0.0], [3.0]]), torch.zeros(2, 1)
    both, _ = objective_terms(ratio, adv, kl, ent, eps, beta, c2)
    for g in range(2):
        alone, _ = objective_terms(ratio[g:g + 1], adv[g:g + 1], kl[g:g + 1], ent[g:g + 1],
                                   eps[g:g + 1], beta[g:g + 1], c2[g:g + 1])
        assert both[g].item() == alone.item()
    # run 0: mean(min(1.5, 1.2)·1, min(-0.7, -0.8)) = (1.2 - 0.8)/2 = 0.2 -> loss -0.2
    assert both[0].item() == pytest.approx(-0.2)
    # run 1: mean(1.5, -0.7) - 3·0.2 = 0.4 - 0.6 -> loss 0.2
    assert both[1].item() == pytest.approx(0.2)


def test_adaptive_beta_rule():
    target = torch.full((5,), 0.01)
    kl = torch.tensor([0.005, 0.02, 0.01, 0.01 / 1.5, 0.015])
    beta = torch.full((5,), 1.0)
    # below d/1.5 halves; above 1.5·d doubles; in between (and at both boundaries) unchanged
    assert adapt_beta(beta, kl, target).tolist() == [0.5, 2.0, 1.0, 1.0, 1.0]


def test_fixed_beta_never_adapts():
    beta = torch.tensor([3.0, 3.0])
    assert adapt_beta(beta, torch.tensor([1e-9, 10.0]), torch.tensor([math.nan, math.nan])).tolist() == [3.0, 3.0]


def test_gaussian_kl_hand_value():
    # KL(N(0,1) || N(1,2)) = ln 2 + (1 + 1)/(2·4) − 1/2
    kl = kl_divergence(Normal(torch.tensor(0.0), torch.tensor(1.0)), Normal(torch.tensor(1.0), torch.tensor(2.0)))
    assert kl.item() == pytest.approx(math.log(2) + 0.25 - 0.5)


def test_policy_log_prob_and_entropy_hand_values():
    mean = torch.tensor([[[0.0, 1.0]]])
    log_std = torch.tensor([[[0.0, math.log(2.0)]]])  # std = (1, 2)
    # log N(1; 0, 1) + log N(1; 1, 2) = (−1/2 − ½ln2π) + (−ln 2 − ½ln2π)
    lp = gaussian.log_prob(torch.tensor([[[1.0, 1.0]]]), mean, log_std)
    assert lp.item() == pytest.approx(-0.5 - math.log(2) - math.log(2 * math.pi), abs=1e-6)
    # H = Σ ½ ln(2πe σ²) = ln(2πe)/2·2 + ln 2
    assert gaussian.entropy(log_std).item() == pytest.approx(math.log(2 * math.pi * math.e) + math.log(2), abs=1e-6)
    # KL(N(0,1) || N(1,2)) in one dim, plus 0 in a dim where old and new agree
    kl = gaussian.kl(torch.tensor([[[0.0, 5.0]]]), torch.tensor([[[0.0, 0.3]]]),
                     torch.tensor([[[1.0, 5.0]]]), torch.tensor([[[math.log(2.0), 0.3]]]))
    assert kl.item() == pytest.approx(math.log(2) + 0.25 - 0.5, abs=1e-6)


def test_closed_forms_match_torch_distributions():
    g = torch.Generator().manual_seed(0)
    G, B, A = 3, 7, 4
    mean, mean_old, act = (torch.randn(G, B, A, generator=g, dtype=torch.float64) for _ in range(3))
    log_std, log_std_old = (0.5 * torch.randn(G, 1, A, generator=g, dtype=torch.float64) for _ in range(2))
    new = Normal(mean, log_std.exp().expand_as(mean))
    old = Normal(mean_old, log_std_old.exp().expand_as(mean_old))
    torch.testing.assert_close(gaussian.log_prob(act, mean, log_std), new.log_prob(act).sum(-1))
    torch.testing.assert_close(gaussian.entropy(log_std).expand(G, B), new.entropy().sum(-1))
    torch.testing.assert_close(gaussian.kl(mean_old, log_std_old, mean, log_std), kl_divergence(old, new).sum(-1))
