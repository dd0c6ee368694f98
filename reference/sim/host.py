"""SimBrokerHost: the simulated broker process, a :class:`~reference.broker.host.BrokerHost` whose restarts
take virtual time.

A restart stops the broker (cleanly, or by a crash: see :class:`~reference.broker.host.BrokerHost`), tells
the simulator it went away (``on_down``: it fails the clients' pending requests), and opens a new broker on
the same data ``down_ms`` later (``on_back``: e.g. consumers reconnect). While the broker is down,
``broker`` is None and every call to it fails. Every simulation (pull and rebalance, POP, permits) runs its
broker on this host.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from reference.broker.broker import Broker, BrokerComponents
from reference.broker.config import BrokerConfig
from reference.broker.host import BrokerHost
from reference.broker.pop.config import PopConfig
from reference.clock import SimClock
from reference.store.config import MessageStoreConfig
from reference.trace import Trace


class SimBrokerHost:
    def __init__(
        self, data_dir: Path, clock: SimClock, trace: Trace, store_config: MessageStoreConfig,
        config: BrokerConfig | None = None, components: BrokerComponents | None = None,
        pop_config: PopConfig | None = None, rng: random.Random | None = None,
    ) -> None:
        self.clock = clock
        self.host = BrokerHost(data_dir, clock, config=config, store_config=store_config, trace=trace,
                               components=components, pop_config=pop_config, rng=rng)
        self.host.open()
        #: Called when the broker goes away (the simulator fails the clients' pending requests).
        self.on_down: Callable[[], object] | None = None
        #: Called when the new broker is up.
        self.on_back: Callable[[], object] | None = None
        self._coming_back = False

    @property
    def broker(self) -> Broker | None:
        return self.host.broker

    @property
    def restarts(self) -> int:
        return self.host.restarts

    def restart(self, crash: bool, down_ms: int) -> None:
        if self.host.broker is None or self._coming_back:
            return  # already down: the pending restart brings it back
        self.host.stop(kill=crash)
        if self.on_down is not None:
            self.on_down()
        self._coming_back = True
        self.clock.call_later(down_ms, self._come_back)

    def _come_back(self) -> None:
        self._coming_back = False
        self.host.open()
        if self.on_back is not None:
            self.on_back()

    def close(self) -> None:
        """End of the run: shut the live broker down."""
        self.host.close()
