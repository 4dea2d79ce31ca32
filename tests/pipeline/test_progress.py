"""The pipeline's progress display (ppo/pipeline/progress.py) and its Snakemake logger plugin, without Snakemake
running: events in, lines out."""
from __future__ import annotations

import io
import logging

import pytest
from snakemake_interface_logger_plugins.common import LogEvent

from ppo.pipeline.progress import PipelineProgress, clock, job_title, training_fraction


def write_log(path, *lines):
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_training_fraction_reads_the_last_step_line(tmp_path):
    log = write_log(tmp_path / "a.log", "group of 3 runs of Hopper-v5, 61,440 steps each",
                    "iteration 1  step 2,048/61,440  900 steps/s", "iteration 15  step 30,720/61,440  910 steps/s")
    assert training_fraction(log) == pytest.approx(0.5)
    assert training_fraction(write_log(tmp_path / "b.log", "group of 3 runs")) == 0.0  # nothing yet
    assert training_fraction(tmp_path / "missing.log") == 0.0
    assert training_fraction(None) == 0.0


def test_clock_and_titles():
    assert clock(0) == "0:00" and clock(75) == "1:15" and clock(3723) == "1:02:03"
    assert job_title("train_table1_Hopper-ppo-0") == "table1 Hopper-ppo-0"
    assert job_title("front_page") == "front_page"


def test_remaining_time_extrapolates_the_training_done(tmp_path):
    state = PipelineProgress(now=0.0)
    state.planned({"train_t_A-0": 1, "train_t_B-0": 1, "report": 1, "total": 3})
    assert (state.total, state.training_total) == (3, 2)
    state.started(1, "train_t_A-0", [write_log(tmp_path / "a.log", "step 50/100")], now=0.0)
    state.started(2, "report", [], now=0.0)
    # half of one of two training jobs done in 60 s: a quarter of the work, so 180 s to go
    assert state.remaining_seconds(now=60.0) == pytest.approx(180.0)
    lines = state.lines(now=60.0)
    assert lines[0] == "0/3 jobs done · 1:00 elapsed · about 3:00 left"
    assert "50%  t A-0" in lines[1] and lines[2].strip() == "report (1:00)"
    assert state.finished(1).rule == "train_t_A-0" and state.training_done == 1
    state.progress(1, 3)
    assert state.lines(now=60.0)[0].startswith("1/3 jobs done")
    state.failed_job(2)
    assert state.lines(now=60.0)[0].endswith("1 failed")


class _Settings:
    printshellcmds = nocolor = debug_dag = verbose = show_failed_logs = stdout = dryrun = False
    quiet = None


def _record(msg, level=logging.INFO, **extra):
    record = logging.LogRecord("snakemake", level, __file__, 0, msg, None, None)
    record.__dict__.update(extra)
    return record


def test_plugin_prints_one_line_per_finished_job_and_the_failed_log(tmp_path):
    from snakemake_logger_plugin_ppo import LogHandler

    handler = LogHandler(_Settings(), None)
    handler.stream, handler.live = io.StringIO(), False
    log = write_log(tmp_path / "t.log", "step 10/10", "Traceback: boom")
    handler.handle(_record("stats", event=LogEvent.RUN_INFO, stats={"train_s_T-0": 1, "report": 1, "total": 2}))
    handler.handle(_record("job", event=LogEvent.JOB_INFO, jobid=1, rule_name="train_s_T-0", log=[log]))
    handler.handle(_record("shell", event=LogEvent.SHELLCMD, cmd="python -m ppo.pipeline.job " + "x" * 500))
    handler.handle(_record("done", event=LogEvent.JOB_FINISHED, job_id=1))
    handler.handle(_record(None, event=LogEvent.PROGRESS, done=1, total=2))
    handler.handle(_record("job", event=LogEvent.JOB_INFO, jobid=2, rule_name="report", log=[log]))
    handler.handle(_record("Error in rule report", logging.ERROR, event=LogEvent.JOB_ERROR, jobid=2,
                           rule_name="report", log=[log]))
    handler.handle(_record("a plain warning", logging.WARNING))
    handler.handle(_record("chatter", logging.INFO))
    out = handler.stream.getvalue().splitlines()
    assert out[0] == "2 jobs to run (1 training); one line per finished job"
    assert out[1].startswith("[1/2 · ") and out[1].endswith("done: s T-0 (0:00)")
    assert out[2] == f"FAILED: report (log: {log})"
    assert out[3:5] == ["    | step 10/10", "    | Traceback: boom"]
    assert out[5] == "a plain warning"
    assert len(out) == 6  # no shell command, no chatter
    handler.close()
