"""GAE against hand values and against a plain per-actor reference loop."""
import numpy as np
import pytest

from ppo.algorithms.gae import gae


def reference_gae(rewards, values, next_values, terminated, episode_end, gamma, lam):
    """Direct transcription of the definition, one actor and one step at a time."""
    T, N = rewards.shape
    adv = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            total, discount = 0.0, 1.0
            for k in range(t, T):
                delta = rewards[k, n] + gamma * (1 - terminated[k, n]) * next_values[k, n] - values[k, n]
                total += discount * delta
                if episode_end[k, n]:
                    break
                discount *= gamma * lam
            adv[t, n] = total
    return adv


def column(*xs):
    return np.array(xs, dtype=float).reshape(-1, 1)


def test_hand_values_without_episode_end():
    # γ = λ = 0.5, r = 1, V = 0: δ = 1; A2 = 1, A1 = 1 + 0.25·1, A0 = 1 + 0.25·1.25
    adv, ret = gae(column(1, 1, 1), column(0, 0, 0), column(0, 0, 0), column(0, 0, 0), column(0, 0, 0), 0.5, 0.5)
    assert adv.ravel().tolist() == [1.3125, 1.25, 1.0]
    assert ret.ravel().tolist() == [1.3125, 1.25, 1.0]


def test_hand_values_termination_cuts_bootstrap_and_chain():
    # terminated at t=1: A1 = δ1 = 1 − 0 (next value 5 ignored); A0 = 1 + 0.5·0.5 − 0... with V0 = 0
    adv, _ = gae(column(1, 1, 1), column(0, 0, 0), column(0, 5, 0), column(0, 1, 0), column(0, 1, 0), 0.5, 0.5)
    assert adv.ravel().tolist() == [1.25, 1.0, 1.0]


def test_hand_values_truncation_bootstraps_but_cuts_chain():
    # truncated at t=1 with V(final obs) = 2: δ1 = 1 + 0.5·2 = 2, the chain stops there; A0 = 1 + 0.25·2
    adv, _ = gae(column(1, 1, 1), column(0, 0, 0), column(0, 2, 0), column(0, 0, 0), column(0, 1, 0), 0.5, 0.5)
    assert adv.ravel().tolist() == [1.5, 2.0, 1.0]


def test_matches_reference_loop_with_random_ends_and_truncations():
    rng = np.random.default_rng(0)
    T, N = 40, 5
    rewards, values, next_values = rng.normal(size=(T, N)), rng.normal(size=(T, N)), rng.normal(size=(T, N))
    episode_end = (rng.random((T, N)) < 0.15).astype(float)
    terminated = episode_end * (rng.random((T, N)) < 0.5)  # half the ends are time-limit truncations
    adv, ret = gae(rewards, values, next_values, terminated, episode_end, 0.99, 0.95)
    expected = reference_gae(rewards, values, next_values, terminated, episode_end, 0.99, 0.95)
    np.testing.assert_allclose(adv, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ret, expected + values, rtol=1e-12)
    assert episode_end.sum() > 5 and terminated.sum() > 2  # the case is really exercised


@pytest.mark.parametrize("lam", [0.0, 1.0])
def test_lambda_limits(lam):
    # λ = 0: one-step TD error; λ = 1 with γ = 1 and V = 0: the sum of future rewards.
    r = column(1, 2, 3)
    adv, _ = gae(r, column(0, 0, 0), column(0, 0, 0), column(0, 0, 0), column(0, 0, 0), 1.0, lam)
    assert adv.ravel().tolist() == ([1, 2, 3] if lam == 0 else [6, 5, 3])
