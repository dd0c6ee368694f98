"""The floor under the CLI: the usage error and the argparse types every command shares.

A leaf that imports nothing of the project, so the commands, the benches and the parts below them (expectations,
the client check) can raise a usage error without importing ``conformance.cli``, which imports them: a bad value is
one line and exit 2, as ``conformance.cli`` promises.
"""

from __future__ import annotations

import argparse
from pathlib import Path


class UsageError(Exception):
    """A problem the user can fix; ``conformance.cli`` prints it as one line and exits 2."""


def report_dir(text: str) -> str:
    """argparse type of every ``--report-dir``: a directory, or a path that does not exist yet (made on write).
    A file there is a usage error (one line, exit 2) before any work starts, not a traceback after it."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a directory")
    return text
