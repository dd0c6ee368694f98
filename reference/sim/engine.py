"""SimRun: what every simulated run stands on. A virtual clock, a scratch data directory, the trace and the
broker host; it plays a timed schedule and settles.

The three workloads (pull and rebalance in :mod:`.simulation`, POP in :mod:`.pop_sim`, permits in
:mod:`.permit_sim`) differ in their consumers, their steps' effects and their judges; the rest is here, once.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TypeVar

from reference.broker.broker import BrokerComponents
from reference.broker.config import BrokerConfig
from reference.broker.pop.config import PopConfig
from reference.clock import SimClock
from reference.sim.host import SimBrokerHost
from reference.sim.steps import Step, step_end_ms
from reference.store.config import MessageStoreConfig
from reference.trace import Trace, TraceSink

#: A RAM-backed directory for simulated stores, when the machine has one: a simulation's store is scratch
#: space, and the fsyncs of a real disk would dominate the run time of a simulated minute.
RAM_DIR = Path("/dev/shm")
S = TypeVar("S", bound=Step)


def small_store_config() -> MessageStoreConfig:
    """Small store segments and rare offset persistence keep one simulated POP or permit run cheap."""
    return MessageStoreConfig(
        commit_log_segment_bytes=256 * 1024, consume_queue_units_per_segment=1024, offset_persist_interval_ms=60_000
    )


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary directory for one simulated broker, in RAM when possible."""
    ram = RAM_DIR if RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=ram)


class SimRun:
    """One run: ``clock``, ``trace`` (run ``name``, into ``sink``) and ``host`` (its broker on ``root/broker``;
    ``root`` is a scratch directory removed by :meth:`close` unless ``data_dir`` is given)."""

    def __init__(
        self, name: str, sink: TraceSink, store_config: MessageStoreConfig, *, data_dir: str | Path | None = None,
        broker_config: BrokerConfig | None = None, components: BrokerComponents | None = None,
        pop_config: PopConfig | None = None, rng: random.Random | None = None, clock: SimClock | None = None,
    ) -> None:
        self.clock = clock or SimClock()
        self.start_ms = self.clock.now_ms()
        self._scratch = scratch_dir("mqtck-sim-") if data_dir is None else None
        self.root = Path(self._scratch.name if self._scratch is not None else data_dir)  # type: ignore[arg-type]
        self.trace = Trace(sink, name, self.clock)
        self.host = SimBrokerHost(self.root / "broker", self.clock, self.trace, store_config, broker_config,
                                  components=components, pop_config=pop_config, rng=rng)

    def schedule(self, steps: Iterable[S], apply: Callable[[S], object]) -> int:
        """Schedule every step at its time from now (in the order given); when the last step's effect is
        over, in ms from now."""
        last = 0
        for step in steps:
            self.clock.call_later(step.at_ms, partial(apply, step))
            last = max(last, step_end_ms(step))
        return last

    def play(self, steps: Iterable[S], apply: Callable[[S], object]) -> None:
        """Schedule the steps from now and run the clock until the last step's effect is over."""
        begin = self.clock.now_ms()
        self.clock.run_until(begin + self.schedule(steps, apply))

    def run_until(self, ms: int) -> None:
        """Run the clock to ``ms`` from the start."""
        self.clock.run_until(self.start_ms + ms)

    def settle(self, done: Callable[[], bool], max_ms: int, poll_ms: int = 1_000,
               give_up: Callable[[], bool] | None = None) -> bool:
        """Advance ``poll_ms`` at a time until ``done()`` while the broker is up, ``give_up()``, or ``max_ms``
        from the start: whether it was done."""
        while self.clock.now_ms() - self.start_ms < max_ms and not (give_up is not None and give_up()):
            if self.host.broker is not None and done():
                return True
            self.clock.advance(poll_ms)
        return False

    def __enter__(self) -> SimRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Shut the broker down and remove the scratch directory."""
        self.host.close()
        if self._scratch is not None:
            self._scratch.cleanup()
