"""Redelivery trackers: how many times each message was redelivered (seed 003, ``redeliveryTracker``).

A position is *tracked* once a redelivery of it was requested (``add_if_absent``); each later
dispatch of a tracked position increments its count, which the message carries as
``redelivery_count`` (the first redelivery carries 1). An ack forgets the position.

Shared subscriptions use :class:`InMemoryRedeliveryTracker`. Exclusive and failover subscriptions
use :class:`DisabledRedeliveryTracker`, as the Java broker does (``RedeliveryTrackerDisabled``):
their redeliveries are rewinds of the cursor and always carry 0 (pulsar-binary §12.3).
"""

from __future__ import annotations

from reference.broker.permits.protocol import Position


class InMemoryRedeliveryTracker:
    def __init__(self) -> None:
        self._counts: dict[Position, int] = {}

    def add_if_absent(self, position: Position) -> None:
        self._counts.setdefault(position, 0)

    def contains(self, position: Position) -> bool:
        return position in self._counts

    def increment_and_get(self, position: Position) -> int:
        self._counts[position] = self._counts.get(position, 0) + 1
        return self._counts[position]

    def remove(self, position: Position) -> None:
        self._counts.pop(position, None)

    def count(self, position: Position) -> int:
        return self._counts.get(position, 0)


class DisabledRedeliveryTracker(InMemoryRedeliveryTracker):
    def add_if_absent(self, position: Position) -> None:
        pass

    def contains(self, position: Position) -> bool:
        return False
