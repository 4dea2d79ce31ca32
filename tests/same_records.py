"""The bit-for-bit comparison of training results that the resume and group-independence tests share."""
import pandas as pd

from ppo.training.driver import RunResult


def assert_same_records(expected, actual) -> None:
    """Training results (ppo.training.driver.RunResult, one or a sequence) equal bit for bit: episodes, updates and
    how each run ended (status, step and reason of a divergence); never their wall-clock measures (result.timing).
    The same number of runs, at least one: an empty or shorter list is a failure, not a pass."""
    expected = [expected] if isinstance(expected, RunResult) else list(expected)
    actual = [actual] if isinstance(actual, RunResult) else list(actual)
    assert len(expected) == len(actual) > 0, f"{len(actual)} runs where {len(expected)} were expected"
    for e, a in zip(expected, actual):
        run = f"run {e.spec.run_id!r}"
        pd.testing.assert_frame_equal(e.episodes, a.episodes, check_exact=True, obj=f"{run}: episodes")
        pd.testing.assert_frame_equal(e.updates, a.updates, check_exact=True, obj=f"{run}: updates")
        ended = (e.status, e.diverged_at_step, e.diverged_reason), (a.status, a.diverged_at_step, a.diverged_reason)
        assert ended[0] == ended[1], f"{run} ended otherwise: {ended[1]}, not {ended[0]}"
