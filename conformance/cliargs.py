"""argparse types the commands share (a bad value is one line and exit 2, as ``conformance.cli`` promises)."""

from __future__ import annotations

import argparse
from pathlib import Path


def report_dir(text: str) -> str:
    """argparse type of every ``--report-dir``: a directory, or a path that does not exist yet (made on write).
    A file there is a usage error (one line, exit 2) before any work starts, not a traceback after it."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a directory")
    return text
