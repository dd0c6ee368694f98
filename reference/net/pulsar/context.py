"""What the handlers see of their connection and of the front, as protocols: the handler tables are imported by
the connection, so they name it only through these (no import loop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reference.broker.broker import Broker
from reference.broker.permits.protocol import SubType


@dataclass(frozen=True)
class ConsumerRef:
    """A consumer of a connection, as the permit service knows it."""

    consumer_id: int
    group: str
    topic: str
    client_id: str
    sub_type: SubType


class FrontContext(Protocol):
    service_url: str
    max_message_size: int

    def broker(self) -> Broker: ...
    def running(self) -> Broker | None: ...
    def ensure_topic(self, topic: str) -> str: ...
    def producer_name(self) -> str: ...
    def entry_bytes(self, group: str, topic: str, offset: int) -> bytes | None: ...
    def entry_size(self, group: str, topic: str, offset: int) -> int | None: ...
    def mark_delete(self, group: str, topic: str) -> int: ...


class ConnectionContext(Protocol):
    front: FrontContext
    name: str
    protocol_version: int
    connected: bool
    #: producer_id -> (store topic, producer name)
    producers: dict[int, tuple[str, str]]
    consumers: dict[int, ConsumerRef]

    def write(self, command: object, entry: bytes = b"") -> None: ...
    def success(self, request_id: int) -> None: ...
    def consumer(self, consumer_id: int) -> ConsumerRef: ...
    def close_consumer(self, consumer_id: int) -> None: ...
    def abort(self) -> None:
        """Close the connection from the broker's side (nothing more is written; its consumers are closed)."""
        ...
