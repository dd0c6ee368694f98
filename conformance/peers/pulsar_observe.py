"""What a real Apache Pulsar broker does with a real client's permits: the evidence behind FLOW-2 and FLOW-6.

One round trip (``conformance/peers/pulsar_client/``: the Java client's ``PulsarRoundTrip.java`` or the Python
client's ``python_roundtrip``) against the standalone peer (:mod:`conformance.peers.pulsar`): three consumers of a
Shared subscription with small receiver queues, a producer sending batches, everything drained and acknowledged,
then one message negatively acknowledged twice. At each of the program's phases the broker's own topic stats are
read (REST ``/admin/v2/persistent/.../stats``): per consumer ``availablePermits`` (what the FLOWs granted minus what
was dispatched; Pulsar lets it go negative rather than split a batch), ``msgOutCounter`` (messages dispatched) and
``unackedMessages``. The client reports each message's id (ledger, entry, batch index), which consumer got it and
its redelivery count.

Run it as ``python -m conformance.peers.pulsar_observe --client python|java`` (a JSON document on stdout);
docs/pulsar-peer.md quotes its output, tests/peers/test_pulsar_peer.py asserts it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conformance.peers import PeerError, peer_info
from conformance.peers.pulsar import PulsarPeer

#: The scenario's sizes: small receiver queues and batches that do not divide them, so that a batch straddles the
#: permits (3 batches of 4 for a queue of 10).
MESSAGES, BATCH, QUEUE, CONSUMERS, NACKS = 120, 4, 10, 3, 2
#: The round-trip programs beside the Java client's pom.
PROGRAMS_DIR = Path(__file__).resolve().parent / "pulsar_client"
#: The pulsar-client version the Java program runs on: the broker's (one release train).
JAVA_CLIENT_VERSION = "4.0.7"
#: How long the whole round trip may take (a JVM start, 120 messages, two 100 ms nacks).
ROUND_TRIP_TIMEOUT_S = 180.0
#: The round trip's phases, in order: where the observer reads the broker's stats.
PHASES = ("produced", "drained", "nacked")
#: How long the stats are polled for the dispatch to settle after the produce.
SETTLE_S = 10.0


def client_argv(client: str) -> list[str]:
    """The command that runs the round trip on ``client`` (``python`` or ``java``); PeerError if it cannot run."""
    if client == "python":
        if importlib.util.find_spec("pulsar") is None:
            raise PeerError("the Python client's round trip needs the PyPI package pulsar-client 3.13 in this Python "
                            "(in the dev extra: pip install 'pulsar-client==3.13.*')")
        return [sys.executable, "-m", "conformance.peers.pulsar_client.python_roundtrip"]
    if client == "java":
        from conformance.peers.java import java_program
        from conformance.peers.maven import pulsar_client_classpath, require_tool

        java = require_tool("java", "the Java client's round trip runs on it")
        program = java_program(PROGRAMS_DIR / "PulsarRoundTrip.java", pulsar_client_classpath(JAVA_CLIENT_VERSION),
                               f"pulsar-client {JAVA_CLIENT_VERSION}'s round trip")
        return [java, "-Xmx256m", *program]
    raise PeerError(f"--client {client!r}: expected python or java")


@dataclass
class RoundTrip:
    """What one client's round trip reported: each message of the shared subscription, and the nacked message's
    redelivery counts, delivery by delivery; ``phases`` are the phases it reached."""

    topic: str
    nack_topic: str
    received: list[dict[str, int | str]] = field(default_factory=list)
    nacks: list[int] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)


def run_round_trip(client: str, service_url: str, at_phase: Callable[[RoundTrip, str], None]) -> RoundTrip:
    """Run the round trip of ``client`` against ``service_url``; ``at_phase`` is called at each of its phases
    (``produced``, ``drained``, ``nacked``) before it goes on. PeerError if it stops short of the last."""
    stamp = time.strftime("%H%M%S")
    trip = RoundTrip(f"persistent://public/default/mqtck-flow-{client}-{stamp}",
                     f"persistent://public/default/mqtck-nack-{client}-{stamp}")
    env = dict(os.environ, MQTCK_PULSAR_URL=service_url, MQTCK_TOPIC=trip.topic, MQTCK_NACK_TOPIC=trip.nack_topic,
               MQTCK_MESSAGES=str(MESSAGES), MQTCK_BATCH=str(BATCH), MQTCK_QUEUE=str(QUEUE),
               MQTCK_CONSUMERS=str(CONSUMERS), MQTCK_NACKS=str(NACKS))
    with subprocess.Popen(client_argv(client), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        # A client that hangs (no broker answer) is killed: its stdout closes and the loop below ends.
        killer = threading.Timer(ROUND_TRIP_TIMEOUT_S, proc.kill)
        killer.start()
        try:
            for line in proc.stdout:
                doc = _line(line)
                if "received" in doc:
                    trip.received.append(doc["received"])
                elif "nack" in doc:
                    trip.nacks.append(int(doc["nack"]))
                elif "phase" in doc:
                    trip.phases.append(str(doc["phase"]))
                    at_phase(trip, trip.phases[-1])
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
        finally:
            killer.cancel()
            if proc.poll() is None:
                proc.kill()
    if trip.phases != list(PHASES):
        raise PeerError(f"the {client} round trip stopped after {trip.phases} (exit {proc.returncode})")
    return trip


def observe(peer: PulsarPeer, client: str) -> dict[str, object]:
    """Run the round trip of ``client`` against ``peer`` and return what both sides saw."""
    stats: dict[str, list[dict[str, object]]] = {}

    def read_stats(trip: RoundTrip, name: str) -> None:
        stats[name] = _settled(peer, trip.nack_topic, "mqtck-nack") if name == "nacked" else \
            _settled(peer, trip.topic, "mqtck-flow")

    trip = run_round_trip(client, peer.target, read_stats)
    return summarise(client, peer, stats, trip.received, trip.nacks, f"python -m {__name__} --client {client}")


def summarise(client: str, peer: PulsarPeer, stats: dict[str, list[dict[str, object]]],
              received: list[dict[str, int | str]], nacks: list[int], command: str) -> dict[str, object]:
    """The observations as one document: the broker's per-consumer counters at each phase, the permits each consumer
    was granted in all (dispatched + still available), how the batches were delivered, the redelivery counts."""
    per_entry: dict[tuple[int, int], list[dict[str, int | str]]] = defaultdict(list)
    for message in received:
        per_entry[(int(message["ledger"]), int(message["entry"]))].append(message)
    split = [f"{ledger}:{entry}" for (ledger, entry), parts in per_entry.items()
             if len({p["consumer"] for p in parts}) > 1]
    drained = {str(c["consumerName"]): c for c in stats["drained"]}
    return {
        "client": client, "broker": peer.info.name, "command": command,
        "scenario": {"messages": MESSAGES, "batch": BATCH, "receiver_queue": QUEUE, "consumers": CONSUMERS,
                     "subscription": "Shared", "nacks": NACKS},
        "broker_after_produce": stats["produced"],
        "broker_after_drain": stats["drained"],
        "broker_after_nacks": stats["nacked"],
        "granted_by_flow": {name: int(c["msgOutCounter"]) + int(c["availablePermits"])  # type: ignore[call-overload]
                            for name, c in sorted(drained.items())},
        "received": len(received),
        "received_per_consumer": dict(sorted(Counter(str(m["consumer"]) for m in received).items())),
        "entries": len(per_entry),
        "messages_per_entry": dict(Counter(len(parts) for parts in per_entry.values())),
        "entries_split_across_consumers": split,
        "redelivery_counts": nacks,
    }


def _consumers(peer: PulsarPeer, topic: str, subscription: str) -> list[dict[str, object]]:
    """The broker's counters of each consumer of ``subscription``, by consumer name."""
    subscriptions = peer.topic_stats(topic)["subscriptions"]
    consumers = subscriptions[subscription]["consumers"]  # type: ignore[index]
    keys = ("consumerName", "availablePermits", "msgOutCounter", "unackedMessages", "blockedConsumerOnUnackedMsgs")
    return sorted(({k: c.get(k) for k in keys} for c in consumers), key=lambda c: str(c["consumerName"]))


def _settled(peer: PulsarPeer, topic: str, subscription: str) -> list[dict[str, object]]:
    """The consumers' counters once they have stopped moving (two equal reads in a row): the dispatch after a produce,
    the client's grouped acknowledgements (sent every 100 ms) after a drain."""
    last: list[dict[str, object]] = []
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        now = _consumers(peer, topic, subscription)
        if now == last and all(int(c["msgOutCounter"]) > 0 for c in now):  # type: ignore[call-overload]
            return now
        last = now
        time.sleep(0.5)
    return last


def _line(line: str) -> dict[str, object]:
    try:
        doc = json.loads(line)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.peers.pulsar_observe",
                                     description="start the Pulsar standalone peer, run one client's round trip, "
                                                 "print what the broker and the client saw (JSON)")
    parser.add_argument("--client", choices=("python", "java"), default="python")
    parser.add_argument("--peer", default="pulsar-4.0.7")
    args = parser.parse_args(argv)
    try:
        with PulsarPeer(peer_info(args.peer)) as peer:
            doc = observe(peer, args.client)
            doc["peer_ready_after_s"] = round(peer.ready_after_s, 1)
            doc["peer_rss_mib_when_ready"] = peer.rss_bytes >> 20
    except PeerError as exc:
        print(f"pulsar_observe: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
