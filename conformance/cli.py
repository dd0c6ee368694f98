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
import sys
from collections.abc import Sequence

from conformance.cliargs import UsageError

#: Subcommand modules, in the order ``mqtck --help`` lists them.
COMMAND_MODULES = (
    "conformance.commands.conform",
    "conformance.commands.broker",
    "conformance.commands.bench",
    "conformance.commands.spec",
    "conformance.commands.strategy",
    "conformance.commands.audit",
    "conformance.commands.trace",
    "conformance.commands.record",
    "conformance.commands.peer",
    "conformance.commands.gate",
    "conformance.commands.diff",
    "conformance.commands.matrix",
)


#: ``mqtck COMMAND --help`` ends with these: what a newcomer types first.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "conform": ("mqtck conform", "mqtck conform --only LPOLL-4 --json",
                "mqtck conform --target remoting://127.0.0.1:9876?control=127.0.0.1:7000 --junit ci.xml",
                "mqtck conform --mutants",
                "mqtck conform --client './my-consumer'  # reads MQTCK_NAMESRV, MQTCK_TOPIC, MQTCK_GROUP"),
    "broker": ("mqtck broker --http 0 --data-dir /tmp/b", "mqtck broker --remoting 0 --control --data-dir /tmp/b",
               "mqtck broker --http 0 --sim-clock --segment-bytes 65536 --data-dir /tmp/b"),
    "bench": ("mqtck bench store", "mqtck bench strategy", "mqtck bench audit --events 1000000"),
    "spec": ("mqtck spec check", "mqtck spec render"),
    "strategy": ("mqtck strategy list", "mqtck strategy check averagely",
                 "mqtck strategy check mypkg.zones:ZoneAware", "mqtck strategy check --exec 'java -jar alloc.jar'"),
    "audit": ("mqtck audit trace.jsonl --report-dir reports/audit", "mqtck audit traces/ --report-dir out --master spark://head:7077"),
    "trace": ("mqtck trace synth --events 100000 --out /tmp/trace",),
    "record": ("mqtck record --listen 127.0.0.1:9877 --upstream 127.0.0.1:9876 --trace recorded.jsonl",),
    "peer": ("mqtck peer list", "mqtck peer install rocketmq-4.9.7", "mqtck peer run rocketmq-5.5.0"),
    "gate": ("mqtck gate rocketmq-4.9.7", "mqtck gate rocketmq-5.5.0 --only REVIVE-6 --junit gate.xml",
             "mqtck gate java-client-4.9.8"),
    "diff": ("mqtck diff --target mutant:hold-ignore-deadline --examples 200",
             "mqtck diff --target peer:rocketmq-4.9.7 --examples 500 --without restart --report-dir d",
             "mqtck diff --replay d/divergence.json --target peer:rocketmq-4.9.7"),
    "matrix": ("mqtck matrix --out docs/matrix reports/gate",),
}


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
    parser = _Parser(prog="mqtck", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"mqtck {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    modules = [m for m in COMMAND_MODULES if m.rpartition(".")[2] == command] or COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(sub)
    for command_name, examples in EXAMPLES.items():
        if command_name not in sub.choices:
            continue
        command_parser = sub.choices[command_name]
        command_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        command_parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # The first word names the command unless it is an option (--help, --version: every command is listed).
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(words)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that left shows here, inside the handler below, not at interpreter exit
        return code
    except UsageError as exc:
        print(f"mqtck {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mqtck {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away: say nothing more, and keep Python's exit-time flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
