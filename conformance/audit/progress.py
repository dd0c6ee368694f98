"""Progress while Spark works: the phase the job is in and the tasks of the stages running now.

A background thread polls Spark's status tracker (cheap: it reads the driver's bookkeeping), or reads what a
warm Spark Connect server last reported of its stages (its progress messages), and drives a rich progress bar on
stderr. When stderr is not a terminal (a CI log) the bar draws nothing: a
plain line names each phase instead (:class:`conformance.progress.Ticker`), so a long audit does not look hung.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from pyspark.sql import SparkSession
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from conformance import interrupts
from conformance.audit import remote
from conformance.progress import Ticker

#: Seconds between polls of the status tracker.
POLL_S = 0.25


class SparkProgress:
    def __init__(self, spark: SparkSession, enabled: bool = True) -> None:
        self._spark = spark
        self._sc = None if remote.is_remote(spark) else spark.sparkContext
        #: A Connect server's stages of the operation running now: id -> (tasks, completed tasks).
        self._remote_stages: dict[int, tuple[int, int]] = {}
        console = Console(stderr=True)
        self.enabled = enabled and console.is_terminal
        #: Plain phase lines where a bar cannot be drawn.
        self._plain = Ticker("audit", "starting", console=console) if enabled and not console.is_terminal else None
        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("tasks"), TimeElapsedColumn(), console=console, transient=True, disable=not self.enabled,
        )
        self._task = self._progress.add_task("starting", total=None)
        self._phase = "starting"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="mqtck-audit-progress", daemon=True)

    def __enter__(self) -> SparkProgress:
        if self.enabled:
            if self._sc is None:
                self._spark.registerProgressHandler(self._on_remote_progress)
            self._progress.start()
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self.enabled:
            if self._sc is None:
                self._spark.removeProgressHandler(self._on_remote_progress)
            self._thread.join(timeout=2)
            self._progress.stop()

    def _on_remote_progress(self, stages: Any, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        """A Connect server's report on the operation running now (its running and finished stages)."""
        self._remote_stages = {} if done else {
            stage.stage_id: (stage.num_tasks, stage.num_completed_tasks) for stage in stages or () if not stage.done}

    def phase(self, text: str) -> None:
        """Name what the driver does next (also the description of the Spark jobs it starts)."""
        self._phase = text
        if self._sc is not None:
            self._sc.setJobDescription(f"mqtck audit: {text}")
        self._progress.update(self._task, description=text)
        if self._plain is not None:
            self._plain.phase(text)

    def _poll(self) -> None:
        try:
            self._poll_until_stopped()
        except Exception:
            if not interrupts.interrupted():  # after a Ctrl-C the JVM is gone: nothing to show
                raise

    def _poll_until_stopped(self) -> None:
        tracker = self._sc.statusTracker() if self._sc is not None else None
        while not self._stop.is_set():
            counts = self._remote_stages.values() if tracker is None else self._stage_counts(tracker)
            total = sum(tasks for tasks, _ in counts)
            done = sum(completed for _, completed in counts)
            description = f"{self._phase} ({len(counts)} stage{'s' if len(counts) != 1 else ''})"
            self._progress.update(self._task, total=total or None, completed=done, description=description)
            time.sleep(POLL_S)

    @staticmethod
    def _stage_counts(tracker: Any) -> list[tuple[int, int]]:
        """(tasks, completed tasks) of each stage the driver runs now."""
        counts = []
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            counts.append((info.numTasks, info.numCompletedTasks) if info is not None else (0, 0))
        return counts
