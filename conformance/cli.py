"""The ``mqtck`` command line.

Each subcommand lives in its own module under ``conformance.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (returning the exit code).
Exit codes are a contract (DESIGN.md): 0 everything required passed, 1 a requirement failed,
2 usage or environment error with a one-line reason on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

#: Subcommand modules, in the order ``mqtck --help`` lists them.
COMMAND_MODULES = (
    "conformance.commands.conform",
    "conformance.commands.broker",
    "conformance.commands.bench",
    "conformance.commands.spec",
    "conformance.commands.strategy",
    "conformance.commands.audit",
    "conformance.commands.trace",
    "conformance.commands.peer",
    "conformance.commands.gate",
    "conformance.commands.diff",
    "conformance.commands.matrix",
)


class UsageError(Exception):
    """A problem the user can fix; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (``mqtck: error: …``) and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


#: Exit code after stdout was closed by its reader (``mqtck … --json | head``): a process killed by SIGPIPE.
BROKEN_PIPE_EXIT = 128 + 13


def version() -> str:
    """The installed distribution's version (the checkout's pyproject when run uninstalled)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("mqtck")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mqtck", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"mqtck {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"mqtck {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mqtck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away: say nothing more, and keep Python's exit-time flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT


if __name__ == "__main__":  # pragma: no cover
    # Import by name: under ``python -m`` this file is ``__main__`` and its UsageError would be a
    # different class from the one the command modules raise.
    from conformance.cli import main as _main

    sys.exit(_main())
