"""The ``mqtck`` command line.

Each subcommand lives in its own module under ``conformance.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (returning the exit code).
Exit codes are a contract (DESIGN.md): 0 everything required passed, 1 a requirement failed,
2 usage or environment error with a one-line reason on stderr, 130 interrupted (Ctrl-C, SIGINT) with the one
line ``mqtck COMMAND: interrupted``, whatever the command was running (the suite's pytest, Spark, Hypothesis).
The servers (``mqtck broker``, ``mqtck record``, ``mqtck peer run``) are the exception: SIGINT or SIGTERM is how
they are stopped, so it is their normal end, exit 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import NoReturn

from conformance import interrupts
from conformance.cliargs import UsageError
from conformance.helptext import DESCRIPTIONS, EXAMPLES

#: Subcommand modules, in the order ``mqtck --help`` lists them.
COMMAND_MODULES = (
    "conformance.commands.conform",
    "conformance.commands.broker",
    "conformance.commands.bench",
    "conformance.commands.spec",
    "conformance.commands.strategy",
    "conformance.commands.audit",
    "conformance.commands.spark",
    "conformance.commands.trace",
    "conformance.commands.record",
    "conformance.commands.peer",
    "conformance.commands.gate",
    "conformance.commands.diff",
    "conformance.commands.matrix",
)


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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of ``command`` when it names one: importing a command's module
    imports what it runs (the conformance suite, the mutants, Hypothesis, pytest), about 0.7 s for all of them,
    and ``mqtck audit`` should not wait for the suite's imports before it starts its JVM."""
    parser = _Parser(prog="mqtck")
    parser.add_argument("--version", action="version", version=f"mqtck {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    modules = [m for m in COMMAND_MODULES if m.rpartition(".")[2] == command] or COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(sub)
    width = min(HELP_WIDTH, shutil.get_terminal_size().columns - 2)
    for words, page in help_pages(parser):
        page.formatter_class = argparse.RawDescriptionHelpFormatter
        page.description = "\n".join(textwrap.wrap(DESCRIPTIONS[words], width))
        page.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[words])
    return parser


#: Exit code of an interrupted command (128 + SIGINT, as a shell reports it).
INTERRUPTED_EXIT = 130
#: The servers, as command words (a command, or a command and its verb): SIGINT is how they are stopped (exit 0),
#: so they keep their own handlers and KeyboardInterrupt.
SERVER_COMMANDS: frozenset[tuple[str, ...]] = frozenset({("broker",), ("record",), ("peer", "run"), ("spark", "serve")})

#: Widest the descriptions are wrapped to, narrower on a narrow terminal (RawDescriptionHelpFormatter keeps line
#: breaks as they are, so that the examples stay one per line).
HELP_WIDTH = 100


def help_pages(parser: argparse.ArgumentParser,
               words: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every help page under ``parser`` with its command's words (``""`` for ``mqtck``, ``"strategy check"``)."""
    yield " ".join(words), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from help_pages(child, (*words, name))


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # The first word names the command unless it is an option (--help, --version: every command is listed).
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(words)
    server = (args.command,) in SERVER_COMMANDS or (args.command, getattr(args, "verb", None)) in SERVER_COMMANDS
    if not server:
        interrupts.install()
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that left shows here, inside the handler below, not at interpreter exit
    except UsageError as exc:
        if interrupts.interrupted():
            return _interrupted(args.command)
        print(f"mqtck {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted(args.command)
    except BrokenPipeError:
        # The reader went away: say nothing more, and keep Python's exit-time flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT
    except Exception:
        if interrupts.interrupted():  # what broke after a Ctrl-C (a pytest hook, a killed child) is its doing
            return _interrupted(args.command)
        raise
    # A Ctrl-C that something inside answered without raising (a child that exited on it, a caught interrupt)
    # is still an interrupt: the work did not run to its end.
    return _interrupted(args.command) if interrupts.interrupted() else code


def _interrupted(command: str) -> int:
    print(f"mqtck {command}: interrupted", file=sys.stderr)
    return INTERRUPTED_EXIT


def entry() -> NoReturn:  # pragma: no cover (run as a process by tests/test_interrupts.py)
    """The ``mqtck`` program: :func:`main`, then exit with its code."""
    exit_code = main()
    if exit_code == INTERRUPTED_EXIT:
        # Said and done: leave at once. Interpreter shutdown after a Ctrl-C was not safe: 6 runs in 8 of an
        # interrupted ``strategy check`` died by SIGINT after printing the one line (exit -2, not 130).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
    sys.exit(exit_code)


if __name__ == "__main__":  # pragma: no cover
    entry()
