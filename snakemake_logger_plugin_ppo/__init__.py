"""Snakemake logger plugin ``ppo``: one calm progress display for this project's pipeline.

``snakemake --logger ppo`` (what ``./repro`` runs) replaces Snakemake's job blocks (rule, inputs, outputs,
a shell command of hundreds of characters per job) with: on a terminal, a status redrawn in place (jobs
done, each running job with its own progress bar, elapsed and remaining time); otherwise, one line per
finished job. Warnings, errors and a failed job's log tail are printed as they come. The state and its
rendering live in ppo/pipeline/progress.py; this module only connects them to Snakemake's log events.

Snakemake finds logger plugins among importable top-level packages named ``snakemake_logger_plugin_*``;
an editable install does not make this one visible, so ``./repro`` puts the project root on PYTHONPATH.
"""
from __future__ import annotations

import logging
import shutil
import sys
import threading
import time
from dataclasses import dataclass

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

from ppo.pipeline.progress import PipelineProgress, clock, job_title

REDRAW_SECONDS = 1.0
FAILED_LOG_LINES = 15
QUIET_RULES = ("table_view_", "all")  # bookkeeping jobs of a second or less: counted, not listed


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    pass


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        self.stream = sys.stderr
        self.live = self.stream.isatty()
        self.state = PipelineProgress()
        self.output_lock = threading.Lock()  # not `lock`: logging.Handler holds its own there around emit()
        self.drawn = 0  # lines of the live status now on screen
        self.stop = threading.Event()
        if self.live:
            threading.Thread(target=self._redraw_loop, daemon=True).start()

    # ---- LogHandlerBase's declarations: writes to the terminal itself, filters and formats itself
    writes_to_stream = True
    writes_to_file = False
    has_filter = True
    has_formatter = True
    needs_rulegraph = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._handle(record)
        except Exception:  # a display problem must never stop the pipeline
            self.handleError(record)

    def _handle(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        state = self.state
        if event == LogEvent.RUN_INFO:
            state.planned(getattr(record, "stats", {}) or {})
            self._print(f"{state.total} jobs to run ({state.training_total} training)"
                        + ("" if self.live else "; one line per finished job"))
        elif event == LogEvent.JOB_INFO:
            with self.output_lock:
                state.started(record.jobid, record.rule_name, getattr(record, "log", None))
        elif event == LogEvent.JOB_FINISHED:
            with self.output_lock:
                job = state.finished(record.job_id)
            if job is not None and not self.live and not job.rule.startswith(QUIET_RULES):
                self._print(f"[{state.done + 1}/{state.total} · {clock(time.monotonic() - state.start)}] "
                            f"done: {job_title(job.rule)} ({clock(time.monotonic() - job.started)})")
        elif event == LogEvent.PROGRESS:
            with self.output_lock:
                state.progress(record.done, record.total)
            if state.total and state.done == state.total:
                self._print(f"all {state.total} jobs done in {clock(time.monotonic() - state.start)}")
        elif event == LogEvent.JOB_ERROR:
            with self.output_lock:
                state.failed_job(record.jobid)
            self._print(f"FAILED: {job_title(record.rule_name)} (log: {', '.join(map(str, record.log or [])) or 'none'})")
            for path in record.log or []:
                self._print_tail(str(path))
        elif event in (LogEvent.SHELLCMD, LogEvent.JOB_STARTED, LogEvent.RESOURCES_INFO, LogEvent.DEBUG_DAG,
                       LogEvent.RULEGRAPH, LogEvent.WORKFLOW_STARTED, LogEvent.GROUP_INFO):
            return  # Snakemake's own bookkeeping: `./repro --verbose` shows it
        elif record.levelno >= logging.WARNING or event in (LogEvent.ERROR, LogEvent.GROUP_ERROR):
            self._print(str(record.msg if record.msg is not None else "").rstrip())
        elif self.common_settings.dryrun and record.levelno >= logging.INFO and record.msg:
            self._print(str(record.msg).rstrip())  # a dry run's summary is what it was asked for

    # ---- output: messages scroll above the live status, which is redrawn in place
    def _print(self, text: str) -> None:
        if not text:
            return
        with self.output_lock:
            self._clear()
            self.stream.write(text + "\n")
            self._draw()
            self.stream.flush()

    def _print_tail(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()[-FAILED_LOG_LINES:]
        except OSError:
            return
        self._print("\n".join(f"    | {line}" for line in lines))

    def _clear(self) -> None:
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")  # up to the status's first line, erase below
            self.drawn = 0

    def _draw(self) -> None:
        if not self.live or self.stop.is_set():
            return
        width = shutil.get_terminal_size((100, 24)).columns - 1
        lines = self.state.lines(width=width)
        self.stream.write("\n".join(lines) + "\n")
        self.drawn = len(lines)

    def _redraw_loop(self) -> None:
        while not self.stop.wait(REDRAW_SECONDS):
            with self.output_lock:
                self._clear()
                self._draw()
                self.stream.flush()

    def close(self) -> None:
        self.stop.set()
        with self.output_lock:
            self._clear()
            self.stream.flush()
        super().close()
