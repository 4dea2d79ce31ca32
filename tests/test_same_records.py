"""tests/same_records.py can fail: on one bit of a record, on how a run ended, and on a missing run (the plain
zip() it replaced passed a shorter or empty list); the wall-clock timing never counts."""
import math
from types import SimpleNamespace

import pandas as pd
import pytest
from same_records import assert_same_records

from ppo.training.driver import RunResult


def run(run_id="a", loss=0.5, status="completed", diverged_at_step=None, seconds=1.0) -> RunResult:
    return RunResult(SimpleNamespace(run_id=run_id),
                     episodes=pd.DataFrame({"global_step": [10], "episode_return": [1.0]}),
                     updates=pd.DataFrame({"global_step": [16], "loss": [loss]}),
                     timing=pd.DataFrame({"seconds": [seconds]}), status=status, diverged_at_step=diverged_at_step,
                     diverged_reason=None, derived_seeds={})


def test_same_records_fails_on_any_difference_but_timing():
    assert_same_records(run(), run(seconds=2.0))
    assert_same_records([run("a"), run("b")], (run("a"), run("b")))
    with pytest.raises(AssertionError, match="updates"):
        assert_same_records(run(), run(loss=math.nextafter(0.5, 1.0)))  # one ulp
    with pytest.raises(AssertionError, match="ended otherwise"):
        assert_same_records(run(), run(status="diverged", diverged_at_step=16))
    for fewer in ([run("a")], []):
        with pytest.raises(AssertionError, match="runs where 2 were expected"):
            assert_same_records([run("a"), run("b")], fewer)
    with pytest.raises(AssertionError, match="runs where 0 were expected"):
        assert_same_records([], [])
