"""``mqtck bench diff``: how fast ``mqtck diff`` searches, and how soon it finds each seeded broker fault.

Controls (the reference against itself: any divergence is a bug of the kit): in-process, over remoting and over
HTTP, both wires on simulated time (``mqtck broker --sim-clock``), so that a sequence costs computation, not
waiting. Each reports sequences, steps, sequences/s, steps/s and the divergences (0 expected).

``--faults [NAME ...]``: every broker fault of the catalogue (or those named), served by a real server
(``mqtck broker --mutant NAME``), over remoting; the two permit faults over HTTP, whose dispatcher the RocketMQ
wire does not carry. For each: the sequences until the first divergence and the length of the shrunk program
(issue 17's goal: a median of at most 6 steps), and whether the divergence reproduced while shrinking.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from conformance.cliargs import UsageError
from conformance.diff.runner import Lockstep, SearchResult, open_pair, search
from conformance.mutants import CATALOGUE
from conformance.targets.launch import launch_broker

HELP = "mqtck diff's speed (controls in-process, over remoting and HTTP) and, with --faults, each broker fault found"
#: The store layout of the served brokers: small segments, so that retention steps delete something.
SEGMENT_FLAGS = ("--segment-bytes", "65536")
#: Broker faults the RocketMQ wire cannot carry (permits): served over HTTP instead.
HTTP_ONLY_FAMILY = "FLOW"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=int, default=1000, help="sequences per control, and at most per fault")
    p.add_argument("--seed", type=int, default=0, help="the search's seed (default 0)")
    p.add_argument("--max-steps", type=int, default=12, help="steps per sequence at most (default 12)")
    p.add_argument("--transports", default="reference,remoting,http",
                   help="controls to run, comma-separated (default reference,remoting,http; '' for none)")
    p.add_argument("--faults", nargs="*", metavar="NAME", default=None,
                   help="also serve broker faults of the catalogue and search each (no names: every one)")


def _search(target: str, args: argparse.Namespace, workdir: Path) -> SearchResult:
    a, b = open_pair(target, "reference", workdir)
    try:
        return search(Lockstep(a, b), a.capabilities & b.capabilities, args.examples, args.seed, args.max_steps)
    finally:
        a.close()
        b.close()


def _figures(result: SearchResult) -> dict[str, Any]:
    stats = result.stats
    elapsed = max(stats.elapsed_s, 1e-9)
    return {"sequences": stats.sequences, "steps": stats.steps, "elapsed_s": round(stats.elapsed_s, 1),
            "sequences_per_s": round(stats.sequences / elapsed, 2), "steps_per_s": round(stats.steps / elapsed, 1),
            "divergences": stats.divergences}


def _served(transport: str, workdir: Path, *flags: str) -> Any:
    extra = ("--control",) if transport == "remoting" else ()
    return launch_broker(transport, workdir / "data", *extra, "--sim-clock", *SEGMENT_FLAGS, *flags)


def _control(transport: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    if transport == "reference":
        return {"target": "reference", **_figures(_search("reference", args, workdir))}
    server = _served(transport, workdir)
    try:
        return {"target": f"{transport} (simulated time)", **_figures(_search(server.url, args, workdir))}
    finally:
        server.stop()


def _fault(name: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    transport = "http" if CATALOGUE[name].family == HTTP_ONLY_FAMILY else "remoting"
    server = _served(transport, workdir, "--mutant", name)
    try:
        result = _search(server.url, args, workdir)
    finally:
        server.stop()
    d = result.divergence
    return {"fault": name, "breaks": list(CATALOGUE[name].breaks), "over": transport,
            "first_divergence_at": result.stats.first_at, "shrunk_steps": None if d is None else d.index + 1,
            "step": None if d is None else d.step.kind, "reproduced": not result.flaky,
            "sequences": result.stats.sequences, "elapsed_s": round(result.stats.elapsed_s, 1)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    transports = [t for t in args.transports.split(",") if t]
    unknown = [name for name in args.faults or () if name not in CATALOGUE or not CATALOGUE[name].is_broker_fault]
    if unknown:
        raise UsageError(f"--faults: {', '.join(unknown)}: not a broker fault of the catalogue (mqtck broker --mutant)")
    out: dict[str, Any] = {"params": {"examples": args.examples, "seed": args.seed, "max_steps": args.max_steps,
                                      "transports": transports, "faults": args.faults}}
    # Each run gets a directory of its own, removed when it ends: a thousand sequences leave gigabytes of
    # preallocated consume-queue files, and a disk filling up changes what a real broker does.
    out["controls"] = []
    for transport in transports:
        print(f"mqtck bench diff: control {transport}", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="mqtck-bench-diff-") as tmp:
            out["controls"].append(_control(transport, args, Path(tmp)))
        print(f"mqtck bench diff: {json.dumps(out['controls'][-1])}", file=sys.stderr, flush=True)
    if args.faults is not None:
        faults = args.faults or sorted(name for name, mutant in CATALOGUE.items() if mutant.is_broker_fault)
        out["faults"] = []
        for i, name in enumerate(faults, 1):
            print(f"mqtck bench diff: fault {i}/{len(faults)} {name}", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory(prefix="mqtck-bench-diff-") as tmp:
                out["faults"].append(_fault(name, args, Path(tmp)))
            print(f"mqtck bench diff: {json.dumps(out['faults'][-1])}", file=sys.stderr, flush=True)
        found = [f["shrunk_steps"] for f in out["faults"] if f["shrunk_steps"] is not None]
        out["faults_found"] = f"{len(found)}/{len(faults)}"
        out["median_shrunk_steps"] = statistics.median(found) if found else None
    return out
