"""A broker and reference consumers on simulated time, loss-free (InProcessGateway over DirectLink)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reference.broker.broker import Broker
from reference.client.client_instance import MQClientInstance
from reference.client.components import ClientComponents
from reference.client.config import ClientConfig, ConsumerConfig
from reference.client.consume_service import ConsumeConcurrentlyStatus
from reference.client.executor import BusyTime
from reference.client.inprocess import InProcessGateway, StaticHost
from reference.client.pull_consumer import DefaultMQPullConsumer
from reference.client.push_consumer import DefaultMQPushConsumer
from reference.clock import SimClock
from reference.store.config import MessageStoreConfig
from reference.store.message import UNIQ_KEY, Message, StoredMessage
from reference.trace import MemorySink, Trace


class RecordingListener:
    """Answers ``status`` (or what ``decide(msgs)`` says) and remembers every call."""

    def __init__(self, status: ConsumeConcurrentlyStatus = ConsumeConcurrentlyStatus.CONSUME_SUCCESS,
                 decide: Any = None) -> None:
        self.status = status
        self.decide = decide
        self.calls: list[list[StoredMessage]] = []

    @property
    def consumed(self) -> list[str]:
        return [m.unique_id for call in self.calls for m in call]

    def consume_message(self, msgs: list[StoredMessage], context: Any) -> ConsumeConcurrentlyStatus:
        self.calls.append(list(msgs))
        if self.decide is not None:
            return self.decide(msgs, context)
        return self.status


@dataclass
class ClientEnv:
    clock: SimClock
    broker: Broker
    host: StaticHost
    sink: MemorySink
    trace: Trace
    root: Path
    produced: int = 0
    consumers: list[Any] = field(default_factory=list)

    def instance(self, client_id: str, config: ClientConfig | None = None) -> MQClientInstance:
        gateway = InProcessGateway(self.host, self.clock, f"conn-{client_id}-{len(self.consumers)}")
        return MQClientInstance(client_id, gateway, self.clock, config, self.trace)

    def consumer(
        self, client_id: str = "10.0.0.1@1", listener: Any = None, *, topic: str = "T", expression: str = "*",
        busy_ms: BusyTime | None = None, components: ClientComponents | None = None,
        client_config: ClientConfig | None = None, start: bool = True, **config: Any,
    ) -> DefaultMQPushConsumer:
        consumer = DefaultMQPushConsumer(
            ConsumerConfig(config.pop("group", "G"), **config), listener or RecordingListener(),
            self.instance(client_id, client_config), components=components, busy_ms=busy_ms,
            offset_dir=self.root / "offsets",
        )
        consumer.subscribe(topic, expression)
        if start:
            consumer.start()
        self.consumers.append(consumer)
        return consumer

    def pull_consumer(self, client_id: str = "10.0.0.9@9", **kwargs: Any) -> DefaultMQPullConsumer:
        group = kwargs.pop("group", "PG")
        consumer = DefaultMQPullConsumer(ConsumerConfig(group), self.instance(client_id), **kwargs)
        self.consumers.append(consumer)
        return consumer

    def produce(self, n: int, queue: int | None = None, topic: str = "T", tags: str | None = None,
                body: bytes = b"x" * 16) -> None:
        queues = self.broker.store.queue_nums(topic)
        for _ in range(n):
            q = self.produced % queues if queue is None else queue
            self.broker.send(Message(topic, body, q, tags=tags, properties={UNIQ_KEY: f"m-{self.produced}"}))
            self.produced += 1

    def rows(self, event: str, client_id: str | None = None) -> list[dict[str, Any]]:
        return [
            r for r in self.sink.rows
            if r["event"] == event and (client_id is None or r["source"] == f"client:{client_id}")
        ]


@pytest.fixture
def env() -> Iterator[ClientEnv]:
    clock = SimClock()
    sink = MemorySink()
    trace = Trace(sink, "client-test", clock)
    with tempfile.TemporaryDirectory(prefix="mqtck-client-") as tmp:
        store_config = MessageStoreConfig(commit_log_segment_bytes=64 * 1024, consume_queue_units_per_segment=256,
                                          file_reserved_time_hours=0)
        broker = Broker(Path(tmp) / "broker", clock, store_config=store_config, trace=trace)
        broker.create_topic("T", 4)
        broker.start()
        try:
            yield ClientEnv(clock, broker, StaticHost(broker), sink, trace, Path(tmp))
        finally:
            broker.shutdown()
