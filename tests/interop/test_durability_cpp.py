"""Crash durability with the official client: ``mqtck broker --remoting`` killed with SIGKILL at random moments
while the C++ client (PyPI ``rocketmq==0.4.4``) sends, then restarted on the same data and ports (issue 20).

Each round the producer sends for a random 0.2-1.5 s, then the broker is killed mid-stream. After the last round
the broker is started once more and every queue is read back over the wire: every send the client saw SEND_OK
for is at the queue offset the broker acknowledged, with the bytes sent (none lost, none corrupt); queue
offsets are contiguous (no duplicated or missing record: the consume queue was rebuilt to match the commit log);
every record is one the client sent. With SYNC flush an acknowledged append is msync'ed first; with ASYNC it is
in the OS page cache, which a killed process does not take with it, so the loss window of a SIGKILL is 0
messages either way (a machine crash is what ASYNC loses to). ``MQTCK_SOAK_ROUNDS`` sets the rounds (CI 8 per
flush type; ``tox -e soak`` 50), ``MQTCK_DURABILITY_SEED`` the moments.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from pathlib import Path

import pytest

rocketmq_client = pytest.importorskip("rocketmq.client")

from conformance.targets.launch import launch_broker  # noqa: E402
from reference.broker.protocol import PullSysFlag  # noqa: E402
from reference.net.remoting.client import RemotingClient  # noqa: E402
from reference.net.remoting.command import RequestCode  # noqa: E402
from reference.net.remoting.message_codec import decode_records  # noqa: E402
from reference.rules.codes import ResponseCode  # noqa: E402
from tests.interop.harness import home_for_client  # noqa: E402

ROUNDS = int(os.environ.get("MQTCK_SOAK_ROUNDS", "8"))
TOPIC = "Durable"
QUEUES = 4  # what the name server gives an auto-created topic
SEGMENT = str(256 * 1024)  # small segments: kills land on segment rolls too
#: How often the flush window is sampled while the client sends.
SAMPLE_EVERY_S = 0.02
#: A record's bytes beside its body (header, topic, properties), roughly: to say the window in messages.
RECORD_OVERHEAD_BYTES = 150


class Sender:
    """The C++ producer sending numbered messages from a thread; what it saw acknowledged, by body."""

    def __init__(self, namesrv: str) -> None:
        self.producer = rocketmq_client.Producer("PG_DURABLE", timeout=3000)
        self.producer.set_namesrv_addr(namesrv)
        self.producer.start()
        self.acked: dict[str, int] = {}  # body -> the queue offset the broker acknowledged
        self.sent: set[str] = set()
        self.failed = 0
        self._n = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self._n += 1
            body = f"durable-{self._n}-" + "x" * (self._n % 700)
            message = rocketmq_client.Message(TOPIC)
            message.set_keys(f"k{self._n}")
            message.set_body(body)
            self.sent.add(body)
            try:
                result = self.producer.send_sync(message)
            except Exception:  # noqa: BLE001 - the broker was killed under it: not acknowledged
                self.failed += 1
                time.sleep(0.05)
                continue
            if result.status == rocketmq_client.SendStatus.OK:
                self.acked[body] = result.offset

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def shutdown(self) -> None:
        self.stop()
        self.producer.shutdown()


class FlushWindow:
    """Samples the broker's commit-log end and flushed offset (its control channel) while the client sends: what
    lies between them is what a machine crash (not a process kill) would lose, the ASYNC flush's loss window."""

    def __init__(self) -> None:
        self.samples = 0
        self.max_unflushed_bytes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, url: str) -> None:
        from conformance.targets.control import ControlClient, ControlError

        control = ControlClient(url.split("control=", 1)[1])

        def run() -> None:
            while not self._stop.wait(SAMPLE_EVERY_S):
                try:
                    described = control.describe()
                except ControlError:
                    return
                if described.commitlog_max_offset is not None and described.commitlog_flushed_offset is not None:
                    self.samples += 1
                    self.max_unflushed_bytes = max(self.max_unflushed_bytes, described.commitlog_max_offset
                                                   - described.commitlog_flushed_offset)

        self._stop.clear()
        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def figures(self, stored: dict[int, list[tuple[int, str]]]) -> dict[str, object]:
        records = sum(len(r) for r in stored.values())
        mean = sum(len(body) + RECORD_OVERHEAD_BYTES for r in stored.values() for _, body in r) / max(records, 1)
        return {"samples": self.samples, "max_unflushed_bytes": self.max_unflushed_bytes,
                "max_unflushed_messages": round(self.max_unflushed_bytes / mean, 1)}


def _read_all(broker_addr: str) -> dict[int, list[tuple[int, str]]]:
    """Every record of every queue, over the wire: queue id -> [(queue offset, body)]."""
    client = RemotingClient(broker_addr)
    out: dict[int, list[tuple[int, str]]] = {}
    try:
        for q in range(QUEUES):
            records: list[tuple[int, str]] = []
            offset = 0
            while True:
                r = client.invoke(RequestCode.PULL_MESSAGE, {
                    "consumerGroup": "CG_DURABLE_CHECK", "topic": TOPIC, "queueId": q, "queueOffset": str(offset),
                    "maxMsgNums": 32, "sysFlag": int(PullSysFlag.SUBSCRIPTION), "commitOffset": "0",
                    "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}, timeout_s=30)
                if r.code != ResponseCode.SUCCESS:
                    break
                for record in decode_records(r.body):
                    records.append((record.queue_offset, record.body.decode()))
                offset = int(r.ext_fields["nextBeginOffset"])
            out[q] = records
    finally:
        client.close()
    return out


def _route_broker(namesrv: str) -> str:
    from conformance.targets.remoting import discover_route

    return discover_route(namesrv)[0]


@pytest.mark.req("STORE-20", "STORE-26", "STORE-7")
@pytest.mark.parametrize("flush", ["SYNC", "ASYNC"])
def test_sigkill_rounds_under_the_cpp_client_lose_no_acknowledged_send(tmp_path: Path, flush: str) -> None:
    home_for_client(tmp_path / "home")
    rng = random.Random(int(os.environ.get("MQTCK_DURABILITY_SEED", "20261126")) + (flush == "ASYNC"))
    data = tmp_path / "store"
    flags = ("--segment-bytes", SEGMENT, "--flush-disk-type", flush, "--control")
    first = launch_broker("remoting", data, *flags)
    namesrv = first.address
    broker_addr = _route_broker(namesrv)
    ns_port, broker_port = namesrv.rsplit(":", 1)[1], broker_addr.rsplit(":", 1)[1]
    first.proc.kill()
    first.proc.wait(timeout=30)

    def start() -> object:
        return launch_broker("remoting", data, *flags, "--broker-port", broker_port, port=int(ns_port))

    broker = start()
    sender = Sender(namesrv)
    window = FlushWindow()
    kills = 0
    try:
        for _ in range(ROUNDS):
            sender.start()
            window.watch(broker.url)
            time.sleep(rng.uniform(0.2, 1.5))
            window.stop()
            broker.proc.kill()  # SIGKILL, mid-stream
            broker.proc.wait(timeout=30)
            kills += 1
            sender.stop()
            broker = start()
        sender.start()
        time.sleep(1.0)
        sender.stop()
        stored = _read_all(broker_addr)
    finally:
        sender.shutdown()
        err = broker.stop()
    assert "Traceback" not in err, err
    by_body: dict[str, list[tuple[int, int]]] = {}
    for q, records in stored.items():
        assert [o for o, _ in records] == list(range(len(records))), f"queue {q}: offsets not contiguous"
        for offset, body in records:
            assert body in sender.sent, f"queue {q} offset {offset}: bytes nobody sent (torn or corrupt)"
            by_body.setdefault(body, []).append((q, offset))
    lost = [b for b in sender.acked if b not in by_body]
    duplicated = [b for b, where in by_body.items() if len(where) > 1]
    misplaced = [b for b, offset in sender.acked.items() if b in by_body and offset not in {o for _, o in by_body[b]}]
    figures = {"flush": flush, "rounds_killed": kills, "acknowledged": len(sender.acked),
               "sends_failed_while_down": sender.failed, "stored": sum(len(r) for r in stored.values()),
               "lost": len(lost), "duplicated": len(duplicated), "misplaced": len(misplaced),
               "machine_crash_window": window.figures(stored)}
    print("durability:", json.dumps(figures))
    assert kills == ROUNDS and len(sender.acked) > ROUNDS, figures
    assert not lost and not duplicated and not misplaced, figures
    assert window.samples > 0, "the flushed offset was never read"
    if flush == "SYNC":  # an append is on the device before it is acknowledged: no window at all
        assert window.max_unflushed_bytes == 0, figures
