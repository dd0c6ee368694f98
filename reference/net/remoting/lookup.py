"""Find a stored message by its commit-log (physical) offset: CONSUMER_SEND_MSG_BACK names the message
only by that offset (protocols/rocketmq-remoting.md §5.10), RocketMQ's ``lookMessageByOffset``.

The store has no public lookup by physical offset, so this reads its commit log directly, and only
returns a record that is intact and starts exactly at ``offset`` (a client may send any number).
"""

from __future__ import annotations

from reference.store.message import StoredMessage
from reference.store.record import MESSAGE_MAGIC, check_record, read_record
from reference.store.store import MessageStore


def message_at_commit_log_offset(store: MessageStore, offset: int) -> StoredMessage | None:
    commit_log = store._commit_log  # noqa: SLF001 - see the module doc
    if offset < 0:
        return None
    segment = commit_log.files.find(offset)
    if segment is None:
        return None
    pos = offset - segment.start
    length, header = check_record(segment.mm, pos, segment.size, offset)
    if header is None or length == 0 or header.magic != MESSAGE_MAGIC:
        return None
    return read_record(segment.mm, pos)
