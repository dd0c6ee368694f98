"""SimBrokerHost: the simulated broker process, which can restart (gracefully or by crashing).

A graceful restart shuts the broker down (offsets persisted, store closed) and opens a new one on the
same data directory after ``down_ms``. A crash kills the broker's process clock (nothing it scheduled
runs again, nothing is persisted: consumer offsets committed since the last 5 s persist are lost) and
leaves its files as they are; the new broker recovers the store from them. While the broker is down,
``broker`` is None and every call to it fails; the clients' connections are told it went away.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reference.broker.broker import Broker
from reference.broker.config import BrokerConfig
from reference.clock import ProcessClock, SimClock
from reference.store.config import MessageStoreConfig
from reference.trace import Trace


class SimBrokerHost:
    def __init__(
        self, data_dir: Path, clock: SimClock, trace: Trace, store_config: MessageStoreConfig,
        config: BrokerConfig | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.clock = clock
        self.trace = trace
        self.store_config = store_config
        self.config = config or BrokerConfig()
        self.process = ProcessClock(clock)
        self.broker: Broker | None = self._open()
        self.rec = trace.source(f"broker:{self.config.broker_name}", clock)
        self._crashed: list[Broker] = []
        self.restarts = 0
        #: Called when the broker goes away (the simulator fails the clients' pending pulls).
        self.on_down: Callable[[], object] | None = None

    def _open(self) -> Broker:
        broker = Broker(self.data_dir, self.process, self.config, self.store_config, self.trace)
        broker.start()
        return broker

    def restart(self, crash: bool, down_ms: int) -> None:
        broker = self.broker
        if broker is None:
            return  # already down: the pending restart brings it back
        self.broker = None
        if crash:
            self.process.kill()
            self._crashed.append(broker)
            self.rec.record("CRASH")
        else:
            broker.shutdown()
            self.process.kill()
        if self.on_down is not None:
            self.on_down()
        self.clock.call_later(down_ms, self._come_back)

    def _come_back(self) -> None:
        self.process = ProcessClock(self.clock)
        self.broker = self._open()
        self.restarts += 1
        self.rec.record("RESTART")

    def close(self) -> None:
        """End of the run: shut the live broker down and release crashed brokers' mapped files."""
        if self.broker is not None:
            self.broker.shutdown()
            self.broker = None
        self.process.kill()
        for broker in self._crashed:
            broker.store.close()
        self._crashed.clear()
