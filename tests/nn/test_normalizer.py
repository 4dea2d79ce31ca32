import math

import numpy as np
import pytest

from ppo.nn.normalizer import ObsNormalizer


def test_running_stats_hand_values_and_per_run_independence():
    norm = ObsNormalizer(n_runs=2, obs_dim=1, clip=5.0)
    # Prior: mean 0, var 1, count 1e-4 (gymnasium). Run 0 sees a batch {1, 3}: mean 2, var 1, count 2.
    norm.update(np.array([[[1.0], [3.0]], [[100.0], [100.0]]]))
    n = 2 + 1e-4
    mean = 2 * 2 / n
    var = (1e-4 * 1 + 2 * 1 + 2**2 * 1e-4 * 2 / n) / n  # parallel-variance combination
    x = norm(np.array([[[3.0]], [[100.0]]]))
    assert x[0, 0, 0].item() == pytest.approx((3 - mean) / math.sqrt(var + 1e-8), rel=1e-6)
    # Run 1's batch {100, 100} (var 0) did not touch run 0's statistics; its own follow the same rule.
    assert norm.stats[0].mean[0] == pytest.approx(mean)
    mean1, var1 = 2 * 100 / n, (1e-4 * 1 + 0 + 100**2 * 1e-4 * 2 / n) / n
    assert x[1, 0, 0].item() == pytest.approx((100 - mean1) / math.sqrt(var1 + 1e-8), rel=1e-6)


def test_clipping_and_disabled():
    norm = ObsNormalizer(n_runs=1, obs_dim=2, clip=5.0)
    x = norm(np.array([[[100.0, -100.0]]]))
    assert x.tolist() == [[[5.0, -5.0]]]
    off = ObsNormalizer(n_runs=1, obs_dim=2, clip=5.0, enabled=False)
    off.update(np.ones((1, 3, 2)))
    assert off(np.array([[[100.0, -100.0]]])).tolist() == [[[100.0, -100.0]]]
