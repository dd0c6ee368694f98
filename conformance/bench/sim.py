"""``mqtck bench sim``: how many trace events per second the simulator produces, with a profile.

Runs one scenario of ``reference.sim``: ``--consumers`` push consumers share ``--queues`` queues while
a producer sends bursts of ``--burst`` messages every ``--interval-ms`` of virtual time until
``--events`` trace rows have been recorded (the rows are built in full and counted, or written with
``--sink jsonl:PATH``). ``--faults`` adds a crash, a join and a graceful leave every 200 bursts, so
the figure includes rebalancing. A second, smaller run under cProfile lists the functions with the
most own time.

Goals (issue 4; DESIGN.md: timing goals live in benches, not tests): >= 100 000 events/s, and a run
of 1 000 000 events in under 20 s.
"""

from __future__ import annotations

import argparse
import cProfile
import time
from typing import Any

from conformance.bench.profiling import top_functions
from reference.sim.network import NetworkConfig
from reference.sim.scenario import Scenario, SimConfig
from reference.sim.simulation import Simulation
from reference.sim.steps import Crash, Join, Leave, Produce, Step, timeline
from reference.trace import TraceSink, sink_for

HELP = "simulator throughput (trace events/s) with a cProfile summary"

#: Rows per message in a fault-free run: SEND, DELIVER, CONSUME, plus a share of the pull and commit
#: rows; used to size the scenario for --events.
EVENTS_PER_MESSAGE_ESTIMATE = 3.5
#: Events in the profiled run (profiling slows Python several-fold).
PROFILE_EVENTS = 100_000
PROFILE_TOP = 12
#: With --faults: a crash, a join and a leave every this many bursts.
FAULT_EVERY = 200


class CountingSink:
    """Counts rows (they are built in full by the recorders, then dropped)."""

    enabled = True

    def __init__(self) -> None:
        self.rows = 0

    def write(self, row: dict[str, Any]) -> None:
        self.rows += 1

    def close(self) -> None:
        pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000, help="trace rows to produce (default 1000000)")
    parser.add_argument("--consumers", type=int, default=4, help="consumers in the group (default 4)")
    parser.add_argument("--queues", type=int, default=16, help="queues of the topic (default 16)")
    parser.add_argument("--burst", type=int, default=256, help="messages per producer burst (default 256)")
    parser.add_argument("--interval-ms", type=int, default=100, help="virtual ms between bursts (default 100)")
    parser.add_argument("--faults", action="store_true", help="crash, join and leave consumers along the way")
    parser.add_argument("--sink", default="count", help="count (default) or jsonl:PATH (.jsonl or .jsonl.gz)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled run")


def scenario(args: argparse.Namespace, events: int) -> Scenario:
    bursts = max(1, round(events / EVENTS_PER_MESSAGE_ESTIMATE / args.burst))
    steps: list[Step | int] = []
    for i in range(bursts):
        steps += [Produce(args.burst), args.interval_ms]
        if args.faults and i % FAULT_EVERY == FAULT_EVERY - 1:
            steps += [Crash(i), Join(), Leave(i + 1), Join()]
    config = SimConfig(
        seed=args.seed, consumers=args.consumers, queues=args.queues, busy_max_ms=0,
        network=NetworkConfig(min_latency_ms=1, max_latency_ms=5), commit_log_segment_bytes=64 << 20,
        consume_queue_units_per_segment=300_000, min_settle_ms=10_000, stable_ms=0,
    )
    return Scenario(config, timeline(*steps))


def _sink(spec: str) -> TraceSink:
    if spec == "count":
        return CountingSink()
    if spec.startswith("jsonl:"):
        return sink_for(spec.split(":", 1)[1])
    raise SystemExit(f"--sink: expected 'count' or 'jsonl:PATH', got {spec!r}")


def run(args: argparse.Namespace) -> dict[str, object]:
    sink = _sink(args.sink)
    sim = Simulation(scenario(args, args.events), sink=sink)
    started = time.perf_counter()
    result = sim.run()
    seconds = time.perf_counter() - started
    out: dict[str, object] = {
        "parameters": {
            "events": args.events, "consumers": args.consumers, "queues": args.queues, "burst": args.burst,
            "interval_ms": args.interval_ms, "faults": args.faults, "sink": args.sink, "seed": args.seed,
        },
        "run": {
            "seconds": round(seconds, 3),
            "events": result.events,
            "events_per_s": round(result.events / seconds) if seconds else None,
            "messages_sent": result.sent,
            "virtual_seconds": round(result.sim_ms / 1000, 1),
            "settled": result.quiet,
        },
        "goals": {
            "events_per_s >= 100000": bool(seconds and result.events / seconds >= 100_000),
            "1M events < 20 s": bool(seconds and 1_000_000 * seconds / max(1, result.events) < 20),
        },
    }
    if not args.no_profile:
        profile = cProfile.Profile()
        profiled = Simulation(scenario(args, PROFILE_EVENTS), sink=CountingSink())
        profile.runcall(profiled.run)
        out["profile"] = {"events": PROFILE_EVENTS, "top": top_functions(profile, PROFILE_TOP)}
    return out
