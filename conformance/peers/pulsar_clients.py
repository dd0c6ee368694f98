"""Apache Pulsar's clients as client peers: ``mqtck gate python-pulsar-client-3.13`` (PyPI pulsar-client, libpulsar
C++ 4.2.0) and ``mqtck gate java-pulsar-client-4.0.7`` (Maven Central org.apache.pulsar:pulsar-client) judged on the
client side of seed 003.

The client runs the round trip of :mod:`conformance.peers.pulsar_observe` (three consumers of a Shared subscription
with receiver queues of 10, batches of 4, then one message negatively acknowledged twice) against the reference
broker's Pulsar front (``mqtck broker --pulsar 127.0.0.1:0 --trace FILE``), whose trace has a FLOW row for every
FLOW the client sent (``count`` = the permits) and a DISPATCH row for every message sent. The verdicts come from those
rows alone:

* FLOW-7: each consumer's first FLOW grants its receiver queue (10), and every later FLOW half of it (5);
* FLOW-8: a negatively acknowledged message is asked for again: the broker dispatched it once per nack and once more.

What the client saw (its redelivery counts, the batches) is reported beside the verdicts: it is the broker's
conduct (FLOW-2, FLOW-6), judged by the conformance suite, not the client's.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.peers import PeerError, PeerInfo
from conformance.peers.pulsar_observe import CONSUMERS, NACKS, QUEUE, RoundTrip, run_round_trip

#: Client peer name -> the round trip's client.
CLIENTS = {"python-pulsar-client-3.13": "python", "java-pulsar-client-4.0.7": "java"}
#: The subscriptions of the round trip: the shared one of the batches, and the one of the nacked message.
FLOW_SUBSCRIPTION, NACK_SUBSCRIPTION = "mqtck-flow", "mqtck-nack"
#: How long the reference broker may take to print its serving line.
BROKER_START_S = 30.0
#: The requirements a Pulsar client's check proves.
JUDGED = ("FLOW-7", "FLOW-8")


@contextlib.contextmanager
def reference_broker(workdir: Path) -> Iterator[tuple[str, Path]]:
    """``mqtck broker --pulsar`` on a free loopback port with a trace, for as long as the block runs: yields the
    service URL and the trace file, complete once the block has ended (the broker is stopped with SIGTERM)."""
    trace = workdir / "trace.jsonl"
    argv = [sys.executable, "-m", "conformance.cli", "broker", "--pulsar", "127.0.0.1:0", "--data-dir",
            str(workdir / "store"), "--trace", str(trace)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        try:
            line = proc.stdout.readline()
            if "serving pulsar://" not in line:
                # It printed something else, or exited (its stdout closed): its error is on stderr.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(BROKER_START_S)
                err = proc.stderr.read() if proc.stderr is not None and proc.poll() is not None else ""
                said = (err.strip().splitlines() or [line.strip() or "no output"])[-1]
                raise PeerError(f"mqtck broker --pulsar did not start: {said[:300]}")
            yield line.split("serving ", 1)[1].split()[0], trace
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(BROKER_START_S)
                except subprocess.TimeoutExpired:
                    proc.kill()


def check(info: PeerInfo) -> dict[str, Any]:
    """Run client peer ``info``'s round trip against the reference's Pulsar front and judge its FLOWs."""
    client = CLIENTS.get(info.name)
    if client is None:
        raise PeerError(f"{info.name} is not a Pulsar client peer")
    workdir = Path(tempfile.mkdtemp(prefix=f"mqtck-{info.name}-"))
    try:
        with reference_broker(workdir) as (service_url, trace):
            trip = run_round_trip(client, service_url, lambda _trip, _phase: None)
        rows = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line.strip()]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"implementation": info.name, "client": client, "observed": observed(rows, trip),
            "requirements": judge(rows, trip)}


def flows_by_consumer(rows: list[dict[str, Any]], subscription: str) -> dict[str, list[int]]:
    """Each consumer's FLOW counts in order, by consumer name (the front's client id is ``NAME#connection/id``)."""
    flows: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        if row.get("event") == "FLOW" and row.get("group") == subscription:
            flows[str(row["client_id"]).split("#", 1)[0]].append(int(row["count"]))
    return dict(flows)


def dispatches(rows: list[dict[str, Any]], subscription: str) -> dict[str, int]:
    """How many times each message was dispatched on ``subscription``, by message id."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        if row.get("event") == "DISPATCH" and row.get("group") == subscription:
            counts[str(row.get("msg_id") or row.get("offset"))] += 1
    return dict(counts)


def judge(rows: list[dict[str, Any]], trip: RoundTrip) -> list[dict[str, Any]]:
    """FLOW-7 per consumer (first grant = receiver queue, later grants = half of it) and FLOW-8 (the nacked message
    dispatched once more per nack), as a conformance run reports requirements."""
    from conformance import spec

    half = QUEUE // 2
    tests: dict[str, list[dict[str, str]]] = {rid: [] for rid in JUDGED}
    for subscription in (FLOW_SUBSCRIPTION, NACK_SUBSCRIPTION):
        for name, counts in sorted(flows_by_consumer(rows, subscription).items()):
            wrong = counts[:1] != [QUEUE] or any(count != half for count in counts[1:])
            tests["FLOW-7"].append({"nodeid": f"{subscription}::{name}::flows",
                                    "outcome": "failed" if wrong else "passed",
                                    "message": f"FLOWs {counts}, expected [{QUEUE}, {half}, {half}, ...]"})
    granted = flows_by_consumer(rows, FLOW_SUBSCRIPTION)
    if len(granted) != CONSUMERS:
        tests["FLOW-7"].append({"nodeid": f"{FLOW_SUBSCRIPTION}::consumers", "outcome": "failed",
                                "message": f"FLOWs from {sorted(granted)}, expected {CONSUMERS} consumers"})
    sent = dispatches(rows, NACK_SUBSCRIPTION)
    tests["FLOW-8"].append({"nodeid": f"{NACK_SUBSCRIPTION}::redelivered",
                            "outcome": "passed" if list(sent.values()) == [NACKS + 1] else "failed",
                            "message": f"dispatches per message {sent}, expected one message {NACKS + 1} times "
                                       f"({NACKS} nacks)"})
    reqs = spec.requirements()
    return [{"id": rid, "level": reqs[rid].level, "family": reqs[rid].family, "sentence": reqs[rid].sentence,
             "source": reqs[rid].source, "tests": tests[rid],
             "status": "pass" if tests[rid] and all(t["outcome"] == "passed" for t in tests[rid]) else "fail"}
            for rid in JUDGED]


def observed(rows: list[dict[str, Any]], trip: RoundTrip) -> dict[str, Any]:
    """What the run showed besides the verdicts: the FLOWs, the messages each consumer took, the nacked message's
    redelivery counts as the client saw them."""
    taken: dict[str, int] = defaultdict(int)
    for message in trip.received:
        taken[str(message["consumer"])] += 1
    return {"flows": {sub: flows_by_consumer(rows, sub) for sub in (FLOW_SUBSCRIPTION, NACK_SUBSCRIPTION)},
            "received_per_consumer": dict(sorted(taken.items())), "redelivery_counts": trip.nacks,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def junit_xml(name: str, requirements: list[dict[str, Any]]) -> bytes:
    """The gate as JUnit XML: one case per judged consumer or message; every failure gates."""
    from conformance.report.junit import JUnitCase, testsuite_xml

    cases = [JUnitCase(f"{name}.{entry['id']}", test["nodeid"], properties=(("gates", "true"),),
                       failure=None if test["outcome"] == "passed" else (test["message"], test["message"]))
             for entry in requirements for test in entry["tests"]]
    return testsuite_xml(f"mqtck gate {name}", cases)
