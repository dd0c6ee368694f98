"""The simulated network: latency, reordering and loss on each client's connection.

Each message (a pull request or its answer, a oneway offset update, a membership notification, a
connection close) is delivered after its own latency drawn uniformly from
``[min_latency_ms, max_latency_ms]``, so two messages may arrive in the other order; with probability
``drop_rate`` it is never delivered (a pull then ends in the client's 30 s timeout). A synchronous
call fails with probability ``sync_fault_rate``, half the time before the broker acted and half the
time after (its reply was lost). Member lists come back in a random order: the protocol does not
promise one, which is why clients sort (seed 001 §3). Everything is drawn from the simulation's one
seeded RNG, so a run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from reference.client.inprocess import REPLY_LOST, REQUEST_LOST
from reference.clock import SimClock


@dataclass(frozen=True)
class NetworkConfig:
    min_latency_ms: int = 1
    max_latency_ms: int = 20
    drop_rate: float = 0.0
    sync_fault_rate: float = 0.0
    shuffle_member_lists: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.min_latency_ms <= self.max_latency_ms:
            raise ValueError("NetworkConfig: need 0 <= min_latency_ms <= max_latency_ms")
        for name in ("drop_rate", "sync_fault_rate"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"NetworkConfig.{name}: must be in [0, 1)")


class SimLink:
    """One client's connection (the :class:`~reference.client.inprocess.Link` protocol)."""

    __slots__ = ("_clock", "_rng", "_lo", "_hi", "_drop", "_sync", "_shuffle")

    def __init__(self, clock: SimClock, rng: random.Random, config: NetworkConfig) -> None:
        self._clock = clock
        self._rng = rng
        self._lo, self._hi = config.min_latency_ms, config.max_latency_ms
        self._drop = config.drop_rate
        self._sync = config.sync_fault_rate
        self._shuffle = config.shuffle_member_lists

    def _send(self, action: Callable[[], object]) -> None:
        rng = self._rng
        if self._drop and rng.random() < self._drop:
            return
        # lo + floor(u * span) is uniform on [lo, hi] like randint, at a third of its cost (hot path).
        self._clock.call_later(self._lo + int(rng.random() * (self._hi - self._lo + 1)), action)

    to_broker = _send
    to_client = _send

    def sync_fault(self) -> str | None:
        if self._sync and self._rng.random() < self._sync:
            return REQUEST_LOST if self._rng.random() < 0.5 else REPLY_LOST
        return None

    def unordered(self, items: list[str]) -> list[str]:
        if self._shuffle and len(items) > 1:
            items = list(items)
            self._rng.shuffle(items)
        return items
