"""``mqtck bench strategy``: how fast ``mqtck strategy check`` runs, in-process and over the protocol.

Two figures:

* **examples/s** for a Python strategy: the whole property suite (``--examples`` per property,
  fixed seed) against a built-in or ``package.module:Name``, counting every example of every
  property (determinism included, with its twin process);
* **requests/s** over the exec protocol: ``--requests`` allocation requests from realistic groups
  (1-64 queues on 1-3 brokers, 1-40 consumers), sent to one long-running program, both one at a
  time (each waits for its answer: latency-bound) and a group at a time (pipelined, as the checker
  sends them). The program is ``--exec CMD``, or by default the strategy served by
  ``python -m conformance.strategy.serve``.

Goals on a 2-core machine (DESIGN.md: timing goals live in benches): the default check of a Python
strategy in at most 20 s, and at least 2,000 requests/s over the protocol, one at a time.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from conformance.strategy.engine import DEFAULT_EXAMPLES, CheckSettings, run_check
from conformance.strategy.execproc import ExecStrategyUnderTest
from conformance.strategy.loader import builtin_declaration, load_python
from conformance.strategy.model import Request
from conformance.strategy.scenario import ID_POOL, client_id
from reference.allocation import MessageQueue, sort_cid_all, sort_mq_all

HELP = "allocation strategy check speed: examples/s in-process, requests/s over the exec protocol"

TOPIC = "BenchTopic"
BROKERS = ("broker-a", "broker-b", "broker-c")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strategy", default="averagely",
                        help="built-in or package.module:Name for the in-process run (default averagely)")
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES,
                        help=f"examples per property (default {DEFAULT_EXAMPLES}, the default profile)")
    parser.add_argument("--requests", type=int, default=20_000, help="exec protocol requests (default 20000)")
    parser.add_argument("--exec", dest="exec_command", default=None, metavar="CMD",
                        help="program to measure (default: the strategy served by conformance.strategy.serve)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the check and the generated groups")


def _groups(count: int, seed: int) -> list[list[Request]]:
    """Realistic groups, each as its members' requests; ``count`` requests in all."""
    rng = random.Random(seed)
    groups: list[list[Request]] = []
    total = 0
    while total < count:
        brokers = BROKERS[: rng.randint(1, len(BROKERS))]
        queues = rng.randint(1, 64)
        mq_all = tuple(sort_mq_all({MessageQueue(TOPIC, rng.choice(brokers), i) for i in range(queues)}))
        cid_all = tuple(sort_cid_all({client_id(rng.randrange(ID_POOL)) for _ in range(rng.randint(1, 40))}))
        group = [Request("GID_bench", cid, mq_all, cid_all) for cid in cid_all][: count - total]
        groups.append(group)
        total += len(group)
    return groups


def _exec_rate(command: list[str] | str, groups: list[list[Request]], pipelined: bool) -> float:
    strategy = ExecStrategyUnderTest(command)
    try:
        strategy.allocate_many(groups[0][:1])  # start-up is not what is measured
        started = time.perf_counter()
        for group in groups:
            if pipelined:
                strategy.allocate_many(group)
            else:
                for request in group:
                    strategy.allocate_many([request])
        elapsed = time.perf_counter() - started
    finally:
        strategy.close()
    return sum(len(g) for g in groups) / elapsed


def run(args: argparse.Namespace) -> dict[str, Any]:
    python_strategy = load_python(args.strategy)
    try:
        report = run_check(python_strategy, builtin_declaration(args.strategy),
                           CheckSettings(examples=args.examples, seed=args.seed))
    finally:
        python_strategy.close()
    examples = sum(r.examples for r in report.results)
    command = args.exec_command or [sys.executable, "-m", "conformance.strategy.serve", args.strategy]
    groups = _groups(args.requests, args.seed)
    return {
        "parameters": {
            "strategy": args.strategy,
            "examples_per_property": args.examples,
            "requests": args.requests,
            "exec": args.exec_command or f"python -m conformance.strategy.serve {args.strategy}",
            "seed": args.seed,
        },
        "python": {
            "passed": report.passed,
            "properties": len(report.results),
            "examples": examples,
            "seconds": round(report.seconds, 3),
            "examples_per_s": round(examples / report.seconds, 1),
            "per_property": {r.name: {"examples": r.examples, "seconds": round(r.seconds, 3)}
                             for r in report.results},
        },
        "exec": {
            "groups": len(groups),
            "requests_per_s_one_at_a_time": round(_exec_rate(command, groups, pipelined=False), 1),
            "requests_per_s_pipelined": round(_exec_rate(command, groups, pipelined=True), 1),
        },
    }
