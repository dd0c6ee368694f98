"""The official client (PyPI ``rocketmq==0.4.4``, rocketmq-client-cpp 1.2.3) against ``mqtck broker --remoting``.

Skipped unless the client is installed (``tox -e interop-remoting``). Each scenario runs its own broker
subprocess recording a trace under one directory; the last test stops them all and audits the traces on
Spark (no violation allowed). The client's timers are real (rebalance 10 s, offset persist 5 s; an
ids-changed notification makes it rebalance at once): tests poll for conditions with generous deadlines.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

rocketmq_client = pytest.importorskip("rocketmq.client")

from reference.allocation.averagely import AllocateMessageQueueAveragely  # noqa: E402
from reference.allocation.message_queue import MessageQueue  # noqa: E402
from reference.net.remoting.command import RequestCode  # noqa: E402
from tests.interop.harness import BrokerProcess, home_for_client, wait_for  # noqa: E402

Message = rocketmq_client.Message
Producer = rocketmq_client.Producer
PushConsumer = rocketmq_client.PushConsumer
PullConsumer = rocketmq_client.PullConsumer
MessageModel = rocketmq_client.MessageModel
SendStatus = rocketmq_client.SendStatus
QUEUES = 4  # what the name server gives an auto-created topic

_brokers: list[BrokerProcess] = []


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("interop")
    (path / "traces").mkdir()
    old_home = os.environ.get("HOME")
    home_for_client(path / "home")
    yield path
    for broker in _brokers:
        broker.stop()
    if old_home is not None:
        os.environ["HOME"] = old_home


def start_broker(workdir: Path, name: str, *extra: str) -> BrokerProcess:
    broker = BrokerProcess(workdir, workdir / "traces", name, *extra)
    _brokers.append(broker)
    return broker


def producer(broker: BrokerProcess, group: str) -> Producer:
    p = Producer(group)
    p.set_namesrv_addr(broker.namesrv)
    p.start()
    return p


def message(topic: str, body: str, tags: str = "TagA", keys: str | None = None) -> Message:
    m = Message(topic)
    m.set_tags(tags)
    m.set_keys(keys or body)
    m.set_body(body)
    return m


class Received:
    """What every consumer's listener got: (instance, topic, queue id, queue offset, body)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[str, str, int, int, str]] = []

    def listener(self, instance: str):  # noqa: ANN201 - a callback for the C++ client
        def on_message(msg) -> None:  # noqa: ANN001
            with self.lock:
                self.rows.append((instance, msg.topic, msg.queue_id, msg.queue_offset, msg.body.decode()))
        return on_message

    def bodies(self, instance: str | None = None) -> set[str]:
        with self.lock:
            return {r[4] for r in self.rows if instance is None or r[0] == instance}

    def count(self) -> int:
        with self.lock:
            return len(self.rows)


def push_consumer(broker: BrokerProcess, group: str, topic: str, received: Received, instance: str,
                  model: MessageModel = MessageModel.CLUSTERING) -> PushConsumer:
    c = PushConsumer(group, message_model=model)
    c.set_namesrv_addr(broker.namesrv)
    c.set_instance_name(instance)
    c.set_thread_count(2)
    c.subscribe(topic, received.listener(instance))
    c.start()
    return c


def expected_split(topic: str, cids: list[str]) -> dict[str, list[int]]:
    """AllocateMessageQueueAveragely over the sorted queues and sorted client ids (§5.8)."""
    queues = sorted(MessageQueue(topic, "broker-a", q) for q in range(QUEUES))
    strategy = AllocateMessageQueueAveragely()
    return {cid: sorted(mq.queue_id for mq in strategy.allocate("G", cid, queues, sorted(cids))) for cid in cids}


def last_puller_per_queue(rows: list[dict], topic: str) -> dict[int, str]:
    owner: dict[int, str] = {}
    for row in rows:
        if row["event"] == "PULL_REQ" and row.get("topic") == topic:
            owner[row["queue_id"]] = row["client_id"]
    return owner


@pytest.mark.req("REMOTING-6", "REMOTING-8")
def test_producer_sends_single_orderly_and_batch(workdir: Path) -> None:
    broker = start_broker(workdir, "produce")
    p = producer(broker, "PG_PRODUCE")
    try:
        results = [p.send_sync(message("TopicP", f"single-{i}")) for i in range(6)]
        assert all(r.status == SendStatus.OK for r in results)
        assert len({r.msg_id for r in results}) == 6
        orderly = [p.send_orderly(message("TopicP", f"orderly-{i}"), 1) for i in range(3)]
        batch = p.send_batch([message("TopicP", f"batch-{i}", "TagC") for i in range(3)])
        big = p.send_sync(message("TopicP", "x" * 5000))  # deflated by the client, sysFlag 1
    finally:
        p.shutdown()
    assert [r.offset for r in orderly] == sorted(r.offset for r in orderly)
    assert batch.status == SendStatus.OK and big.status == SendStatus.OK
    got: dict[int, list[str]] = defaultdict(list)
    pull = PullConsumer("CG_PRODUCE_CHECK")
    pull.set_namesrv_addr(broker.namesrv)
    pull.start()
    try:
        for msg in pull.pull("TopicP"):
            got[msg.queue_id].append(msg.body.decode())
    finally:
        pull.shutdown()
    bodies = {b for queue in got.values() for b in queue}
    assert bodies == {f"single-{i}" for i in range(6)} | {f"orderly-{i}" for i in range(3)} | {
        f"batch-{i}" for i in range(3)} | {"x" * 5000}
    assert [b for b in got[1] if b.startswith("orderly")] == ["orderly-0", "orderly-1", "orderly-2"]
    batch_queue = [q for q, bs in got.items() if "batch-0" in bs][0]
    assert [b for b in got[batch_queue] if b.startswith("batch")] == ["batch-0", "batch-1", "batch-2"]


@pytest.mark.req("REMOTING-9", "REMOTING-11", "REMOTING-13")
@pytest.mark.parametrize("members", [1, 2, 3])
def test_clustering_consumers_consume_everything_with_the_averagely_split(workdir: Path, members: int) -> None:
    broker = start_broker(workdir, f"clustering-{members}")
    topic, group = "TopicC", f"CG_CLUSTER_{members}"
    p = producer(broker, "PG_C")
    received = Received()
    consumers = []
    try:
        sent = {f"m-{i}" for i in range(40)}
        for body in sorted(sent):
            p.send_sync(message(topic, body))
        instances = [f"c{i}" for i in range(members)]
        consumers = [push_consumer(broker, group, topic, received, name) for name in instances]
        wait_for(lambda: received.bodies() >= sent, "every message consumed")
        wait_for(lambda: len(broker.consumer_ids(group)) == members, "every member registered")
        cids = broker.consumer_ids(group)
        split = {cid.rsplit("@", 1)[1]: queues for cid, queues in expected_split(topic, cids).items()}

        def round_matches(round_no: int) -> bool:
            bodies = {}
            for q in range(QUEUES):
                body = f"probe-{round_no}-{q}"
                p.send_orderly(message(topic, body), q)
                bodies[body] = q
            wait_for(lambda: received.bodies() >= set(bodies), "a probe round consumed")
            with received.lock:
                seen = {(r[0], r[2]) for r in received.rows if r[4] in bodies}
            return all((inst, q) in seen for inst, qs in split.items() for q in qs) and len(seen) == QUEUES

        rounds = iter(range(1000))
        wait_for(lambda: round_matches(next(rounds)), "deliveries following the averagely split", step_s=0.5)
    finally:
        p.shutdown()
    broker.stop()
    for c in consumers:
        c.shutdown()
    owners = last_puller_per_queue(broker.rows(), topic)
    by_cid = defaultdict(list)
    for q, cid in owners.items():
        by_cid[cid].append(q)
    assert {cid: sorted(qs) for cid, qs in by_cid.items()} == {
        cid: qs for cid, qs in expected_split(topic, cids).items() if qs}


@pytest.mark.req("REMOTING-7")
def test_broadcasting_delivers_every_message_to_every_consumer(workdir: Path) -> None:
    broker = start_broker(workdir, "broadcasting")
    topic, group = "TopicB", "CG_BROADCAST"
    p = producer(broker, "PG_B")
    received = Received()
    instances = ["b0", "b1"]
    consumers = [push_consumer(broker, group, topic, received, name, MessageModel.BROADCASTING)
                 for name in instances]
    try:
        # A broadcasting consumer starts at the max offset: wait until both read live, then send.
        rounds = iter(range(1000))

        def both_live() -> bool:
            body = f"probe-{next(rounds)}"
            for q in range(QUEUES):
                p.send_orderly(message(topic, body), q)
            try:
                wait_for(lambda: all(body in received.bodies(i) for i in instances), "probe", timeout_s=2)
            except AssertionError:
                return False
            return True

        wait_for(both_live, "both broadcasting consumers reading live", step_s=0.2)
        sent = {f"b-{i}" for i in range(20)}
        for body in sorted(sent):
            p.send_sync(message(topic, body))
        wait_for(lambda: all(received.bodies(i) >= sent for i in instances), "every consumer got everything")
    finally:
        p.shutdown()
        for c in consumers:
            c.shutdown()


@pytest.mark.req("REMOTING-2")
def test_a_restarted_consumer_resumes_from_its_committed_offset(workdir: Path) -> None:
    broker = start_broker(workdir, "restart")
    topic, group = "TopicR", "CG_RESTART"
    p = producer(broker, "PG_R")
    try:
        first = {f"first-{i}" for i in range(20)}
        for body in sorted(first):
            p.send_sync(message(topic, body))
        received = Received()
        c = push_consumer(broker, group, topic, received, "r0")
        wait_for(lambda: received.bodies() >= first, "the first batch consumed")
        c.shutdown()  # persists the consume offsets (UPDATE_CONSUMER_OFFSET) before UNREGISTER_CLIENT
        asked = {q: {"consumerGroup": group, "topic": topic, "queueId": q} for q in range(QUEUES)}
        committed = {q: int(broker.broker(RequestCode.QUERY_CONSUMER_OFFSET, fields).ext_fields.get("offset", "-1"))
                     for q, fields in asked.items()}
        maxes = {q: int(broker.broker(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": q}).ext_fields["offset"])
                 for q in range(QUEUES)}
        assert committed == maxes
        second = {f"second-{i}" for i in range(20)}
        for body in sorted(second):
            p.send_sync(message(topic, body))
        again = Received()
        c = push_consumer(broker, group, topic, again, "r1")
        try:
            wait_for(lambda: again.bodies() >= second, "the second batch consumed after the restart")
        finally:
            c.shutdown()
    finally:
        p.shutdown()
    assert not again.bodies() & first, "the restarted consumer re-read messages below its committed offset"


@pytest.mark.req("REMOTING-9")
def test_a_member_added_mid_stream_takes_queues_and_nothing_is_lost(workdir: Path) -> None:
    broker = start_broker(workdir, "join")
    topic, group = "TopicJ", "CG_JOIN"
    p = producer(broker, "PG_J")
    received = Received()
    consumers = [push_consumer(broker, group, topic, received, "j0")]
    sent: set[str] = set()
    try:
        for i in range(30):
            body = f"j-{i}"
            p.send_sync(message(topic, body))
            sent.add(body)
        wait_for(lambda: received.count() >= 10, "the first member consuming")
        consumers.append(push_consumer(broker, group, topic, received, "j1"))
        i = 30
        while not received.bodies("j1") and i < 3000:
            body = f"j-{i}"
            p.send_sync(message(topic, body))
            sent.add(body)
            i += 1
        for j in range(i, i + 20):
            p.send_sync(message(topic, f"j-{j}"))
            sent.add(f"j-{j}")
        wait_for(lambda: received.bodies() >= sent, "every message consumed by the group")
        assert received.bodies("j1"), "the new member never got a queue"
    finally:
        p.shutdown()
        for c in consumers:
            c.shutdown()


@pytest.mark.req("REMOTING-6")
def test_pull_consumer_walks_queues_through_an_offset_moved_correction(workdir: Path) -> None:
    broker = start_broker(workdir, "pull-retention", "--segment-bytes", "4096", "--file-reserved-hours", "0")
    topic = "TopicPull"
    p = producer(broker, "PG_PULL")
    try:
        for i in range(120):
            p.send_sync(message(topic, f"p-{i:03d}-" + "z" * 150))
    finally:
        p.shutdown()
    assert broker.broker(RequestCode.DELETE_EXPIRED_COMMITLOG).code == 0
    mins = {q: int(broker.broker(RequestCode.GET_MIN_OFFSET, {"topic": topic, "queueId": q}).ext_fields["offset"])
            for q in range(QUEUES)}
    maxes = {q: int(broker.broker(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": q}).ext_fields["offset"])
             for q in range(QUEUES)}
    assert any(mins.values()), "retention removed nothing; the scenario needs a min offset above 0"
    PullConsumer.offset_table.clear()  # the binding keeps offsets in a class attribute
    pull = PullConsumer("CG_PULL")
    pull.set_namesrv_addr(broker.namesrv)
    pull.start()
    got: dict[int, list[int]] = defaultdict(list)
    try:
        for msg in pull.pull(topic, max_num=8):
            got[msg.queue_id].append(msg.queue_offset)
    finally:
        pull.shutdown()
    assert {q: got[q] for q in range(QUEUES)} == {q: list(range(mins[q], maxes[q])) for q in range(QUEUES)}
    broker.stop()
    rows = broker.rows()
    moved = [r for r in rows if r["event"] == "PULL_RESP" and r.get("status") == "OFFSET_TOO_SMALL"]
    assert {r["queue_id"] for r in moved} == {q for q in range(QUEUES) if mins[q] > 0}
    for r in moved:  # the client's next pull of that queue (rows are in broker order) starts at nextBeginOffset
        later = [x for x in rows[rows.index(r):] if x["event"] == "PULL_REQ" and x.get("queue_id") == r["queue_id"]]
        assert later and later[0]["offset"] == r["next_offset"] == mins[r["queue_id"]]


@pytest.mark.req("TRACE-1", "OFFSET-6")
def test_the_official_client_recorded_off_the_wire_audits_clean(workdir: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The producer and two push consumers talk to ``mqtck record`` instead of the name server: the trace it
    writes holds the broker's own SENDs, the pulls of both consumers under their client ids, and audits with
    no violation, judging offset correction and long polls and saying it cannot judge loss."""
    pytest.importorskip("pyspark")
    import json
    from types import SimpleNamespace

    from conformance.cli import main
    from conformance.record.process import RecorderProcess

    broker = start_broker(workdir, "recorded-upstream")
    recorded = workdir / "wire" / "recorded.jsonl"
    recorder = RecorderProcess(broker.namesrv, recorded)
    front = SimpleNamespace(namesrv=recorder.front)
    topic, group = "TopicW", "CG_WIRE"
    p = producer(front, "PG_W")  # type: ignore[arg-type]
    received = Received()
    consumers = []
    try:
        sent = {f"w-{i}" for i in range(30)}
        for body in sorted(sent):
            p.send_sync(message(topic, body))
        consumers = [push_consumer(front, group, topic, received, name) for name in ("w0", "w1")]  # type: ignore[arg-type]
        wait_for(lambda: received.bodies() >= sent, "every message consumed through the recorder")
        wait_for(lambda: len(broker.consumer_ids(group)) == 2, "both consumers registered")
    finally:
        for c in consumers:
            c.shutdown()
        p.shutdown()
    summary = recorder.stop()
    assert summary["rows"]["SEND"] == 30 and summary["malformed_frames"] == 0, summary
    rows = [json.loads(line) for line in recorded.read_text().splitlines()]
    own = {r["msg_id"]: r["offset"] for r in broker.rows() if r["event"] == "SEND" and r["topic"] == topic}
    assert {r["msg_id"]: r["offset"] for r in rows if r["event"] == "SEND"} == own
    pullers = {r["client_id"] for r in rows if r["event"] == "PULL_REQ" and r["topic"] == topic}
    assert len(pullers) == 2 and not any(c.startswith("unknown@") for c in pullers), pullers
    code = main(["audit", str(recorded), "--report-dir", str(workdir / "wire-audit")])
    out = capsys.readouterr().out
    assert code == 0, out
    audit = json.loads((workdir / "wire-audit" / "summary.json").read_text())
    cats = audit["runs"]["recorded"]["categories"]
    assert cats["bad-offset-correction"]["judged"] and cats["early-poll-return"]["judged"]
    assert not cats["lost"]["judged"] and "not judged, no CONSUME rows" in out


#: Frames that break the layout, each sent on its own connection: a short length, a length past 16 MiB, an
#: unknown serialize type, a header that is not JSON, one that is JSON but not an object, random bytes.
BAD_FRAMES = (
    b"\x00\x00\x00\x02??",
    b"\x7f\xff\xff\xff" + bytes(16),
    b"\x00\x00\x00\x08\x05\x00\x00\x02{}",
    b"\x00\x00\x00\x0a\x00\x00\x00\x06{code:",
    b"\x00\x00\x00\x09\x00\x00\x00\x05[1,2]",
)


def _send_bad(address: tuple[str, int], data: bytes) -> None:
    import socket

    with socket.create_connection(address, timeout=10) as bad:
        bad.sendall(data)
        bad.settimeout(1)  # random bytes may announce a frame longer than they are: the server waits for it
        try:
            while bad.recv(4096):
                pass  # the server closes this connection; whatever it says before is not our concern
        except OSError:
            pass


@pytest.mark.req("REMOTING-3")
def test_malformed_frames_on_other_connections_never_disturb_a_consuming_client(workdir: Path) -> None:
    """The official client keeps producing and consuming while other connections send the broker and the name
    server frames that break the layout: nothing it sent is lost and the server stays up."""
    import random

    broker = start_broker(workdir, "malformed")
    topic, group = "TopicM", "CG_MALFORMED"
    p = producer(broker, "PG_M")
    received = Received()
    consumer = push_consumer(broker, group, topic, received, "m0")
    rng = random.Random(20)
    try:
        sent = set()
        for round_no in range(3):
            batch = {f"m-{round_no}-{i}" for i in range(10)}
            for body in sorted(batch):
                p.send_sync(message(topic, body))
            sent |= batch
            host, port = broker.namesrv.rsplit(":", 1)
            for bad in (*BAD_FRAMES, rng.randbytes(64), rng.randbytes(4096)):
                _send_bad(broker.broker_addr, bad)
                _send_bad((host, int(port)), bad)
            wait_for(lambda want=frozenset(sent): received.bodies() >= want,
                     f"round {round_no} consumed next to the bad connections")
    finally:
        consumer.shutdown()
        p.shutdown()
    assert broker.proc.poll() is None, "the server is still up"
    assert "Traceback" not in (workdir / "malformed.stderr").read_text()


def test_zz_the_recorded_traces_audit_clean(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Last in the module: stop every broker (closing its trace) and audit all the traces on Spark."""
    pytest.importorskip("pyspark")
    from conformance.cli import main

    for broker in _brokers:
        broker.stop()
    assert _brokers, "no scenario ran"
    code = main(["audit", str(workdir / "traces"), "--report-dir", str(workdir / "audit")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no MUST violated" in out
