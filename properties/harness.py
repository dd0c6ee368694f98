"""Shared set-up for the property suites: a broker on simulated time in a throw-away directory."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator

from reference.broker.broker import Broker, BrokerComponents
from reference.broker.config import BrokerConfig
from reference.clock import SimClock
from reference.store.config import MessageStoreConfig
from reference.trace import MemorySink, Trace

#: Small segments keep each generated example cheap (a store is created per example).
SMALL_STORE = dict(commit_log_segment_bytes=256 * 1024, consume_queue_units_per_segment=1024)


@contextlib.contextmanager
def sim_broker(
    config: BrokerConfig | None = None,
    components: BrokerComponents | None = None,
    topics: dict[str, int] | None = None,
    **store_overrides: object,
) -> Iterator[tuple[Broker, SimClock, MemorySink]]:
    clock = SimClock()
    sink = MemorySink()
    with tempfile.TemporaryDirectory(prefix="mqtck-prop-") as tmp:
        store_config = MessageStoreConfig(**{**SMALL_STORE, **store_overrides})
        broker = Broker(tmp, clock, config, store_config, Trace(sink, "prop", clock), components)
        for topic, queues in (topics or {"T": 2}).items():
            broker.create_topic(topic, queues)
        broker.start()
        try:
            yield broker, clock, sink
        finally:
            broker.shutdown()
