"""The categorical policy of the Atari runs: hand-checked values and torch.distributions as a second opinion."""
import math

import pytest
import torch

from ppo.nn.categorical import Categorical


def test_log_prob_entropy_kl_by_hand():
    # π = (1/2, 1/4, 1/4) from logits log(2), 0, 0 (plus any constant); π' = (1/4, 1/2, 1/4)
    p = Categorical(torch.tensor([[[math.log(2.0), 0.0, 0.0]]]) + 3.0)
    q = Categorical(torch.tensor([[[0.0, math.log(2.0), 0.0]]]))
    assert p.log_prob(torch.tensor([[[1.0]]])).item() == pytest.approx(math.log(0.25))
    assert p.log_prob(torch.tensor([[0]])).item() == pytest.approx(math.log(0.5))
    # H = −(½ log ½ + 2·¼ log ¼) = 1.5 log 2
    assert p.entropy().item() == pytest.approx(1.5 * math.log(2))
    # KL[p, q] = ½ log(½/¼) + ¼ log(¼/½) + ¼ log(1) = ¼ log 2
    assert p.kl(q).item() == pytest.approx(0.25 * math.log(2))
    assert p.kl(p).item() == pytest.approx(0.0, abs=1e-7)


def test_matches_torch_distributions():
    gen = torch.Generator().manual_seed(0)
    logits, other = torch.randn(3, 7, 5, generator=gen), torch.randn(3, 7, 5, generator=gen)
    actions = torch.randint(0, 5, (3, 7), generator=gen)
    ours, theirs = Categorical(logits), torch.distributions.Categorical(logits=logits)
    reference = torch.distributions.Categorical(logits=other)
    torch.testing.assert_close(ours.log_prob(actions.float()), theirs.log_prob(actions))
    torch.testing.assert_close(ours.entropy(), theirs.entropy())
    torch.testing.assert_close(ours.kl(Categorical(other)), torch.distributions.kl_divergence(theirs, reference))


def test_inverse_cdf_sampling_by_hand():
    # cdf of (0.5, 0.25, 0.25) is (0.5, 0.75, 1): u < 0.5 -> 0, 0.5 <= u < 0.75 -> 1, else 2
    p = Categorical(torch.log(torch.tensor([0.5, 0.25, 0.25])).expand(1, 6, 3))
    u = torch.tensor([[0.0, 0.49, 0.5, 0.74, 0.75, 0.999999]])
    assert p.sample(u).tolist() == [[0, 0, 1, 1, 2, 2]]


def test_sampling_frequencies():
    probs = torch.tensor([0.1, 0.6, 0.3])
    n = 200_000
    p = Categorical(torch.log(probs).expand(1, n, 3))
    counts = torch.bincount(p.sample(torch.rand(1, n, generator=torch.Generator().manual_seed(1))).view(-1), minlength=3)
    # 5 standard errors of a binomial proportion: fails only if sampling is wrong
    assert torch.all((counts / n - probs).abs() < 5 * (probs * (1 - probs) / n).sqrt())


def test_like_and_frozen():
    logits = torch.randn(2, 4, 3, requires_grad=True)
    p = Categorical(logits)
    old = p.frozen()
    assert not old.params.requires_grad
    torch.testing.assert_close(old.like(old.params).log_prob(torch.zeros(2, 4)), p.log_prob(torch.zeros(2, 4)))


def test_of_log_probs_keeps_another_policys_log_probabilities_bit_for_bit():
    policy = Categorical(torch.randn(2, 50, 18, generator=torch.Generator().manual_seed(0)) * 3)
    kept = Categorical.of_log_probs(policy.logits[:, 10:30])
    assert torch.equal(kept.logits, policy.logits[:, 10:30])
    renormalized = Categorical(policy.logits[:, 10:30])  # what the constructor would give: moved by rounding
    torch.testing.assert_close(renormalized.logits, kept.logits, rtol=0, atol=1e-6)
