"""ManagedCursor: a subscription's durable position in one queue (Pulsar's cursor, on our store).

The cursor knows which messages are acknowledged: every message of an entry below ``mark_delete``
(the *mark-delete position*), plus individually acknowledged messages above it. It advances
``mark_delete`` while the next entry is fully acknowledged, and commits it through the broker's
consumer offsets, so that a restarted broker resumes the subscription there (anything
acknowledged above it is delivered again: at least once).

``read_position`` is where new messages are read next; a rewind (exclusive and failover
redelivery) moves it back to ``mark_delete``, and reading skips acknowledged messages. Reading takes
whole entries: Pulsar never splits a batch (:meth:`read_new`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reference.broker.permits.batch import batch_size
from reference.broker.permits.protocol import Position
from reference.store.message import StoredMessage
from reference.store.store import MessageStore


@dataclass(frozen=True)
class EntryRead:
    """Messages ``indices`` of the stored entry ``message`` (of ``size`` messages)."""

    message: StoredMessage
    size: int
    indices: tuple[int, ...]


class ManagedCursor:
    def __init__(
        self,
        store: MessageStore,
        group: str,
        topic: str,
        queue_id: int,
        mark_delete: int,
        commit: Callable[[int], None],
    ) -> None:
        self.store = store
        self.group = group
        self.topic = topic
        self.queue_id = queue_id
        self.mark_delete = mark_delete
        self._commit = commit
        self._acked: dict[int, set[int]] = {}
        self._sizes: dict[int, int] = {}
        self.read_position = Position(mark_delete, 0)
        #: Highest position ever read: acks are accepted below it.
        self.max_read = Position(mark_delete, 0)

    # -- reading -------------------------------------------------------------------------------
    def read_entry(self, offset: int) -> tuple[StoredMessage, int] | None:
        result = self.store.get_message(self.group, self.topic, self.queue_id, offset, 1, None)
        for message in result.messages:
            if message.queue_offset == offset:
                size = batch_size(message.properties)
                self._sizes.setdefault(offset, size)
                return message, size
        return None

    def has_new(self) -> bool:
        return self.read_position.offset < self.store.get_max_offset_in_queue(self.topic, self.queue_id)

    def read_new(self, budget: int) -> list[EntryRead]:
        """Unacknowledged messages from the read position on, whole entries, read while fewer than ``budget``
        messages were taken: no entry is started once the budget is spent, and a batch is never cut (Pulsar's
        rule, FLOW-2; the last entry may overshoot the budget, by its size less one at most, FLOW-11). With the
        store's ``permit_read_entries_per_permit`` the budget counts entries instead, as Pulsar reads."""
        out: list[EntryRead] = []
        taken = 0
        per_entry = self.store.config.permit_read_entries_per_permit
        while (len(out) if per_entry else taken) < budget:
            offset, index = self.read_position
            low = self.store.get_min_offset_in_queue(self.topic, self.queue_id)
            if offset < low:  # retention removed them
                self.read_position = Position(low, 0)
                continue
            if offset >= self.store.get_max_offset_in_queue(self.topic, self.queue_id):
                break
            entry = self.read_entry(offset)
            if entry is None:
                self.read_position = Position(offset + 1, 0)
                continue
            message, size = entry
            chosen = [i for i in range(index, size) if not self.is_acked(Position(offset, i))]
            if chosen:
                out.append(EntryRead(message, size, tuple(chosen)))
                taken += len(chosen)
            self.read_position = Position(offset + 1, 0)
            self.max_read = max(self.max_read, self.read_position)
        return out

    def rewind(self) -> None:
        """Read again from the mark-delete position (acknowledged messages are skipped)."""
        self.read_position = Position(self.mark_delete, 0)

    # -- acknowledging -------------------------------------------------------------------------
    def is_acked(self, position: Position) -> bool:
        return position.offset < self.mark_delete or position.batch_index in self._acked.get(position.offset, ())

    def was_read(self, position: Position) -> bool:
        return position < self.max_read

    def ack(self, position: Position) -> bool:
        """Acknowledge one message; True if it was not acknowledged before."""
        if self.is_acked(position) or self.read_entry(position.offset) is None:
            return False
        self._acked.setdefault(position.offset, set()).add(position.batch_index)
        moved = False
        low = self.store.get_min_offset_in_queue(self.topic, self.queue_id)
        if self.mark_delete < low:  # retention removed entries nobody acknowledged: nothing to wait for
            for offset in [o for o in self._acked if o < low]:
                self._acked.pop(offset)
                self._sizes.pop(offset, None)
            self.mark_delete, moved = low, True
        while len(self._acked.get(self.mark_delete, ())) >= self._sizes.get(self.mark_delete, 1 << 62):
            self._acked.pop(self.mark_delete, None)
            self._sizes.pop(self.mark_delete, None)
            self.mark_delete += 1
            moved = True
        if moved:
            self._commit(self.mark_delete)
        return True
