"""The permit-based client: receive queue grants, negative acks, unacked timeout, reconnects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from properties.harness import SMALL_STORE
from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.broker.permits.protocol import InitialPosition, SubType
from reference.client.permits.consumer import PermitConsumerClient, PermitConsumerConfig
from reference.clock import SimClock
from reference.sim.engine import scratch_dir
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import MemorySink, Trace

S, T = "S", "T"


@contextmanager
def setup(**config: object) -> Iterator[tuple[Broker, SimClock, MemorySink, PermitConsumerClient]]:
    clock, sink = SimClock(), MemorySink()
    with scratch_dir("mqtck-permitclient-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE), trace=Trace(sink, "t", clock))
        broker.create_topic(T, 1)
        broker.start()
        cfg = PermitConsumerConfig(initial_position=InitialPosition.EARLIEST, **config)  # type: ignore[arg-type]
        client = PermitConsumerClient(SimpleNamespace(broker=broker), clock, S, T, "c1", cfg, Trace(sink, "t", clock))
        try:
            yield broker, clock, sink, client
        finally:
            broker.shutdown()


def flows(sink: MemorySink) -> list[int]:
    return [r["count"] for r in sink.of("FLOW")]


def send(broker: Broker, n: int) -> None:
    for i in range(n):
        broker.send(Message(T, b"m%d" % i, 0))


@pytest.mark.req("FLOW-7")
def test_receive_queue_grants_the_window_then_half_at_a_time() -> None:
    with setup(receiver_queue_size=10) as (broker, _clock, sink, client):
        assert PermitConsumerConfig().receiver_queue_size == 1_000
        client.subscribe()
        assert flows(sink) == [10]
        send(broker, 25)
        assert len(client.incoming) == 10, "the broker fills the window, no more"
        for _ in range(4):
            client.receive()
        assert flows(sink) == [10]
        client.receive()
        assert flows(sink) == [10, 5], "FLOW(5) when 5 = 10 / 2 messages were taken"
        assert len(client.incoming) == 10
        for _ in range(10):
            client.receive()
        assert flows(sink) == [10, 5, 5, 5] and client.received <= client.granted


@pytest.mark.req("FLOW-7")
@pytest.mark.parametrize("size, expected", [(0, [1, 1, 1]), (1, [1, 1, 1, 1])])
def test_tiny_receive_queues(size: int, expected: list[int]) -> None:
    with setup(receiver_queue_size=size) as (broker, _clock, sink, client):
        client.subscribe()
        send(broker, 3)
        got = [client.receive() for _ in range(3)]
        assert [m.body for m in got if m] == [b"m0", b"m1", b"m2"]
        assert flows(sink) == expected


@pytest.mark.req("FLOW-8", "FLOW-4")
def test_negative_ack_exclusive_rewinds_after_the_delay() -> None:
    with setup(receiver_queue_size=10, negative_ack_redelivery_delay_ms=900) as (broker, clock, sink, client):
        client.subscribe()
        send(broker, 3)
        first, second, third = (client.receive() for _ in range(3))
        client.ack(first)
        client.negative_acknowledge(second)
        clock.advance(899)
        assert len(client.incoming) == 0
        clock.advance(1)  # the tracker checks every 300 ms: the nack is due at 900 ms
        again = [client.receive() for _ in range(2)]
        assert [m.body for m in again] == [b"m1", b"m2"], "exclusive: everything unacknowledged comes back"
        assert [r["status"] for r in sink.of("CONSUME")] == ["OK", "LATER"]


@pytest.mark.req("FLOW-8", "FLOW-5", "FLOW-6")
def test_negative_ack_and_unacked_timeout_in_a_shared_subscription() -> None:
    config = dict(receiver_queue_size=10, negative_ack_redelivery_delay_ms=1_000, unacked_messages_timeout_ms=10_000,
                  sub_type=SubType.SHARED)
    with setup(**config) as (broker, clock, _sink, client):
        client.subscribe()
        send(broker, 3)
        first, second, third = (client.receive() for _ in range(3))
        client.negative_acknowledge(first)
        client.ack(second)
        clock.advance(999)
        assert not client.incoming
        clock.advance(333)  # ticks at 333, 666, 999, 1332: the first tick after the delay sends it
        (m,) = client.incoming
        assert (m.body, m.redelivery_count) == (b"m0", 1), "only the nacked message, counted"
        client.receive()
        clock.advance(10_000 - 1_332 + 1_000)
        bodies = [x.body for x in client.incoming]
        assert b"m2" in bodies, "received and never acknowledged within 10 s: asked for again"


def test_config_bounds() -> None:
    for bad in (dict(receiver_queue_size=-1), dict(negative_ack_redelivery_delay_ms=99),
                dict(unacked_messages_timeout_ms=9_999)):
        with pytest.raises(ValueError):
            PermitConsumerConfig(**bad)  # type: ignore[arg-type]


@pytest.mark.req("FLOW-10")
def test_resubscribe_after_a_broker_restart_grants_a_fresh_window() -> None:
    clock, sink = SimClock(), MemorySink()
    with scratch_dir("mqtck-permitclient-") as tmp:
        host = BrokerHost(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE), trace=Trace(sink, "t", clock))
        host.open().create_topic(T, 1)
        cfg = PermitConsumerConfig(receiver_queue_size=4, initial_position=InitialPosition.EARLIEST)
        client = PermitConsumerClient(host, clock, S, T, "c1", cfg)
        client.subscribe()
        send(host.broker, 3)
        client.ack(client.receive())
        host.restart()
        client.resubscribe()
        assert client.granted == 4 and [m.body for m in client.incoming] == [b"m1", b"m2"]
        host.close()
