"""ClientComponents: the classes a client is built from, so a seeded fault can swap exactly one.

Like ``reference.broker.broker.BrokerComponents``: ``conformance.mutants.client_faults`` subclasses
one of these to break one rule (pull a dropped queue, commit a dropped queue's results, commit past a
message still in flight, allocate from an unsorted member list) and the property and conformance
suites must notice.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.client.consume_service import ConsumeMessageConcurrentlyService
from reference.client.local_offset_store import LocalFileOffsetStore
from reference.client.process_queue import ProcessQueue
from reference.client.push_consumer import DefaultMQPushConsumer
from reference.client.rebalance import RebalancePushImpl
from reference.client.remote_offset_store import RemoteBrokerOffsetStore


@dataclass(frozen=True)
class ClientComponents:
    push_consumer: type[DefaultMQPushConsumer] = DefaultMQPushConsumer
    process_queue: type[ProcessQueue] = ProcessQueue
    rebalance: type[RebalancePushImpl] = RebalancePushImpl
    consume_service: type[ConsumeMessageConcurrentlyService] = ConsumeMessageConcurrentlyService
    remote_offset_store: type[RemoteBrokerOffsetStore] = RemoteBrokerOffsetStore
    local_offset_store: type[LocalFileOffsetStore] = LocalFileOffsetStore
