"""Broker permit details: the cursor, batch entries, trace rows, refusals that change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from properties.harness import SMALL_STORE
from reference.broker.broker import Broker
from reference.broker.permits.batch import encode_batch, entry_bodies, split_batch
from reference.broker.permits.protocol import InitialPosition, Position, RecordingPermitChannel, SubType
from reference.clock import SimClock
from reference.rules.errors import InvalidRequest
from reference.rules.trace_schema import missing_columns
from reference.sim.engine import scratch_dir
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import MemorySink, Trace

S, T = "S", "T"


@contextmanager
def permit_broker() -> Iterator[tuple[Broker, SimClock, MemorySink, str]]:
    clock, sink = SimClock(), MemorySink()
    with scratch_dir("mqtck-permittest-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE), trace=Trace(sink, "t", clock))
        broker.create_topic(T, 2)
        broker.start()
        try:
            yield broker, clock, sink, tmp
        finally:
            broker.shutdown()


def test_batch_encoding_round_trip() -> None:
    bodies = [b"", b"a", b"\x00" * 300]
    body, props = encode_batch(bodies)
    assert split_batch(body, int(props["NUM_MESSAGES_IN_BATCH"])) == bodies
    one, one_props = encode_batch([b"only"])
    assert entry_bodies(one, one_props) == [b"only"], "a batch of one is still a batch"
    assert entry_bodies(b"alone", {}) == [b"alone"]


@pytest.mark.req("FLOW-9", "FLOW-1.refusal")
def test_flow_and_dispatch_rows_and_refusals_that_change_nothing() -> None:
    with permit_broker() as (broker, _clock, sink, _):
        channel = RecordingPermitChannel("c1")
        broker.subscribe_permits(S, T, "c1", channel, "Exclusive", 1, InitialPosition.EARLIEST)
        body, props = encode_batch([b"a", b"b", b"c"])
        sent = broker.send(Message(T, body, 1, properties=props))
        broker.flow(S, "c1", T, 2)
        rows = len(sink.rows)
        for bad, field in ((0, "messagePermits"), (-3, "messagePermits"), (2**32, "messagePermits"),
                           (True, "messagePermits"), ("5", "messagePermits")):
            with pytest.raises(InvalidRequest) as err:
                broker.flow(S, "c1", T, bad)  # type: ignore[arg-type]
            assert err.value.field == field and err.value.code == "INVALID_PERMITS"
        for group, client, topic in (("Nope", "c1", T), (S, "nobody", T), (S, "c1", "Other")):
            with pytest.raises(InvalidRequest) as err:
                broker.flow(group, client, topic, 5)
            assert err.value.code == "CONSUMER_NOT_FOUND"
        assert len(sink.rows) == rows, "a refused FLOW records nothing"
        assert broker.permits.consumer(S, "c1", T).permits == -1 and len(channel.messages) == 3, "a batch is sent whole"
        broker.flow(S, "c1", T, 4)
        flows = sink.of("FLOW")
        assert [r["count"] for r in flows] == [2, 4]
        dispatch = sink.of("DISPATCH")
        assert [r["msg_id"] for r in dispatch] == [f"{sent.unique_id}#{i}" for i in range(3)]
        assert [json.loads(r["detail"])["permits"] for r in dispatch] == [-1, -1, -1]
        assert broker.permits.consumer(S, "c1", T).permits == 3
        assert all(r["offset"] == 0 and r["queue_id"] == 1 for r in dispatch)
        for r in flows + dispatch:
            assert missing_columns(r) == []


@pytest.mark.req("FLOW-4")
def test_subscribe_refusals() -> None:
    with permit_broker() as (broker, _clock, _sink, _):
        channel = RecordingPermitChannel("c")
        broker.subscribe_permits(S, T, "c1", channel, "Shared")
        for args, code in (
            ((S, T, "c1", channel, "Shared"), "CONSUMER_BUSY"),
            ((S, T, "c2", channel, "Exclusive"), "SUBSCRIPTION_MISMATCH"),
            ((S, T, "c2", channel, "Shared", 1), "SUBSCRIPTION_MISMATCH"),
            ((S, T, "c2", channel, "Key_Shared"), "INVALID_ARGUMENT"),
            ((S, "NoTopic", "c2", channel), "TOPIC_NOT_EXIST"),
            ((S, T, "", channel), "INVALID_ARGUMENT"),
            (("bad name", T, "c2", channel), "INVALID_ARGUMENT"),
            ((S, T, "c2", channel, "Shared", 9), "INVALID_ARGUMENT"),
        ):
            with pytest.raises(InvalidRequest) as err:
                broker.subscribe_permits(*args)
            assert err.value.code == code, (args, err.value)
        assert [c.client_id for c in broker.permits.subscriptions[(S, T)].dispatcher.consumers] == ["c1"]


@pytest.mark.req("FLOW-10", "FLOW-2")
def test_cursor_mark_delete_with_batches() -> None:
    with permit_broker() as (broker, _clock, _sink, _tmp):
        channel = RecordingPermitChannel("c")
        broker.subscribe_permits(S, T, "c1", channel, SubType.EXCLUSIVE, 0, InitialPosition.EARLIEST)
        body, props = encode_batch([b"a", b"b"])
        broker.send(Message(T, body, 0, properties=props))
        broker.send(Message(T, b"single", 0))
        broker.flow(S, "c1", T, 10)
        cursor = broker.permits.subscriptions[(S, T)].cursor
        assert [m.position for m in channel.messages] == [Position(0, 0), Position(0, 1), Position(1, 0)]
        broker.ack_permits(S, "c1", T, [Position(0, 1), Position(1, 0)])
        assert cursor.mark_delete == 0, "the batch is not fully acknowledged"
        assert broker.ack_permits(S, "c1", T, [Position(0, 1), Position(7, 0)]) == 0, "duplicates and unknowns"
        broker.ack_permits(S, "c1", T, [Position(0, 0)])
        assert cursor.mark_delete == 2 and broker.offsets.query_offset(S, T, 0) == 2


def test_subscription_starts_latest_by_default_and_resumes_after_restart() -> None:
    clock = SimClock()
    with scratch_dir("mqtck-permittest-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE))
        broker.create_topic(T, 1)
        broker.start()
        broker.send(Message(T, b"before", 0))
        channel = RecordingPermitChannel("c")
        broker.subscribe_permits(S, T, "c1", channel)
        broker.flow(S, "c1", T, 5)
        assert channel.messages == [], "Latest: a new subscription starts after what is there"
        broker.send(Message(T, b"after", 0))
        broker.send(Message(T, b"unacked", 0))
        broker.ack_permits(S, "c1", T, [channel.messages[0].position])
        broker.shutdown()
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE))
        broker.start()
        channel = RecordingPermitChannel("c")
        broker.subscribe_permits(S, T, "c1", channel)
        broker.flow(S, "c1", T, 5)
        assert [m.body for m in channel.messages] == [b"unacked"], "resumed at the committed mark-delete position"
        broker.shutdown()
