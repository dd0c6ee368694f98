"""Values of permit-based (Pulsar-style) consumption, as the broker core sees them.

A *subscription* is a consumer group's durable cursor on one queue of a topic (a Pulsar topic or
partition); a *consumer* is one client attached to it. Messages are addressed by
:class:`Position` (queue offset of the stored entry, index inside the entry's batch).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple, Protocol


class SubType(enum.Enum):
    """Pulsar's subscription types (Key_Shared is not modelled)."""

    EXCLUSIVE = "Exclusive"
    FAILOVER = "Failover"
    SHARED = "Shared"

    @classmethod
    def parse(cls, text: str) -> SubType:
        for member in cls:
            if member.value.lower() == str(text).lower():
                return member
        raise ValueError(text)


class InitialPosition(enum.Enum):
    """Where a *new* subscription starts (an existing one resumes after its acknowledged position)."""

    LATEST = "Latest"
    EARLIEST = "Earliest"


class Position(NamedTuple):
    offset: int
    batch_index: int


@dataclass(frozen=True)
class DispatchedMessage:
    """One message as sent to a consumer (CommandMessage plus payload)."""

    topic: str
    queue_id: int
    position: Position
    #: Messages in the entry this one belongs to (1 for a message sent alone).
    batch_size: int
    msg_id: str
    body: bytes
    tags: str | None
    redelivery_count: int


class PermitChannel(Protocol):
    """A client connection that receives dispatched messages."""

    key: str

    def deliver_messages(self, group: str, topic: str, messages: list[DispatchedMessage]) -> None: ...


@dataclass(eq=False)
class RecordingPermitChannel:
    """Keeps what the broker sent; used by tests and targets."""

    key: str

    def __post_init__(self) -> None:
        self.messages: list[DispatchedMessage] = []

    def deliver_messages(self, group: str, topic: str, messages: list[DispatchedMessage]) -> None:
        self.messages.extend(messages)
