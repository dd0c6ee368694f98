"""OffsetStore: where a consumer keeps how far it got, per queue (RocketMQ's OffsetStore interface).

Two implementations, chosen by the message model:

* clustering: :class:`~reference.client.remote_offset_store.RemoteBrokerOffsetStore`, the group's
  progress lives on the broker, so the next owner of a queue continues where this one stopped;
* broadcasting: :class:`~reference.client.local_offset_store.LocalFileOffsetStore`, every consumer
  consumes everything, so progress is its own and lives in a local file.

Both keep an in-memory table updated as results are processed (``update_offset``) and persisted
periodically (every 5 s) and at shutdown; what is not yet persisted is lost by a crash and consumed
again, which at-least-once allows.
"""

from __future__ import annotations

import enum
from collections.abc import Set
from typing import Protocol

from reference.allocation.message_queue import MessageQueue


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


#: read_offset's answers besides an offset: nothing recorded, and the store could not be read.
OFFSET_NOT_FOUND = -1
OFFSET_READ_ERROR = -2


class OffsetStore(Protocol):
    #: The in-memory table: queue -> next offset to consume.
    offset_table: dict[MessageQueue, int]

    def load(self) -> None: ...

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None: ...

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        """The offset, OFFSET_NOT_FOUND (-1) or OFFSET_READ_ERROR (-2)."""
        ...

    def persist_all(self, mqs: Set[MessageQueue]) -> None: ...

    def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None: ...


class OffsetTable:
    """The in-memory half both stores share: the table and the rules for reading and updating it.

    Kept in one place because the two stores must agree on them (a queue moving between models,
    e.g. a group switched from broadcasting to clustering, reads the same way); only where the table
    is persisted differs.
    """

    def __init__(self) -> None:
        self.offset_table: dict[MessageQueue, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        old = self.offset_table.get(mq)
        if old is None or not increase_only or offset > old:
            self.offset_table[mq] = offset

    def read_memory(self, mq: MessageQueue, read_type: ReadOffsetType) -> int | None:
        """The answer from memory, or None when ``read_type`` says to go on to the persisted store."""
        if read_type is ReadOffsetType.READ_FROM_STORE:
            return None
        offset = self.offset_table.get(mq)
        if offset is not None:
            return offset
        return OFFSET_NOT_FOUND if read_type is ReadOffsetType.READ_FROM_MEMORY else None
