"""Entry filtering before dispatch (seed 003 lines 41-51, 60): what a dispatcher must not send as a message.

Pulsar's ``filterEntriesForConsumer`` looks at every entry read from the ledger before ``sendMessages`` and takes
out three kinds: an entry whose checksum or metadata is corrupt, an internal *marker* (transaction and replication
markers the broker writes for itself), and a *delayed* message whose delivery time has not come. The first two are
never a consumer's business: the broker acknowledges them on the subscription's behalf, so they cost no permit,
are never sent and never hold the mark-delete position back. A delayed message is only held: it is sent once its
time has come (Pulsar tracks deliver-at times in shared subscriptions only; exclusive and failover dispatch it at
once, ``trackDelayedDelivery`` is false there).

The reference stores entries as store messages, so the entry's metadata is carried by properties:

* :data:`ENTRY_CHECKSUM` – a CRC-32 of the body (the reference's stand-in for Pulsar's CRC-32C), written by
  whoever stored the entry (absent: not checked);
* :data:`MARKER_TYPE` – set on an internal marker entry (its value is the marker's kind);
* :data:`DELIVER_AT_TIME` – the delivery time in ms (MessageMetadata.deliver_at_time).

A batch entry whose ``NUM_MESSAGES_IN_BATCH`` is not a positive count, or a deliver-at time that is not one, is
corrupt metadata too.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Mapping

from reference.broker.permits.batch import NUM_MESSAGES_IN_BATCH

#: The body's CRC-32 (zlib), as decimal text: the stand-in for an entry's magic and CRC-32C (pulsar-binary §2).
ENTRY_CHECKSUM = "PULSAR_ENTRY_CHECKSUM"
#: Set (to the marker's kind) on an internal marker entry (MessageMetadata.marker_type).
MARKER_TYPE = "PULSAR_MARKER_TYPE"
#: When a delayed message may be delivered, epoch ms as decimal text (MessageMetadata.deliver_at_time).
DELIVER_AT_TIME = "PULSAR_DELIVER_AT_TIME"


class EntryKind(enum.Enum):
    """What the filter makes of one entry."""

    DISPATCH = "dispatch"
    CORRUPT = "corrupt"
    MARKER = "marker"
    DELAYED = "delayed"


def checksum_properties(body: bytes) -> dict[str, str]:
    """The property that lets the filter verify ``body``."""
    return {ENTRY_CHECKSUM: str(zlib.crc32(body))}


def deliver_at(properties: Mapping[str, str]) -> int | None:
    text = properties.get(DELIVER_AT_TIME)
    return int(text) if text is not None and text.isdigit() else None


def classify(body: bytes, properties: Mapping[str, str], now_ms: int, track_delayed: bool) -> EntryKind:
    """The filter's verdict on one entry, in Pulsar's order: corrupt, marker, delayed (``track_delayed``: only
    dispatchers that track deliver-at times hold delayed messages)."""
    if _corrupt(body, properties):
        return EntryKind.CORRUPT
    if MARKER_TYPE in properties:
        return EntryKind.MARKER
    due = deliver_at(properties)
    if track_delayed and due is not None and due > now_ms:
        return EntryKind.DELAYED
    return EntryKind.DISPATCH


def _corrupt(body: bytes, properties: Mapping[str, str]) -> bool:
    expected = properties.get(ENTRY_CHECKSUM)
    if expected is not None and expected != str(zlib.crc32(body)):
        return True
    if DELIVER_AT_TIME in properties and deliver_at(properties) is None:
        return True
    count = properties.get(NUM_MESSAGES_IN_BATCH)
    return count is not None and (not count.isdigit() or int(count) < 1)
