"""``mqtck record`` between a remoting client and ``mqtck broker --remoting``: what the wire shows becomes the
trace rows the broker itself records, nothing a client sends is changed, and a malformed stream harms no one."""

from __future__ import annotations

import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

from conformance.record.process import RecorderProcess
from conformance.targets.remoting import RemotingTarget
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.rules.trace_schema import missing_columns

#: Fields of a row both recorders know (the recorder's timestamps and seqs are its own).
COMPARED = ("event", "group", "topic", "queue_id", "offset", "msg_id", "tags", "status", "next_offset", "min_offset",
            "max_offset", "count", "max_nums", "suspend_ms", "expression", "model")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _workload(front: str) -> None:
    target = RemotingTarget(front)
    try:
        target.create_topic("T", 2)
        for i in range(3):
            target.send("T", 0, b"m%d" % i, tags="A" if i % 2 == 0 else "B")
        target.heartbeat("c1", "client-1", "G", {"T": "A"})
        assert len(target.start_pull("G", "T", 0, 0, expression="A").result().messages) == 2
        target.commit_offset("G", "T", 0, 3)
        target.start_pull("G", "T", 0, 3, expression="A", suspend_ms=1_000).result()  # held, then not found
        target.start_pull("G", "T", 0, 9).result()  # past the max: corrected
        target.unregister("c1", "G")
    finally:
        target.close()


def test_the_recorded_trace_is_the_brokers_own_view(remoting_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    own = tmp_path / "own.jsonl"
    server = remoting_broker("--trace", str(own))
    recorded = tmp_path / "recorded.jsonl"
    recorder = RecorderProcess(server.namesrv, recorded, run="wire")
    _workload(recorder.front)
    summary = recorder.stop()
    server.stop()
    rows = _rows(recorded)
    assert rows and all(not missing_columns(r) for r in rows), [r for r in rows if missing_columns(r)][:3]
    assert {r["source"] for r in rows} == {"broker:broker-a"} and {r["run"] for r in rows} == {"wire"}
    events = Counter(r["event"] for r in rows)
    assert events == Counter({"SEND": 3, "PULL_REQ": 3, "PULL_RESP": 3, "COMMIT": 1, "SUBSCRIBE": 1,
                              "UNSUBSCRIBE": 1, "END": 1}), events
    assert summary["rows"] == {k: v for k, v in sorted(events.items()) if k != "END"}
    assert summary["malformed_frames"] == 0 and "GET_ROUTEINFO_BY_TOPIC" in summary["passed_unrecorded"]
    held = next(r for r in rows if r["event"] == "PULL_RESP" and r["offset"] == 3)
    assert held["status"] == "OFFSET_OVERFLOW_ONE" and held["held_ms"] >= 900

    def comparable(rs: list[dict[str, Any]], event: str) -> list[tuple]:
        return [tuple(r.get(k) for k in COMPARED) for r in rs if r["event"] == event]

    theirs = _rows(own)
    for event in ("SEND", "PULL_REQ", "PULL_RESP", "COMMIT"):
        assert comparable(rows, event) == comparable(theirs, event), event


def test_a_broken_stream_is_passed_on_and_harms_no_other_client(remoting_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = remoting_broker()
    recorded = tmp_path / "recorded.jsonl"
    recorder = RecorderProcess(server.namesrv, recorded, run="wire")
    host, port = recorder.front.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as bad:
        bad.sendall(b"\x00\x00\x00\x02??")  # a length no frame can have: the framing is lost for good
        bad.settimeout(5)
        assert bad.recv(1) == b"", "the name server closed the broken connection, and the proxy with it"
    with socket.create_connection((host, int(port)), timeout=5) as odd:
        header = b'{"code":105,"opaque":1,"flag":0'  # a frame whose header is not JSON: passed on, counted
        odd.sendall((4 + len(header)).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header)
    _workload(recorder.front)
    summary = recorder.stop()
    assert summary["malformed_frames"] == 2
    assert summary["rows"]["SEND"] == 3, "the other client's traffic was recorded as usual"


def test_a_commit_sent_just_before_the_client_closes_is_recorded(remoting_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The Go client sends its offset commits as ordinary two-way requests, ignores the answers, and closes its
    connections right after its shutdown's persist: the broker applies the commit, and the recorder (which writes
    such a COMMIT from the broker's SUCCESS answer) must still read that answer after the client has gone. Found
    recording rocketmq-client-go v2.1.2 against RocketMQ 4.9.7: the shutdown commits were applied but missing."""
    server = remoting_broker()
    recorded = tmp_path / "recorded.jsonl"
    recorder = RecorderProcess(server.namesrv, recorded, run="wire")
    target = RemotingTarget(recorder.front)
    try:
        target.create_topic("T", 1)
        target.heartbeat("c1", "client-1", "G", {"T": "*"})
        broker_front, group, topic = target.broker_addr, target.namespaced("G"), target.namespaced("T")
    finally:
        target.close()
    for offset in range(1, 6):  # a few times: the answer races the close
        client = RemotingClient(broker_front)
        client.invoke_async(RequestCode.UPDATE_CONSUMER_OFFSET,
                            {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": str(offset)})
        client.close()  # at once, as the Go client does at shutdown
    recorder.stop()  # right away too: the recording still waits for the last answer
    server.stop()
    commits = [r["offset"] for r in _rows(recorded) if r["event"] == "COMMIT"]
    assert commits == [1, 2, 3, 4, 5]


def test_a_broker_front_whose_port_was_taken_draws_another_before_clients_are_given_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A free port can be taken between the check and the bind (another process picking ports from the same range):
    the front must not be handed to clients until both its ports listen. Two recorded runs at once lost every send
    to a front whose bind had failed."""
    import asyncio

    from conformance.record import proxy as proxy_module
    from conformance.record.proxy import VIP_CHANNEL_OFFSET, RecordingProxy
    from conformance.record.wire import WireRecorder

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        spare = probe.getsockname()[1]
    while spare + VIP_CHANNEL_OFFSET == busy or spare == busy:
        spare += 7
    drawn = iter([busy, spare])
    monkeypatch.setattr(proxy_module, "free_port", lambda host, neighbours=(): next(drawn))

    async def open_front() -> tuple[str, list[int]]:
        proxy = RecordingProxy(("127.0.0.1", 0), ("127.0.0.1", 1), WireRecorder.__new__(WireRecorder))
        await asyncio.gather(proxy._front_for("127.0.0.1:9876", "broker-a"),
                             proxy._front_for("127.0.0.1:9876", "broker-a"))
        listening = []
        for port in (spare, spare + VIP_CHANNEL_OFFSET):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            listening.append(port)
        front = proxy.fronts["127.0.0.1:9876"]
        for server in proxy._servers:
            server.close()
        return front, listening

    try:
        front, listening = asyncio.run(open_front())
    finally:
        taken.close()
    assert front == f"127.0.0.1:{spare}" and listening == [spare, spare + VIP_CHANNEL_OFFSET]
