"""Progress of a long command, for a person at a terminal and for a CI log alike.

On a terminal it is a rich progress bar that disappears when done. Anywhere else (tox without a TTY, a CI
log, ``2> file``) a bar draws nothing, and a run that takes a minute looks hung: there the same calls print
plain lines on stderr, ``mqtck COMMAND: LABEL 37/152 (0:25) last-item``, at most every
:data:`PLAIN_EVERY_S` (``MQTCK_PROGRESS_EVERY_S`` overrides it) and at a phase change that comes later than that.
A run shorter than the interval prints nothing, so that a quick command, or one that stops at a usage error,
keeps its output to what it has to say.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

#: Seconds between two plain progress lines; the first comes no sooner, a last one ("done") only after a first.
PLAIN_EVERY_S = 5.0
#: Environment variable that sets another interval (seconds, e.g. 0 in tests: every event prints).
EVERY_ENV = "MQTCK_PROGRESS_EVERY_S"


def plain_every_s() -> float:
    """The interval between plain lines: :data:`EVERY_ENV` if set to a number >= 0, else :data:`PLAIN_EVERY_S`."""
    try:
        value = float(os.environ.get(EVERY_ENV, PLAIN_EVERY_S))
    except ValueError:
        return PLAIN_EVERY_S
    return value if value >= 0 else PLAIN_EVERY_S


class Ticker:
    """Counts items of a long run (tests, seeded faults); ``quiet`` (``--json``) shows nothing at all."""

    def __init__(self, command: str, label: str, *, quiet: bool = False, console: Console | None = None) -> None:
        self.command = command
        self.label = label
        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.plain = not quiet and not self.console.is_terminal
        self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=self.console, transient=True,
                             disable=quiet or self.plain)
        self._task = self._bar.add_task(label, total=None)
        self._total: int | None = None
        self._done = 0
        self._started = time.monotonic()
        self._last_line = self._started
        self._every = plain_every_s()
        self._printed = False

    def __enter__(self) -> Ticker:
        self._bar.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._bar.stop()
        if self.plain and exc_type is None and self._printed:
            self._line("done")

    def total(self, n: int) -> None:
        self._total = n
        self._bar.update(self._task, total=n)

    def phase(self, label: str) -> None:
        """A new part of the run (its own count): announced at once in a log."""
        self.label, self._total, self._done = label, None, 0
        self._bar.update(self._task, description=label, total=None, completed=0)
        if self.plain and time.monotonic() - self._last_line >= self._every:
            self._line("")

    def advance(self, item: str = "") -> None:
        self._done += 1
        self._bar.update(self._task, advance=1, description=(item or self.label)[:40])
        now = time.monotonic()
        if self.plain and now - self._last_line >= self._every:
            self._line(item)

    def _line(self, tail: str) -> None:
        self._printed = True
        self._last_line = time.monotonic()
        elapsed = int(self._last_line - self._started)
        count = f" {self._done}/{self._total}" if self._total is not None else (f" {self._done}" if self._done else "")
        clock = f"({elapsed // 60}:{elapsed % 60:02d})"
        print(f"mqtck {self.command}: {self.label}{count} {clock}{' ' + tail if tail else ''}", file=sys.stderr,
              flush=True)
