"""Ctrl-C during an audit: one line and exit 130, never py4j's tracebacks.

A terminal's Ctrl-C reaches the driver's JVM too (same process group), and it shuts down at once; every
later call into it then fails. PySpark's own SIGINT handler cancels the jobs over py4j (that call fails
first) and py4j logs each broken call with its traceback, so an interrupted audit printed about a hundred
lines and, when the failure surfaced as a read error, exited 2. :func:`install` replaces that handler once the
session has started; :func:`interrupted` lets the audit's error paths tell an interrupt from a real failure.
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
    """Whether SIGINT arrived since :func:`install`: a failure of Spark after it is the interrupt's doing."""
    return _INTERRUPTED.is_set()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _INTERRUPTED.set()
    logging.disable(logging.CRITICAL)  # py4j logs every call the dying JVM breaks, with a traceback
    raise KeyboardInterrupt


def install() -> None:
    """Take SIGINT back from PySpark (only the main thread may set a handler; elsewhere PySpark set none)."""
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
