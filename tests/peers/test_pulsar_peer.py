"""Apache Pulsar 4.0.7 standalone (pulsar-broker from Maven Central) as a peer, and what it does with the permits of
its own clients (issue 39): the Java client (pulsar-client 4.0.7, Maven Central) and the Python client (PyPI
pulsar-client 3.13, libpulsar C++ 4.2.0) run the same round trip (:mod:`conformance.peers.pulsar_observe`), and the
broker's topic stats say what it dispatched. These are the observations docs/pulsar-peer.md quotes: a batch is never
split, so a consumer's permits go negative (FLOW-2 as the seed has it), and the first redelivery carries count 1
(FLOW-6 as the seed has it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.peers import peer_info
from conformance.peers.pulsar import PulsarPeer, served
from conformance.peers.pulsar_observe import BATCH, CONSUMERS, MESSAGES, NACKS, QUEUE, observe

PEER = "pulsar-4.0.7"


@pytest.fixture(scope="module")
def peer() -> Iterator[PulsarPeer]:
    with served(peer_info(PEER)) as running:
        yield running


@pytest.fixture(scope="module")
def observed(peer: PulsarPeer) -> dict[str, dict[str, Any]]:
    """Each client's round trip, once, against the module's standalone."""
    return {client: observe(peer, client) for client in ("python", "java")}


def test_peer_run_serves_the_standalone_on_loopback_until_sigterm() -> None:
    """``mqtck peer run`` prints one ready line with the binary protocol's address, answers a topic lookup on its
    REST API with that address, and on SIGTERM exits 0 with the JVM gone (its port closed)."""
    with subprocess.Popen([sys.executable, "-m", "conformance.cli", "peer", "run", PEER], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            ready = proc.stdout.readline().split()
            assert ready[0] == "ready" and ready[1].startswith("pulsar://127.0.0.1:"), ready
            words = proc.stderr.readline().split()
            admin = words[words.index("admin") + 1].rstrip(",")
            with urllib.request.urlopen(f"{admin}/lookup/v2/topic/persistent/public/default/t", timeout=10) as r:
                assert json.load(r)["brokerUrl"] == ready[1]
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
    port = int(ready[1].rpartition(":")[2])
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=2)


@pytest.mark.req("FLOW-2")
@pytest.mark.parametrize("client", ["python", "java"])
def test_a_batch_is_never_split_so_permits_go_negative(observed: dict[str, dict[str, Any]], client: str) -> None:
    """Receiver queues of 10, batches of 4: each consumer is sent three whole batches (12 messages) for its 10
    permits, leaving -2; every batch reaches one consumer whole, and every message is delivered once."""
    doc = observed[client]
    for consumer in doc["broker_after_produce"]:
        assert consumer["msgOutCounter"] == 12 and consumer["availablePermits"] == QUEUE - 12, consumer
    assert doc["received"] == MESSAGES and doc["entries"] == MESSAGES // BATCH
    assert doc["messages_per_entry"] == {BATCH: MESSAGES // BATCH}
    assert doc["entries_split_across_consumers"] == []


@pytest.mark.req("FLOW-7")
@pytest.mark.parametrize("client", ["python", "java"])
def test_each_client_grants_its_queue_then_what_the_application_took(observed: dict[str, dict[str, Any]],
                                                                     client: str) -> None:
    """Before the application takes anything, the broker holds exactly one receiver queue of permits per consumer
    (dispatched + available = 10); once all is drained, each consumer has granted its queue plus one refill of half a
    queue for every half queue the application took (a remainder below half is not granted yet), with nothing
    unacknowledged."""
    doc = observed[client]
    half = QUEUE // 2
    assert len(doc["broker_after_drain"]) == CONSUMERS
    for consumer in doc["broker_after_produce"]:
        assert consumer["msgOutCounter"] + consumer["availablePermits"] == QUEUE
    for consumer in doc["broker_after_drain"]:
        taken = doc["received_per_consumer"][consumer["consumerName"]]
        assert consumer["msgOutCounter"] == taken
        assert doc["granted_by_flow"][consumer["consumerName"]] == QUEUE + taken // half * half, consumer
        assert consumer["unackedMessages"] == 0


@pytest.mark.req("FLOW-5", "FLOW-6")
@pytest.mark.parametrize("client", ["python", "java"])
def test_the_first_redelivery_carries_count_one_and_takes_a_permit(observed: dict[str, dict[str, Any]],
                                                                   client: str) -> None:
    """A message negatively acknowledged twice on a Shared subscription is delivered with redelivery counts 0, 1, 2;
    each of the three deliveries took a permit (the broker dispatched 3 messages and holds 10 - 3)."""
    doc = observed[client]
    assert doc["redelivery_counts"] == list(range(NACKS + 1))
    (consumer,) = doc["broker_after_nacks"]
    assert consumer["msgOutCounter"] == NACKS + 1 and consumer["availablePermits"] == QUEUE - (NACKS + 1)


def gate(*args: str) -> dict[str, Any]:
    """``mqtck gate ARGS --json``, which must exit 0: its summary."""
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "gate", *args, "--json"], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.req("FLOW-7", "FLOW-8")
@pytest.mark.parametrize("name", ["python-pulsar-client-3.13", "java-pulsar-client-4.0.7"])
def test_the_pulsar_clients_pass_their_gate_against_the_reference_front(name: str, tmp_path: Path) -> None:
    """Each client, run against ``mqtck broker --pulsar``, grants its receiver queue then half of it per FLOW (as
    the front's trace shows) and asks again for what it negatively acknowledged."""
    doc = gate(name, "--report-dir", str(tmp_path))
    assert {r["id"]: r["status"] for r in doc["requirements"]} == {"FLOW-7": "pass", "FLOW-8": "pass"}
    flows = doc["observed"]["flows"]
    assert flows["mqtck-flow"] == {f"c{i}": [QUEUE] + [QUEUE // 2] * 8 for i in range(CONSUMERS)}
    assert doc["observed"]["redelivery_counts"] == list(range(NACKS + 1))
    assert (tmp_path / "latest" / "summary.json").exists() and (tmp_path / "latest" / "junit.xml").exists()


@pytest.mark.req("FLOW-2", "FLOW-3", "FLOW-11")
def test_the_real_pulsar_gate_passes_flow_2_and_3_and_fails_flow_11_as_reviewed(tmp_path: Path) -> None:
    """``mqtck gate pulsar-4.0.7`` over pulsar://: batches are sent whole (FLOW-2 passes), an arrival reaches a
    consumer with permits (FLOW-3) and an entry is started beyond the permits (FLOW-11, the strict rule, an
    expected fail with its reviewed reason)."""
    doc = gate(PEER, "--only", "FLOW-2", "FLOW-3", "FLOW-11", "--report-dir", str(tmp_path))
    status = {r["id"]: r["status"] for r in doc["requirements"]}
    assert (status["FLOW-2"], status["FLOW-3"], status["FLOW-11"]) == ("pass", "pass", "expected-fail"), status
