"""ClientComponents: the classes a client is built from, so a seeded fault can swap exactly one.

Like ``reference.broker.broker.BrokerComponents``: ``conformance.mutants.client_faults`` subclasses
one of these to break one rule (pull a dropped queue, commit a dropped queue's results, commit past a
message still in flight, allocate from an unsorted member list) and the property and conformance
suites must notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reference.client.consume_service import ConsumeMessageConcurrentlyService
from reference.client.gateway import BrokerGateway
from reference.client.local_offset_store import LocalFileOffsetStore, offsets_path
from reference.client.offset_store import OffsetStore
from reference.client.process_queue import ProcessQueue
from reference.client.rebalance import RebalancePushImpl
from reference.client.remote_offset_store import RemoteBrokerOffsetStore
from reference.rules.errors import require
from reference.trace import SourceRecorder


@dataclass(frozen=True)
class ClientComponents:
    #: The push consumer class, when a fault replaces it (None: ``DefaultMQPushConsumer``). Not named here by
    #: default because the consumer is built from these components: this module stays below it.
    push_consumer: type | None = None
    process_queue: type[ProcessQueue] = ProcessQueue
    rebalance: type[RebalancePushImpl] = RebalancePushImpl
    consume_service: type[ConsumeMessageConcurrentlyService] = ConsumeMessageConcurrentlyService
    remote_offset_store: type[RemoteBrokerOffsetStore] = RemoteBrokerOffsetStore
    local_offset_store: type[LocalFileOffsetStore] = LocalFileOffsetStore

    def offset_store(
        self, clustering: bool, gateway: BrokerGateway, group: str, client_id: str, rec: SourceRecorder,
        offset_dir: str | Path | None,
    ) -> OffsetStore:
        """The store the message model asks for: the broker's in clustering, a local file in broadcasting."""
        if clustering:
            return self.remote_offset_store(gateway, group, client_id, rec)
        require(offset_dir is not None, "offset_dir", "a broadcasting consumer needs a directory for its offsets")
        assert offset_dir is not None
        return self.local_offset_store(offsets_path(offset_dir, client_id, group), group, client_id, rec)
