"""Pulsar names on the reference store: topics, subscriptions and message ids.

A Pulsar topic (``persistent://tenant/namespace/name``; partitions are topics ``name-partition-N``) is one store
topic of one queue, named by replacing ``://`` and ``/`` with ``|`` (a store name allows letters, digits, ``%``,
``|``, ``_`` and ``-``). A message id is ``(ledgerId, entryId)`` = (:data:`LEDGER_ID`, the entry's queue offset):
the store keeps offsets across restarts, so ids only grow, as the client requires (pulsar-binary §13).
"""

from __future__ import annotations

from reference.rules.errors import InvalidRequest
from reference.store.names import MAX_NAME_LENGTH, NAME_PATTERN

#: The one ledger of every topic.
LEDGER_ID = 1
DOMAINS = ("persistent://", "non-persistent://")


def store_topic(topic: str) -> str:
    """The store topic of a fully qualified Pulsar topic (InvalidRequest ``topic`` otherwise)."""
    if not topic.startswith(DOMAINS) or topic.count("/") != 4:
        raise InvalidRequest("topic", f"must be persistent://tenant/namespace/name, got {topic!r}", "InvalidTopicName")
    name = topic.replace("://", "|").replace("/", "|")
    if len(name) > MAX_NAME_LENGTH or NAME_PATTERN.fullmatch(name) is None:
        raise InvalidRequest("topic", f"{topic!r}: names may hold only letters, digits, '%', '_' and '-', "
                             f"{MAX_NAME_LENGTH - 4} characters at most", "InvalidTopicName")
    return name


def entry_offset(ledger_id: int, entry_id: int) -> int | None:
    """The queue offset a message id names, or None for an id of no ledger of this broker."""
    return entry_id if ledger_id == LEDGER_ID else None
