"""POP clients: SimpleConsumer and the push consumer over POP, against an in-process broker."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from properties.harness import SMALL_STORE
from reference.broker.broker import Broker
from reference.client.pop.backoff import DEFAULT_BACKOFF_MS, backoff_ms
from reference.client.pop.connection import CONNECTION_REFUSED, TIMEOUT, ClientError, StaticHost
from reference.client.pop.push_consumer import CONSUME_LATER, CONSUME_OK, PopPushConfig, PopPushConsumer
from reference.client.pop.simple_consumer import SimpleConsumer
from reference.clock import SimClock
from reference.rules.codes import ResponseCode
from reference.sim.engine import scratch_dir
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import MemorySink, Trace

G, T = "G", "T"


@contextmanager
def broker_on(clock: SimClock, sink: MemorySink, queues: int = 2) -> Iterator[tuple[Broker, str]]:
    with scratch_dir("mqtck-popclient-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE), trace=Trace(sink, "t", clock),
                        rng=random.Random(3))
        broker.create_topic(T, queues)
        broker.start()
        try:
            yield broker, tmp
        finally:
            broker.shutdown()


@pytest.mark.req("PACK-4", "PACK-3")
def test_simple_consumer_receive_ack_and_change_invisible_duration() -> None:
    clock, sink = SimClock(), MemorySink()
    with broker_on(clock, sink) as (broker, _):
        consumer = SimpleConsumer(StaticHost(broker), clock, G, T, "simple-1")
        consumer.start()
        assert broker.consumer_ids(G) == ["simple-1"]
        for i in range(3):
            broker.send(Message(T, b"%d" % i, i % 2, tags="A"))
        got = consumer.receive(32, 10_000)
        assert sorted(m.body for m in got) == [b"0", b"1", b"2"] and consumer.receive(32, 10_000) == []
        consumer.ack(got[0])
        later = consumer.change_invisible_duration(got[1], 2_000)
        assert later.handle != got[1].handle and later.msg_id == got[1].msg_id
        with pytest.raises(ClientError) as err:
            consumer.ack(got[1])
        assert err.value.code == "INVALID_RECEIPT_HANDLE"
        clock.advance(2_000 + 2_001)
        (again,) = consumer.receive(32, 10_000)
        assert again.msg_id == got[1].msg_id and again.reconsume_times == 1
        consumer.ack(again)
        consumer.ack(got[2])
        clock.advance(60_000)
        assert consumer.receive(32, 10_000) == []
        consumer.close()
        assert broker.consumer_ids(G) == []


@pytest.mark.req("POP-6")
def test_simple_consumer_long_polling_and_client_timeout() -> None:
    clock, sink = SimClock(), MemorySink()
    with broker_on(clock, sink) as (broker, _):
        host = SimpleNamespace(broker=broker)  # the broker as the clients reach it
        consumer = SimpleConsumer(host, clock, G, T, "simple-1")
        answers: list = []
        consumer.receive_async(8, 10_000, 5_000, lambda r, e: answers.append((r, e)))
        clock.advance(1_000)
        assert answers == [], "held by the broker"
        broker.send(Message(T, b"x", 1, tags="A"))
        assert answers == [], "the answer is delivered on a later turn of the clock, never inline"
        clock.advance(0)
        ((response, error),) = answers
        assert error is None and [m.body for m in response.messages] == [b"x"] and response.held_ms == 1_000
        answers.clear()
        consumer.receive_async(8, 10_000, 5_000, lambda r, e: answers.append((r, e)))
        clock.advance(5_000)
        assert answers[0][0].code == ResponseCode.POLLING_TIMEOUT
        answers.clear()
        consumer.receive_async(8, 10_000, 5_000, lambda r, e: answers.append((r, e)))
        broker.pop_service.long_polling.shutdown()  # the broker goes down: its held pops die with it
        host.broker = None
        clock.advance(5_000 + 3_000)
        assert [e.code for _, e in answers] == [TIMEOUT]
        with pytest.raises(ClientError) as err:
            consumer.receive(1, 1_000)
        assert err.value.code == CONNECTION_REFUSED


def test_backoff_grows_with_reconsume_times() -> None:
    assert [backoff_ms(n) for n in (0, 1, 2, 3)] == [1_000, 5_000, 10_000, 30_000]
    assert backoff_ms(100) == DEFAULT_BACKOFF_MS[-1] == 2 * 3_600_000 and backoff_ms(-1) == 1_000


@pytest.mark.req("POP-1", "REVIVE-5.popped", "PACK-4")
def test_push_consumer_pops_its_assignment_and_retries_by_changing_invisibility() -> None:
    clock, sink = SimClock(), MemorySink()
    trace = Trace(sink, "t", clock)
    with broker_on(clock, sink, queues=4) as (broker, _):
        host = SimpleNamespace(broker=broker)  # the broker as the clients reach it
        outcomes: dict[str, list[str]] = {}

        def listener_for(name: str, fail: set[bytes]):  # type: ignore[no-untyped-def]
            def listener(message, complete) -> None:  # type: ignore[no-untyped-def]
                outcomes.setdefault(name, []).append(f"{message.body.decode()}/{message.reconsume_times}")
                bad = message.body in fail and message.reconsume_times < 2
                clock.call_later(10, lambda: complete(CONSUME_LATER if bad else CONSUME_OK))

            return listener

        config = PopPushConfig(pop_share_queue_num=1, poll_time_ms=5_000)
        consumers = [
            PopPushConsumer(host, clock, G, T, f"c{i}", listener_for(f"c{i}", {b"q1-0"}), config, trace=trace)
            for i in range(3)
        ]
        for c in consumers:
            c.start()
        clock.advance(0)
        for c in consumers:
            c.rebalance()  # everyone registered now: the assignment is final
        owners = [sum(q in c.assigned for c in consumers) for q in range(4)]
        assert owners == [2, 2, 2, 2], [c.assigned for c in consumers]
        for q in range(4):
            broker.send(Message(T, b"q%d-0" % q, q, tags="A"))
        clock.advance(1_000 + 2_001 + 5_000 + 2_001 + 1_000)
        done = sorted(x for v in outcomes.values() for x in v)
        assert done == ["q0-0/0", "q1-0/0", "q1-0/1", "q1-0/2", "q2-0/0", "q3-0/0"], done
        changes = [r["invisible_ms"] for r in sink.of("CHANGE_INVISIBLE")]
        assert changes == [backoff_ms(0), backoff_ms(1)], "a failed message comes back after the back-off"
        assert len({r["msg_id"] for r in sink.of("ACK") if r["status"] == "OK"}) == 4
        consume = sink.of("CONSUME")
        assert [r["status"] for r in consume].count("LATER") == 2 and len(sink.of("DELIVER")) == 6
        for c in consumers:
            c.shutdown()


@pytest.mark.req("REVIVE-7.crash-slow", "REVIVE-7.retry")
def test_a_crashed_push_consumer_loses_nothing() -> None:
    clock, sink = SimClock(), MemorySink()
    trace = Trace(sink, "t", clock)
    with broker_on(clock, sink, queues=1) as (broker, _):
        host = SimpleNamespace(broker=broker)  # the broker as the clients reach it
        handled: list[tuple[str, int]] = []

        def slow(message, complete) -> None:  # type: ignore[no-untyped-def]
            handled.append(("slow", message.reconsume_times))
            clock.call_later(60_000, lambda: complete(CONSUME_OK))

        def fast(message, complete) -> None:  # type: ignore[no-untyped-def]
            handled.append(("fast", message.reconsume_times))
            complete(CONSUME_OK)

        config = PopPushConfig(invisible_time_ms=5_000, poll_time_ms=2_000)
        a = PopPushConsumer(host, clock, G, T, "a", slow, config, trace=trace)
        a.start()
        broker.send(Message(T, b"m", 0, tags="A"))
        clock.advance(1)
        assert handled == [("slow", 0)]
        a.crash()
        b = PopPushConsumer(host, clock, G, T, "b", fast, config, trace=trace)
        b.start()
        clock.advance(5_000 + 2_001 + 2_000)
        assert handled == [("slow", 0), ("fast", 1)], "revived after the invisible time, consumed by b"
        assert [r["status"] for r in sink.of("ACK")] == ["OK"]
        assert [r["event"] for r in sink.rows if r["source"] == "client:a"][-1] == "CRASH"
        b.shutdown()
