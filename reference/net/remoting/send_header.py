"""A send's header under its full names, whichever of RocketMQ's two header shapes the client used (§3.1).

SEND_MESSAGE carries ``SendMessageRequestHeader`` (``topic``, ``queueId``, ...); SEND_MESSAGE_V2 carries
``SendMessageRequestHeaderV2``, the same fields under one-letter names. SEND_BATCH_MESSAGE is decoded by RocketMQ's
broker as V2 (``SendMessageProcessor.parseRequestHeader``), which is what the Java client sends; the C++ client
sends it with the full names. A batch is read in the shape its fields are in.

One function reads the header for every reader (the request table, the ACL check, the wire recorder): a request
whose topic one reader took from ``b`` and another from ``topic`` could be checked under one name and stored under
the other.
"""

from __future__ import annotations

from reference.net.remoting.command import RemotingCommand, RequestCode

#: SEND_MESSAGE_V2's one-letter header keys and their full names.
SEND_V2_KEYS = {
    "a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
    "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes", "k": "unitMode",
    "l": "maxReconsumeTimes", "m": "batch", "n": "brokerName",
}


def uses_v2_names(cmd: RemotingCommand) -> bool:
    """SEND_MESSAGE_V2 always; SEND_BATCH_MESSAGE when it names its topic ``b`` (a Java client's batch)."""
    if cmd.code == RequestCode.SEND_MESSAGE_V2:
        return True
    return cmd.code == RequestCode.SEND_BATCH_MESSAGE and "topic" not in cmd.ext_fields and "b" in cmd.ext_fields


def send_header(cmd: RemotingCommand) -> tuple[dict[str, str], bool]:
    """A send's header fields under their full names, and whether its body is a batch (SEND_BATCH_MESSAGE, or the
    ``batch`` flag)."""
    ext = {SEND_V2_KEYS.get(k, k): v for k, v in cmd.ext_fields.items()} if uses_v2_names(cmd) else cmd.ext_fields
    return ext, cmd.code == RequestCode.SEND_BATCH_MESSAGE or ext.get("batch", "").lower() in ("1", "true")
