"""The throughput benchmark's bookkeeping (its rates are measured, not tested): the table it writes and the
projection of the Table 1 grid's wall time from it."""
import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

spec = importlib.util.spec_from_file_location("throughput", Path(__file__).parents[2] / "benchmarks/throughput.py")
throughput = importlib.util.module_from_spec(spec)
sys.modules["throughput"] = throughput  # the other benchmark scripts import it by this name
spec.loader.exec_module(throughput)


def test_projection_schedules_longest_job_first_on_the_cores():
    # jobs of 5, 4, 3, 3, 2, 2, 1 hours: longest first on 2 cores -> {5, 3, 2} and {4, 3, 2, 1}: 10 h each
    hours = [5, 4, 3, 3, 2, 2, 1]
    table = pd.DataFrame({"measure": "ours-33", "steps_per_s": [2 * 100 / (h * 3600) for h in hours]})
    assert throughput.projected_grid_hours(table, runs=2, steps=100, cores=2, measure="ours-33") == pytest.approx(10)
    assert throughput.projected_grid_hours(table, runs=2, steps=100, cores=1, measure="ours-33") == pytest.approx(20)
    # one long job bounds the wall time however many cores there are
    assert throughput.projected_grid_hours(table, runs=2, steps=100, cores=7, measure="ours-33") == pytest.approx(5)


def test_rows_name_each_measure_and_divide_by_the_right_simulator_rate():
    rows = pd.DataFrame(throughput.measure_task("InvertedPendulum-v5", [1, 2], 2048, 1, None, False))
    assert list(rows.measure) == ["raw", "ours-1", "lockstep-2", "batched-2", "floor-2", "ours-2"]
    by = rows.set_index("measure")
    assert by.loc["raw", "ratio_vs_raw"] == 1.0
    assert by.loc["ours-2", "runs"] == 2
    # one iteration of 2048 steps per run: steady state is that iteration, over both runs' steps
    assert 0 < by.loc["ours-2", "rollout_share"] < 1
    # the group's simulator is the batched path training steps, not gymnasium's loop
    expected = by.loc["ours-2", "steady_steps_per_s"] / by.loc["batched-2", "steps_per_s"]
    assert by.loc["ours-2", "steady_vs_raw_group"] == pytest.approx(expected, abs=6e-4)  # rounded to 3 decimals
    assert by.loc["floor-2", "matmul_gflops"] > 0
    summary = throughput.summary(rows, 2).set_index("task").loc["InvertedPendulum-v5"]
    assert summary["goal"] == 0.6 and summary["steady/raw"] == pytest.approx(by.loc["ours-2", "steady_vs_raw"], abs=0.01)


def test_update_flops_count_the_paper_networks():
    # Hopper (11 inputs, 3 actions), 64x64: forward 2·(11·64 + 64·64 + 64·3) = 9,984 FLOPs for the policy
    cfg = throughput.paper_config(2048)
    policy_fwd, value_fwd = 9_984, 2 * (11 * 64 + 64 * 64 + 64)
    train = lambda fwd: 3 * fwd - 2 * 11 * 64  # noqa: E731  backward: no input gradient for the first layer
    expected = cfg.ppo.epochs * (train(policy_fwd) + train(value_fwd)) + 2 * policy_fwd
    assert throughput.update_flops(11, 3, cfg) == expected


def test_projection_of_several_algorithms_counts_one_job_per_task_and_algorithm():
    # Figure 3's shape: jobs of 3 runs per (task, algorithm); 2 h, 2 h and 1 h of work on 2 cores -> 3 h
    table = pd.DataFrame({"measure": ["trpo-3", "cem-3", "trpo-3", "ours-33"],
                          "steps_per_s": [3 * 100 / 7200, 3 * 100 / 7200, 3 * 100 / 3600, 1.0]})
    assert throughput.projected_grid_hours(table, runs=3, steps=100, cores=2,
                                           measure=["trpo-3", "cem-3"]) == pytest.approx(3)


overheads_spec = importlib.util.spec_from_file_location("overheads", Path(__file__).parents[2] / "benchmarks/overheads.py")
overheads = importlib.util.module_from_spec(overheads_spec)
overheads_spec.loader.exec_module(overheads)


def test_overheads_split_a_real_rollout_and_put_the_simulator_back():
    algo = overheads.paper_group("InvertedPendulum-v5", 1)
    sim, rest = overheads.rollout_split(algo)
    assert sim > 0 and rest > 0
    steps_before = algo.ctx.log.steps.copy()
    overheads.rollout_without_sim(algo)  # the stub steps nothing, the log still counts its lock-steps
    assert algo.ctx.log.steps[0] == steps_before[0] + algo.batch_size
    # The real environments are back afterwards: they step and end episodes again.
    assert "step" not in vars(algo.ctx.envs)
    assert "collect" not in vars(algo)
    episodes = len(algo.ctx.log.episodes[0])
    algo.collect()
    assert len(algo.ctx.log.episodes[0]) > episodes
