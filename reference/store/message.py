"""Messages as a producer hands them in and as the store hands them back, and their ids.

Two ids exist, as in RocketMQ (protocols/rocketmq-remoting.md §6.4):

* ``msg_id`` is the *offset message id*: where the message lives, 16 bytes = store host IPv4 (4) +
  port as int32 big-endian (4) + commit-log offset as int64 big-endian (8), upper-case hex. It
  changes if the same payload is stored again (a retry, a send-back).
* ``unique_id`` is what a trace records as ``msg_id``: the producer's ``UNIQ_KEY`` property when it
  set one (stable across retries and redeliveries), otherwise the offset message id.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Property holding the producer-made unique id (RocketMQ's PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX).
UNIQ_KEY = "UNIQ_KEY"


@dataclass(frozen=True)
class Message:
    """A message to store. ``tags`` None or "" means untagged (its tags code is 0)."""

    topic: str
    body: bytes
    queue_id: int
    tags: str | None = None
    keys: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    born_timestamp: int | None = None
    reconsume_times: int = 0


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message read back from the commit log. ``size`` is the whole record's length in bytes (the
    figure pull batch limits count), ``born_timestamp`` the producer's or, if it gave none, the
    store time."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    size: int
    body: bytes
    tags: str | None
    keys: str | None
    properties: Mapping[str, str]
    store_timestamp: int
    born_timestamp: int
    reconsume_times: int
    msg_id: str
    unique_id: str


class PutMessageStatus(enum.Enum):
    """Outcome of an append. Refusals are raised as InvalidRequest before anything is written, so an
    append that returns has always stored the message (RocketMQ's PUT_OK)."""

    PUT_OK = "PUT_OK"


@dataclass(frozen=True, slots=True)
class PutMessageResult:
    status: PutMessageStatus
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    msg_id: str
    unique_id: str
    store_timestamp: int


def store_host_bytes(host: tuple[str, int]) -> bytes:
    """The 8-byte STOREHOST field: IPv4 address then port as int32 big-endian."""
    address, port = host
    return ipaddress.IPv4Address(address).packed + port.to_bytes(4, "big")


def offset_msg_id(store_host: bytes, commit_log_offset: int) -> str:
    """RocketMQ's offset message id for a record at ``commit_log_offset`` stored by ``store_host``
    (the 8 bytes from :func:`store_host_bytes`)."""
    return f"{store_host.hex().upper()}{commit_log_offset & 0xFFFFFFFFFFFFFFFF:016X}"
