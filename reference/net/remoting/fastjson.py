"""Bodies with object keys, as RocketMQ's RemotingSerializable (fastjson) writes a ``Map<MessageQueue, …>``.

TopicStatsTable, ConsumeStats and ResetOffsetBody key their tables by a MessageQueue, and fastjson writes such a
key as the object itself: ``{{"brokerName":"b","queueId":0,"topic":"T"}:{…}}``. That is not JSON, but it is what
fastjson reads back, so mqadmin accepts nothing else. :class:`ObjectKeyed` is such a table; :func:`encode` writes
a value made of dicts, lists, scalars and ObjectKeyed tables compactly, as :func:`command.encode_body` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ObjectKeyed:
    """A map whose keys are objects: (key, value) pairs, in order."""

    pairs: tuple[tuple[dict[str, Any], Any], ...]


def message_queue(topic: str, broker_name: str, queue_id: int) -> dict[str, Any]:
    """A MessageQueue as fastjson writes it (fields sorted by name)."""
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


def _write(value: Any) -> str:
    if isinstance(value, ObjectKeyed):
        return "{" + ",".join(f"{_write(k)}:{_write(v)}" for k, v in value.pairs) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{_write(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_write(v) for v in value) + "]"
    return json.dumps(value)


def encode(value: Any) -> bytes:
    """``value`` as fastjson would write it, UTF-8."""
    return _write(value).encode("utf-8")
