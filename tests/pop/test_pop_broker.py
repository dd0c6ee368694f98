"""Broker POP details that the Target interface does not reach: random start queue, retry-topic
order, queue locks, checkpoint buffering, the revive log, epochs, offset correction, trace rows."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from properties.harness import SMALL_STORE
from reference.broker.broker import Broker
from reference.broker.pop.checkpoint import PopCheckPoint, decode_checkpoint
from reference.broker.pop.config import PopConfig
from reference.broker.pop.keys import ACK_TAG, CK_TAG, REVIVE_GROUP, lock_key
from reference.broker.pop.protocol import PopMessageRequest, RecordingPopChannel
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE, ReceiptHandle
from reference.clock import SimClock
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest
from reference.rules.topics import FIRST_POP_TIME, pop_retry_topic
from reference.rules.trace_schema import missing_columns
from reference.sim.engine import scratch_dir
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import MemorySink, Trace

G, T = "G", "T"


@contextmanager
def pop_broker(queues: int = 2, seed: int = 7, **store: object) -> Iterator[tuple[Broker, SimClock, MemorySink]]:
    clock = SimClock()
    sink = MemorySink()
    with scratch_dir("mqtck-poptest-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**{**SMALL_STORE, **store}),
                        trace=Trace(sink, "t", clock), rng=random.Random(seed))
        broker.create_topic(T, queues)
        broker.start()
        try:
            yield broker, clock, sink
        finally:
            broker.shutdown()


def pop(broker: Broker, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000, poll_ms: int = 0,
        channel: RecordingPopChannel | None = None):  # type: ignore[no-untyped-def]
    return broker.pop(PopMessageRequest(G, T, queue_id, max_nums, invisible_ms, poll_ms, "*", "c1"),
                      channel or RecordingPopChannel("c"))


def next_random_q(broker: Broker) -> int:
    """The randomQ the broker's next pop will draw (a copy of its seeded random source)."""
    copy = random.Random()
    copy.setstate(broker.pop_service.processor.rng.getstate())
    return copy.randrange(100)


def revive_one(broker: Broker, clock: SimClock, queue_id: int = 0) -> str:
    """Store a message, pop it with a 1 s invisible time and let it be revived; returns its id."""
    msg_id = broker.send(Message(T, b"retry-me", queue_id, tags="A")).unique_id
    response = pop(broker, queue_id, invisible_ms=1_000)
    assert [m.msg_id for m in response.messages] == [msg_id]
    clock.advance(1_000 + 2_001)
    return msg_id


@pytest.mark.req("POP-2")
def test_all_queue_pop_starts_at_random_q_mod_queue_count() -> None:
    with pop_broker(queues=3) as (broker, _clock, _sink):
        for _ in range(6):
            for q in range(3):
                broker.send(Message(T, b"q%d" % q, q, tags="A"))
            expected = next_random_q(broker) % 3
            response = pop(broker, max_nums=1)
            assert [m.queue_id for m in response.messages] == [expected]
            pop(broker)  # take the rest


@pytest.mark.req("POP-3")
def test_retry_topic_first_one_pop_in_five_else_to_fill_the_batch() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        assert broker.store.topics().get(pop_retry_topic(G, T)) is None, "created on the first revive"
        seen = {True: 0, False: 0}
        for _ in range(40):
            revived = revive_one(broker, clock)
            fresh = broker.send(Message(T, b"fresh", 0, tags="A")).unique_id
            retry_first = next_random_q(broker) % 5 == 0
            one = pop(broker, max_nums=1)
            assert [m.msg_id for m in one.messages] == [revived if retry_first else fresh]
            assert one.messages[0].retry is retry_first
            seen[retry_first] += 1
            rest = pop(broker, max_nums=32)  # not full: the retry topic is read to fill it
            assert [m.msg_id for m in rest.messages] == [fresh if retry_first else revived]
            for m in one.messages + rest.messages:
                broker.ack(G, T, m.handle)
        assert seen[True] and seen[False], "both orders must have been exercised"
        assert broker.store.topics()[pop_retry_topic(G, T)] == 1


@pytest.mark.req("POP-8")
def test_a_locked_queue_is_skipped_and_counted_in_rest_num() -> None:
    with pop_broker(queues=2) as (broker, _clock, _sink):
        for i in range(3):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        locks = broker.pop_service.locks
        assert locks.try_lock(lock_key(T, G, 0))
        response = pop(broker)
        assert response.messages == () and response.rest_num == 3 and response.code == ResponseCode.POLLING_TIMEOUT
        locks.unlock(lock_key(T, G, 0))
        assert len(pop(broker).messages) == 3
        assert not any(locks.is_locked(lock_key(T, G, q)) for q in range(2)), "every lock released"


@pytest.mark.req("POP-5")
def test_pop_offset_below_the_min_offset_is_corrected() -> None:
    with pop_broker(queues=1, commit_log_segment_bytes=4_096, file_reserved_time_hours=0) as (broker, clock, _):
        for i in range(100):
            broker.send(Message(T, b"m%03d" % i, 0, tags="A"))
        broker.update_consumer_offset(G, T, 0, 0)
        broker.run_retention(manual=True)
        low = broker.store.get_min_offset_in_queue(T, 0)
        assert low > 0, "retention must have removed the first segments"
        response = pop(broker, 0, max_nums=2)
        assert [m.queue_offset for m in response.messages] == [low, low + 1]
        assert broker.offsets.query_offset(G, T, 0) == low, "the corrected offset is committed"


@pytest.mark.req("REVIVE-1")
def test_checkpoint_buffering_and_the_revive_log() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        log = broker.pop_service.revive_log

        def records() -> list[tuple[str, bytes]]:
            if not log.exists():
                return []
            out = []
            for q in range(broker.pop_service.config.revive_queue_num):
                result = broker.store.get_message(REVIVE_GROUP, log.topic, q, 0, 100, None)
                out += [(m.tags, m.body) for m in result.messages]
            return out

        for i in range(4):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        fully_acked = pop(broker, max_nums=1, invisible_ms=60_000).messages
        broker.ack(G, T, fully_acked[0].handle)
        kept = pop(broker, max_nums=2, invisible_ms=60_000).messages
        broker.ack(G, T, kept[1].handle)
        assert records() == [] and len(broker.pop_service.buffer.buffer) == 1, "in memory only"
        clock.advance(10_000)
        assert len(broker.pop_service.buffer.buffer) == 1, "10 s is the longest stay, not yet over"
        clock.advance(1)
        ((tag, body),) = records()
        ck, bits = decode_checkpoint(body)
        assert tag == CK_TAG and ck.num == 2 and bits == 0b10, "written with the ack it gathered"
        assert not broker.pop_service.buffer.buffer
        short = pop(broker, max_nums=1, invisible_ms=4_499).messages
        assert [t for t, _ in records()] == [CK_TAG, CK_TAG], "revive time < 4.5 s away: written at once"
        broker.ack(G, T, short[0].handle)
        assert [t for t, _ in records()] == [CK_TAG, CK_TAG, ACK_TAG], "an ack not matched in memory is logged"
        near = broker.send(Message(T, b"near", 0, tags="A"))
        (m,) = pop(broker, max_nums=1, invisible_ms=8_000).messages
        assert m.msg_id == near.unique_id and len(broker.pop_service.buffer.buffer) == 1
        clock.advance(8_000 - 3_000)
        assert len(broker.pop_service.buffer.buffer) == 1, "leaves when its revive time is closer than 3 s"
        clock.advance(1)
        assert not broker.pop_service.buffer.buffer and len(records()) == 4


@pytest.mark.req("REVIVE-4")
def test_checkpoints_of_an_earlier_epoch_or_of_gone_messages_revive_nothing() -> None:
    with pop_broker(queues=1) as (broker, clock, sink):
        clock.advance(5_000)
        broker.send(Message(T, b"new epoch", 0, tags="A"))
        service = broker.pop_service
        stale = PopCheckPoint(T, G, 0, 0, (0, 7), ("old-0", "old-7"), clock.now_ms() - 5_000, 1_000, 0, "broker-a")
        service.revive_log.append_checkpoint(stale, 0)
        service.revive.catch_up()
        assert service.revive.pending_count() == 1
        clock.advance(10_000)
        assert sink.of("REVIVE") == [] and service.revive.pending_count() == 0, (
            "a checkpoint older than its message, and one whose message does not exist, revive nothing"
        )
        fresh = PopCheckPoint(T, G, 0, 0, (0,), ("x",), clock.now_ms(), 1_000, 0, "broker-a")
        service.revive_log.append_checkpoint(fresh, 0)
        service.revive.catch_up()
        clock.advance(3_001)
        assert [r["offset"] for r in sink.of("REVIVE")] == [0], "the same offset popped in this epoch is revived"


@pytest.mark.req("PACK-2")
def test_receipt_handle_fields_and_parsing() -> None:
    with pop_broker(queues=2) as (broker, clock, _sink):
        broker.send(Message(T, b"a", 1, tags="A"))
        broker.send(Message(T, b"b", 1, tags="A"))
        clock.advance(123)
        first, second = pop(broker, 1, invisible_ms=9_000).messages
        h = ReceiptHandle.parse(second.handle)
        assert (h.start_offset, h.pop_time, h.invisible_time, h.retry, h.broker_name, h.queue_id, h.offset) == (
            0, clock.now_ms(), 9_000, False, "broker-a", 1, 1
        )
        assert 0 <= h.revive_queue_id < PopConfig().revive_queue_num
        assert ReceiptHandle.parse(h.encode()) == h
        for bad in ("", "1 2 3", "a b c d e f g h", "0 1 2 3 9 b 1 1", "0 1 2 3 0  1 1", "5 1 2 3 0 b 1 1", 17, None):
            with pytest.raises(InvalidRequest) as err:
                ReceiptHandle.parse(bad)
            assert err.value.code == INVALID_RECEIPT_HANDLE and err.value.field == "receiptHandle"


@pytest.mark.req("POP-9", "PACK-5")
def test_trace_rows_of_pop_ack_change_and_revive() -> None:
    with pop_broker(queues=2) as (broker, clock, sink):
        from reference.broker.pop.protocol import RecordingPopChannel as Channel
        from reference.broker.protocol import ConsumerData
        from reference.rules.filter import SubscriptionData

        broker.heartbeat(Channel("conn"), "c1", [ConsumerData(G, (SubscriptionData.parse(T, "*"),),
                                                               consume_type="CONSUME_POP")])
        broker.query_assignment(T, G, "c1")
        broker.query_assignment(T, G, "c1")  # unchanged: no new ASSIGN rows
        sent = broker.send(Message(T, b"x", 1, tags="A"))
        (m,) = pop(broker, invisible_ms=2_000).messages
        before = len(sink.rows)
        with pytest.raises(InvalidRequest):
            broker.ack(G, T, "garbage", "c1")
        with pytest.raises(InvalidRequest):
            broker.change_invisible_time(G, T, "garbage", 1_000, "c1")
        assert [r["event"] for r in sink.rows[before:]] == ["ACK"], "a refused ack is recorded with its code"
        assert sink.rows[-1]["status"] == INVALID_RECEIPT_HANDLE
        new = broker.change_invisible_time(G, T, m.handle, 1_000, "c1")
        assert ReceiptHandle.parse(new.handle).pop_time == clock.now_ms() + 1, (
            "changed in the millisecond of its pop: the new checkpoint takes the next one, to keep its own key"
        )
        clock.advance(1 + 1_000 + 2_001)
        (again,) = pop(broker).messages
        broker.ack(G, T, again.handle, "c1")
        rows = [r for r in sink.rows if r["event"] in ("ASSIGN", "POP", "ACK", "CHANGE_INVISIBLE", "REVIVE")]
        kinds = ["ASSIGN", "ASSIGN", "POP", "ACK", "CHANGE_INVISIBLE", "REVIVE", "POP", "ACK"]
        assert [r["event"] for r in rows] == kinds
        for r in rows:
            assert missing_columns(r) == [], r
        assign = rows[:2]
        assert [r["queue_id"] for r in assign] == [0, 1] and all(json.loads(r["detail"])["pop_all"] for r in assign)
        pop1, _refused, change, revive, pop2, ack = rows[2:]
        assert {r["msg_id"] for r in (pop1, change, revive, pop2, ack)} == {sent.unique_id}
        assert (pop1["topic"], pop1["queue_id"], pop1["offset"], pop1["reconsume_times"]) == (T, 1, 0, 0)
        assert json.loads(change["detail"])["new_handle"] == new.handle and change["invisible_ms"] == 1_000
        assert revive["reconsume_times"] == 1 and json.loads(revive["detail"])["retry_topic"] == pop_retry_topic(G, T)
        assert (pop2["topic"], pop2["queue_id"], pop2["offset"], pop2["reconsume_times"]) == (T, 1, 0, 1)
        assert json.loads(pop2["detail"])["retry_topic"] == pop_retry_topic(G, T)
        assert ack["status"] == "OK" and ack["handle"] == again.handle
        assert again.properties[FIRST_POP_TIME] == str(json.loads(revive["detail"])["pop_time"])


@pytest.mark.req("PACK-7")
def test_offset_moves_when_the_checkpoint_is_written_to_the_revive_log() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        for i in range(3):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        pop(broker, max_nums=3, invisible_ms=60_000)
        assert broker.offsets.query_offset(G, T, 0) == -1
        clock.advance(10_001)  # the checkpoint leaves memory: its unacked messages will be revived from the log
        assert broker.offsets.query_offset(G, T, 0) == 3


@pytest.mark.req("REVIVE-6")
def test_shutdown_writes_buffered_checkpoints() -> None:
    clock = SimClock()
    with scratch_dir("mqtck-poptest-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE))
        broker.create_topic(T, 1)
        broker.start()
        broker.send(Message(T, b"x", 0, tags="A"))
        (m,) = pop(broker, invisible_ms=60_000).messages
        assert len(broker.pop_service.buffer.buffer) == 1
        broker.shutdown()
        again = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE))
        again.start()
        assert again.pop_service.revive.pending_count() == 1
        assert pop(again).messages == (), "the message is still invisible after the restart"
        again.ack(G, T, m.handle)
        assert again.pop_service.revive.pending_count() == 0
        again.shutdown()


@pytest.mark.req("POP-10")
def test_bad_input_never_raises_anything_but_invalid_request() -> None:
    with pop_broker(queues=1) as (broker, _clock, sink):
        broker.send(Message(T, b"x", 0, tags="A"))
        (m,) = pop(broker).messages
        rows = len(sink.rows)
        for group, topic, handle in ((None, T, m.handle), (G, None, m.handle), (G, T, None), (G, T, 42),
                                     ("G2", T, m.handle), (G, "Nope", m.handle), ("", T, m.handle)):
            with pytest.raises(InvalidRequest):
                broker.ack(group, topic, handle)  # type: ignore[arg-type]
            with pytest.raises(InvalidRequest):
                broker.change_invisible_time(group, topic, handle, 1_000)  # type: ignore[arg-type]
        for bad_time in (0, -5, 12 * 3_600_000 + 1, "10"):
            with pytest.raises(InvalidRequest):
                broker.change_invisible_time(G, T, m.handle, bad_time)  # type: ignore[arg-type]
        assert all(r["event"] == "ACK" and r["status"] != "OK" for r in sink.rows[rows:])
        broker.ack(G, T, m.handle)  # still valid: nothing above changed it
