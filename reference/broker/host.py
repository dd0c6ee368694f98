"""BrokerHost: the broker process. The one place a Broker is built, restarted, crashed and closed.

Theory of operation
-------------------
Everything that runs a broker (the remoting and HTTP servers, the simulator, the in-process conformance
target, the client checker, ``mqtck broker``) holds a host instead of building brokers itself, so every
restart means the same thing and is recorded the same way:

* :meth:`BrokerHost.open` builds the broker on a fresh :class:`~reference.clock.ProcessClock` and starts
  it; every open after the first records RESTART on the broker's source.
* :meth:`BrokerHost.stop` ends the process. A clean stop records CRASH with ``{"clean": true}`` in its
  detail, then shuts the broker down (offsets persisted, store flushed). A kill records CRASH and kills the
  process clock first, so nothing the broker scheduled runs again and nothing is persisted (what SIGKILL
  leaves: consumer offsets committed since the last persist are lost, the appended records stay in the
  page cache); its mapped files are then released.
* :meth:`BrokerHost.restart` is a stop and an open on the same data directory, with an optional step in
  between on the dead broker's files (a torn record for STORE-6).

While stopped, ``broker`` is None. Why a process clock: a crash must stop every timer of one broker at once
without the host knowing what the broker scheduled.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

from reference.broker.broker import Broker, BrokerComponents
from reference.broker.config import BrokerConfig
from reference.broker.pop.config import PopConfig
from reference.clock import Clock, ProcessClock
from reference.store.config import MessageStoreConfig
from reference.trace import Trace


class BrokerHost:
    """One broker process on ``data_dir``; :meth:`open` it first. ``clock`` is the host's time (virtual or
    real); each broker it builds runs on its own process view of it."""

    def __init__(
        self,
        data_dir: str | Path,
        clock: Clock,
        *,
        config: BrokerConfig | None = None,
        store_config: MessageStoreConfig | None = None,
        trace: Trace | None = None,
        components: BrokerComponents | None = None,
        pop_config: PopConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.clock = clock
        self.config = config or BrokerConfig()
        self.store_config = store_config or MessageStoreConfig()
        self.trace = trace
        self.components = components
        self.pop_config = pop_config
        #: Draws each broker's own random source (a POP's start queue and retry choice), so that a seeded run
        #: stays the same run across restarts; None: each broker seeds its own.
        self.rng = rng
        self.process: ProcessClock | None = None
        self.broker: Broker | None = None
        #: How many times a broker was opened after the first.
        self.restarts = 0
        self._opened = False

    def open(self, store_host: tuple[str, int] | None = None) -> Broker:
        """Build and start the broker (``store_host``: its reachable address, the STOREHOST of every record,
        known once a server has bound its port; kept for later opens)."""
        if self.broker is not None:
            raise RuntimeError("the broker is running: stop it before opening another on the same data")
        if store_host is not None:
            self.store_config = dataclasses.replace(self.store_config, store_host=store_host)
        self.process = ProcessClock(self.clock)
        broker = Broker(self.data_dir, self.process, self.config, self.store_config, self.trace, self.components,
                        self.pop_config, random.Random(self.rng.randrange(1 << 30)) if self.rng else None)
        broker.start()
        if self._opened:
            self.restarts += 1
            broker.rec.record("RESTART")
        self._opened = True
        self.broker = broker
        return broker

    def stop(self, kill: bool = False) -> Broker | None:
        """End the broker's process, cleanly or as SIGKILL would; the stopped broker (None if none ran)."""
        broker, process = self.broker, self.process
        if broker is None or process is None:
            return None
        self.broker = None
        if kill:
            broker.rec.record("CRASH")
            process.kill()
            broker.store.close()
        else:
            broker.rec.record("CRASH", detail={"clean": True})
            broker.shutdown()
            process.kill()
        return broker

    def restart(self, kill: bool = False, between: Callable[[Broker], None] | None = None) -> Broker:
        """Stop and open again on the same data; ``between`` runs on the stopped broker in between (its
        files are closed then)."""
        old = self.stop(kill)
        if old is not None and between is not None:
            between(old)
        return self.open()

    def close(self) -> None:
        """End of service: a clean shutdown, not recorded as a restart's CRASH."""
        broker, process = self.broker, self.process
        self.broker = None
        if broker is not None:
            broker.shutdown()
        if process is not None:
            process.kill()
