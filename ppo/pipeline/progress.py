"""One progress display for a whole pipeline run: jobs done, each running training job's own progress,
elapsed and remaining time. Fed by Snakemake's log events through the ``ppo`` logger plugin
(snakemake_logger_plugin_ppo/, ``snakemake --logger ppo``, what ``./repro`` uses); kept apart from it so
that it can be tested without Snakemake.

A training job's progress is the last ``step N/M`` line its log holds (ppo/training/driver.py writes one every few
seconds); the remaining time extrapolates the training work done so far, the part of a run that costs.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

_STEP = re.compile(r"step ([\d,]+)/([\d,]+)")
TAIL_BYTES = 4096  # a training log's last line is well within its last 4 kB


def training_fraction(log: str | Path | None) -> float:
    """Share of its steps a training job has done, from the last ``step N/M`` in its log (0 if none yet)."""
    if not log:
        return 0.0
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return 0.0
    found = _STEP.findall(tail)
    if not found:
        return 0.0
    done, total = (int(x.replace(",", "")) for x in found[-1])
    return min(1.0, done / total) if total > 0 else 0.0


def clock(seconds: float) -> str:
    """12:34 or 1:02:03."""
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def job_title(rule: str) -> str:
    """'train_table1_Hopper-ppo-0' -> 'table1 Hopper-ppo-0'; other rules keep their names."""
    return rule.removeprefix("train_").replace("_", " ", 1) if rule.startswith("train_") else rule


@dataclass
class Job:
    rule: str
    log: str | None
    started: float
    training: bool = field(init=False)

    def __post_init__(self) -> None:
        self.training = self.rule.startswith("train_")


class PipelineProgress:
    """The state of one Snakemake invocation, updated from its events, rendered as a few lines."""

    def __init__(self, now: float | None = None):
        self.start = time.monotonic() if now is None else now
        self.total = 0  # jobs Snakemake planned
        self.done = 0
        self.training_total = 0  # of which training jobs
        self.training_done = 0
        self.running: dict[int, Job] = {}
        self.failed: list[str] = []

    # ---- events
    def planned(self, counts: dict[str, int]) -> None:
        """RUN_INFO: jobs per rule (Snakemake's 'total' entry is the sum)."""
        counts = {k: int(v) for k, v in counts.items() if k != "total"}
        self.total = sum(counts.values())
        self.training_total = sum(n for rule, n in counts.items() if rule.startswith("train_"))

    def started(self, jobid: int, rule: str, log: list[str] | str | None, now: float | None = None) -> None:
        first_log = log[0] if isinstance(log, (list, tuple)) and log else (log or None)
        self.running[jobid] = Job(rule, first_log, time.monotonic() if now is None else now)

    def finished(self, jobid: int) -> Job | None:
        job = self.running.pop(jobid, None)
        if job is not None and job.training:
            self.training_done += 1
        return job

    def failed_job(self, jobid: int) -> Job | None:
        job = self.running.pop(jobid, None)
        if job is not None:
            self.failed.append(job.rule)
        return job

    def progress(self, done: int, total: int) -> None:
        """PROGRESS: Snakemake's own count is the authority on jobs done."""
        self.done, self.total = int(done), int(total)

    # ---- rendering
    def remaining_seconds(self, now: float) -> float | None:
        """Training work left, extrapolated from the share done so far (None until there is a basis)."""
        if not self.training_total:
            return None
        running = sum(training_fraction(j.log) for j in self.running.values() if j.training)
        fraction = (self.training_done + running) / self.training_total
        if fraction < 0.02:
            return None
        return (now - self.start) * (1 - fraction) / fraction

    def lines(self, now: float | None = None, width: int = 100) -> list[str]:
        now = time.monotonic() if now is None else now
        left = self.remaining_seconds(now)
        head = (f"{self.done}/{self.total} jobs done · {clock(now - self.start)} elapsed"
                + (f" · about {clock(left)} left" if left is not None else ""))
        if self.failed:
            head += f" · {len(self.failed)} failed"
        out = [head]
        for job in sorted(self.running.values(), key=lambda j: j.started):
            if job.training:
                frac = training_fraction(job.log)
                bar = "#" * round(20 * frac) + "." * (20 - round(20 * frac))
                out.append(f"  [{bar}] {100 * frac:3.0f}%  {job_title(job.rule)}")
            else:
                out.append(f"  {job_title(job.rule)} ({clock(now - job.started)})")
        return [line[:width] for line in out]
