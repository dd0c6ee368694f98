"""Delay levels on send: where a producer's message with a ``DELAY`` property goes (RocketMQ's CommitLog.putMessage).

A producer asks for a delay by its ``delayTimeLevel`` (the ``DELAY`` property, 1..18 of RocketMQ's messageDelayLevel
"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"). The broker does not hold it in a timer: it stores it
in ``SCHEDULE_TOPIC_XXXX``, queue ``level - 1``, with the real topic and queue in its properties, and the schedule
service that send-back already uses (:class:`reference.broker.send_back.ScheduleMessageService`) re-puts it into
its topic when the level's delay has passed. A level above 18 is 18 (upstream clamps it to maxDelayLevel); a level
of 0 or less is no delay. A value that is not an integer is refused: upstream's ``Integer.parseInt`` would fail the
send too, with a Java exception as the remark.
"""

from __future__ import annotations

from collections.abc import Mapping

from reference.broker.send_back import DELAY_LEVELS_MS
from reference.rules.errors import InvalidRequest
from reference.rules.topics import PROPERTY_DELAY_TIME_LEVEL


def delay_level(properties: Mapping[str, str]) -> int:
    """The delay level a message's properties ask for, clamped to the highest level; 0 for none."""
    text = properties.get(PROPERTY_DELAY_TIME_LEVEL, "")
    if not text:
        return 0
    try:
        level = int(text)
    except ValueError:
        raise InvalidRequest(
            f"properties.{PROPERTY_DELAY_TIME_LEVEL}", f"must be an integer delay level, got {text!r}"
        ) from None
    return min(level, len(DELAY_LEVELS_MS)) if level > 0 else 0


def delay_ms(level: int) -> int:
    """How long a message of ``level`` (1-based) waits in the schedule topic."""
    return DELAY_LEVELS_MS[level - 1]
