"""``mqtck strategy``: property-test a queue allocation strategy (``check``), list the built-ins
(``list``), or serve a Python strategy over the exec protocol (``serve``).

The strategy is named one of three ways: a built-in (``averagely``), a Python object
(``package.module:Name``, a class or an instance), or any program (``--exec "CMD"``) speaking the
JSON-lines protocol of ``docs/strategy-check.md``. Flags declare what it promises; a built-in comes
with its own promises, which flags can tighten or loosen. Exit 0: every declared property holds;
1: one does not; 2: usage error, or the program broke the protocol (one line naming the request).
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from rich.console import Console
from rich.table import Table

from conformance.cliargs import UsageError
from conformance.progress import Ticker
from conformance.strategy.declaration import (
    BROADCASTING,
    BUILTIN_DECLARATIONS,
    CONFIGURED,
    POP_SHARE,
    ROOM_MODES,
)
from conformance.strategy.engine import DEFAULT_EXAMPLES, DEFAULT_SEED, SHRINK_SECONDS, CheckSettings, run_check
from conformance.strategy.execproc import DEFAULT_TIMEOUT, ExecStrategyUnderTest
from conformance.strategy.loader import LoadError, builtin_declaration, load_python
from conformance.strategy.properties import PROPERTY_NAMES
from conformance.strategy.protocol import ProtocolError
from conformance.strategy.render import render_text, report_json
from conformance.strategy.serve import serve
from reference.allocation import BUILTIN_NAMES, strategy_class

#: Inner strategies ``--pop-inner`` accepts (those that need no configuration of their own).
POP_INNER_CHOICES = ("averagely", "by_circle", "consistent_hash")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("strategy", help="property-test a queue allocation strategy (check, list, serve)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True

    check = actions.add_parser("check", help="run the allocation properties against a strategy")
    check.add_argument("strategy", nargs="?", metavar="STRATEGY",
                       help=f"a built-in ({', '.join(BUILTIN_NAMES)}) or package.module:Name")
    check.add_argument("--exec", dest="exec_command", metavar="CMD",
                       help="a program speaking the JSON-lines exec protocol (started once, via the shell)")
    check.add_argument("--shrink-seconds", type=float, default=SHRINK_SECONDS, metavar="S",
                       help=f"wall-clock budget for shrinking one failure (default {SHRINK_SECONDS:g})")
    check.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES, metavar="N",
                       help=f"examples per property (default {DEFAULT_EXAMPLES})")
    check.add_argument("--seed", default=str(DEFAULT_SEED), metavar="N|random",
                       help=f"Hypothesis seed (default {DEFAULT_SEED}); 'random' picks one and prints it")
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    check.add_argument("--property", action="append", default=[], choices=PROPERTY_NAMES, metavar="NAME",
                       help=f"run only this property (repeatable): {', '.join(PROPERTY_NAMES)}")
    promises = check.add_argument_group("what the strategy promises")
    promises.add_argument("--balance-bound", type=int, metavar="N",
                          help="largest minus smallest share is at most N (averagely: 1)")
    promises.add_argument("--stickiness-bound", type=int, metavar="N",
                          help="at most N queues move between staying consumers on a join or leave "
                               "(consistent hash: 0)")
    promises.add_argument("--machine-room", choices=ROOM_MODES,
                          help="by-idc: brokers '<room>@<broker>', params.consumeridcs; "
                               "nearby: rooms before the first '-' of broker names and client ids")
    model = promises.add_mutually_exclusive_group()
    model.add_argument("--broadcasting", dest="model", action="store_const", const=BROADCASTING,
                       help="every consumer gets every queue")
    model.add_argument("--pop-share", dest="model", action="store_const", const=POP_SHARE,
                       help="POP allocation: params.popShareQueueNum and params.innerStrategy are sent")
    model.add_argument("--configured", dest="model", action="store_const", const=CONFIGURED,
                       help="each consumer gets params.messageQueueList")
    promises.add_argument("--pop-inner", choices=POP_INNER_CHOICES,
                          help="inner strategy of --pop-share (default averagely)")
    promises.add_argument("--params", metavar="JSON", help="a JSON object sent as params with every request")
    check.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help=f"--exec: seconds to wait for each answer (default {DEFAULT_TIMEOUT:g})")
    check.set_defaults(func=run_check_command)

    listing = actions.add_parser("list", help="list the built-in strategies and what they promise")
    listing.set_defaults(func=run_list)

    serving = actions.add_parser("serve", help="serve a Python strategy over the exec protocol (stdin/stdout)")
    serving.add_argument("strategy", metavar="STRATEGY", help="a built-in or package.module:Name")
    serving.set_defaults(func=run_serve)


def _seed(text: str) -> int:
    if text == "random":
        return random.SystemRandom().randrange(2**32)
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--seed must be an integer or 'random', got {text!r}") from None


def _params(text: str | None) -> dict | None:
    if text is None:
        return None
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--params is not JSON: {exc}") from None
    if not isinstance(params, dict):
        raise UsageError("--params must be a JSON object")
    return params


def run_check_command(args: argparse.Namespace) -> int:
    if (args.strategy is None) == (args.exec_command is None):
        raise UsageError("name a strategy (built-in or package.module:Name) or give --exec CMD, not both")
    if args.examples < 1:
        raise UsageError("--examples must be at least 1")
    declaration = builtin_declaration(args.strategy).with_overrides(
        model=args.model,
        balance_bound=args.balance_bound,
        stickiness_bound=args.stickiness_bound,
        machine_room=args.machine_room,
        pop_inner=strategy_class(args.pop_inner).JAVA_NAME if args.pop_inner else None,
        params=_params(args.params),
    )
    if args.exec_command is not None:
        strategy = ExecStrategyUnderTest(args.exec_command, timeout=args.timeout)
    else:
        try:
            strategy = load_python(args.strategy)
        except LoadError as exc:
            raise UsageError(str(exc)) from None
    if args.shrink_seconds <= 0:
        raise UsageError("--shrink-seconds must be > 0")
    cfg = CheckSettings(examples=args.examples, seed=_seed(args.seed), properties=tuple(args.property),
                        shrink_seconds=args.shrink_seconds)
    try:
        with Ticker("strategy check", "properties", quiet=args.json) as ticker:
            report = run_check(strategy, declaration, cfg, on_property=ticker.phase)
    except ValueError as exc:  # a --property that does not apply
        raise UsageError(str(exc)) from None
    except ProtocolError as exc:
        raise UsageError(str(exc)) from None
    finally:
        strategy.close()
    if args.json:
        print(json.dumps(report_json(report), indent=2, ensure_ascii=False))
    else:
        render_text(report, Console(highlight=False))
    return report.exit_code


def run_list(args: argparse.Namespace) -> int:
    table = Table(title="built-in allocation strategies")
    table.add_column("name")
    table.add_column("RocketMQ")
    table.add_column("promises")
    for name in BUILTIN_NAMES:
        table.add_row(name, strategy_class(name).JAVA_NAME, BUILTIN_DECLARATIONS[name].describe())
    Console().print(table)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    try:
        strategy = load_python(args.strategy)
    except LoadError as exc:
        raise UsageError(str(exc)) from None
    return serve(strategy, sys.stdin.buffer, sys.stdout.buffer)
