"""The names RocketMQ gives its system topics and the message properties that carry a retry's story.

A rule, not a broker detail: the client reads them to know a retried message (its original topic), the
simulator's judges and the auditor to tell a group's own topics from its retry and dead-letter topics.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Topic holding copies that wait for their delay; one queue per level.
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
#: RocketMQ's MixAll.RETRY_GROUP_TOPIC_PREFIX: every retry topic starts with it, a group's and a POP one alike.
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
#: KeyBuilder's separators of a POP retry topic's group and topic: v1 (``_``) and v2 (``+``, RocketMQ 5.1+).
POP_RETRY_SEPARATOR, POP_RETRY_SEPARATOR_V2 = "_", "+"

#: RocketMQ property names: the original topic of a retried message, the topic and queue a delayed
#: copy is bound for, its delay level, the original's offset message id.
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
#: mqtck additions: the original message's queue id and queue offset, so that a trace can name a retried
#: message by its original coordinates (trace-schema.md: retry topics appear only in ``detail``).
PROPERTY_ORIGIN_QUEUE_ID = "ORIGIN_QUEUE_ID"
PROPERTY_ORIGIN_QUEUE_OFFSET = "ORIGIN_QUEUE_OFFSET"


def retry_topic(group: str) -> str:
    """The group-wide retry topic ``%RETRY%{group}`` a push or pull consumer's send-backs go to."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def pop_retry_topic(group: str, topic: str) -> str:
    """KeyBuilder.buildPopRetryTopic: ``%RETRY%{group}_{topic}``, one per (group, topic) because a pop names a
    topic, unlike the group-wide :func:`retry_topic` of push consumers."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{POP_RETRY_SEPARATOR}{topic}"


def pop_retry_topic_v2(group: str, topic: str) -> str:
    """KeyBuilder.buildPopRetryTopicV2: ``%RETRY%{group}+{topic}`` (a RocketMQ 5.1+ broker's, read by clients)."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{POP_RETRY_SEPARATOR_V2}{topic}"


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    """Whether ``topic`` is a retry topic of any kind (a group's or a POP one)."""
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


#: Property set on a revived message: the pop time of its first delivery
#: (MessageConst.PROPERTY_FIRST_POP_TIME).
FIRST_POP_TIME = "1ST_POP_TIME"
#: Properties keeping where a revived message was first stored, so its trace rows name the original
#: queue and offset (the retry topic's own queue and offset go to ``detail``).
PROPERTY_POP_ORIGIN_QUEUE_ID = "POP_ORIGIN_QUEUE_ID"
PROPERTY_POP_ORIGIN_QUEUE_OFFSET = "POP_ORIGIN_QUEUE_OFFSET"


def pop_origin(properties: Mapping[str, str], queue_id: int, queue_offset: int) -> tuple[int, int]:
    """(queue id, offset) where a message was first stored: its own location, or for a revived copy
    the origin kept in its properties."""
    if PROPERTY_POP_ORIGIN_QUEUE_ID in properties and PROPERTY_POP_ORIGIN_QUEUE_OFFSET in properties:
        try:
            return (int(properties[PROPERTY_POP_ORIGIN_QUEUE_ID]),
                    int(properties[PROPERTY_POP_ORIGIN_QUEUE_OFFSET]))
        except ValueError:
            pass
    return queue_id, queue_offset
