"""Ctrl-C, for every command that is not a server: one line and exit 130, whatever was running.

The CLI installs :func:`install` before a command runs, and installs it rather than trusting Python's default:
a process started with SIGINT ignored (a shell's background job, some CI runners) keeps it ignored, and the
command then ran to its end and exited 0 through a Ctrl-C sent to its group. What runs inside may also answer
the KeyboardInterrupt badly: pytest's own hooks raised a KeyError while the suite was being interrupted, and a
Java child killed by the same SIGINT fails its read. :func:`interrupted` lets the CLI (and the audit's error
paths) tell an interrupt's aftermath from a real failure.

An audit's Spark is the sharpest case. A terminal's Ctrl-C reaches the driver's JVM too (same process group),
and it shuts down at once; every later call into it then fails. PySpark's own SIGINT handler cancels the jobs
over py4j (that call fails first) and py4j logs each broken call with its traceback, so an interrupted audit
printed about a hundred lines and, when the failure surfaced as a read error, exited 2. The audit installs the
handler again once the session has started (PySpark replaced it).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_INTERRUPTED = threading.Event()


def interrupted() -> bool:
    """Whether SIGINT arrived since :func:`install`: a failure after it is the interrupt's doing."""
    return _INTERRUPTED.is_set()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _INTERRUPTED.set()
    logging.disable(logging.CRITICAL)  # py4j logs every call the dying JVM breaks, with a traceback
    raise KeyboardInterrupt


def install() -> None:
    """Make SIGINT a KeyboardInterrupt that is remembered (only the main thread may set a handler; elsewhere
    nothing, PySpark included, set one)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


@contextmanager
def as_interrupt() -> Iterator[None]:
    """Whatever fails after a Ctrl-C (a py4j call to the stopped JVM, a read error, a cleanup in a ``finally``) is
    the interrupt's doing: KeyboardInterrupt, so that every caller (``mqtck audit``, ``mqtck bench audit``,
    spark-submit) reports an interrupt, not the failure."""
    try:
        yield
    except BaseException:
        if interrupted():
            raise KeyboardInterrupt from None
        raise
