"""Send-back and delayed re-delivery: where a message goes when a consumer answers RECONSUME_LATER.

Theory of operation
-------------------
A clustering consumer that fails a message sends it back (seed 001 §5 processConsumeResult; RocketMQ's
ConsumerSendMsgBackProcessor). The broker stores a *copy* and the consumer may then advance past the
original, so nothing is lost as long as the copy is stored before the consumer commits:

* ``reconsume_times >= max_reconsume_times`` (default 16) or a negative delay level: the copy goes
  to the dead-letter topic ``%DLQ%{group}`` at once and is never delivered again;
* otherwise it is stored in ``SCHEDULE_TOPIC_XXXX``, queue ``delay_level - 1`` (level 0 means
  ``3 + reconsume_times``), and :class:`ScheduleMessageService` re-puts it into ``%RETRY%{group}``
  once the level's delay has passed since it was stored, with ``reconsume_times + 1``.

Keeping the waiting copy *in the store* (not in a timer) is what makes a retry survive a broker
restart: the service's per-level progress is a small JSON file, so a restart re-puts everything not
yet delivered (a copy delivered just before a crash may be delivered again, which at-least-once
allows). Every copy keeps the original's ``UNIQ_KEY`` (so the trace's ``msg_id`` is stable across
retries) and remembers the original topic, queue and offset in its properties, which the consumer
uses to report it under the original coordinates.
"""

from __future__ import annotations

from pathlib import Path

from reference.broker.protocol import SendBackResult
from reference.clock import Clock, TimerHandle
from reference.rules.errors import require
from reference.rules.topics import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_ORIGIN_QUEUE_ID,
    PROPERTY_ORIGIN_QUEUE_OFFSET,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
    SCHEDULE_TOPIC,
    dlq_topic,
    retry_topic,
)
from reference.store.jsonfile import read_json, write_json_atomic
from reference.store.message import UNIQ_KEY, Message, PutMessageResult, StoredMessage
from reference.store.store import MessageStore

#: RocketMQ's messageDelayLevel "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h": level
#: ``n`` (1-based) waits ``DELAY_LEVELS_MS[n - 1]``.
DELAY_LEVELS_MS: tuple[int, ...] = (
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
    480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
)
#: A send-back with delay level 0 lets the broker choose ``FIRST_RETRY_DELAY_LEVEL + reconsume_times``
#: (RocketMQ: ``3 + msgExt.getReconsumeTimes()``), so the first retry waits 10 s.
FIRST_RETRY_DELAY_LEVEL = 3
#: RocketMQ's default maxReconsumeTimes (a consumer's -1 means this).
DEFAULT_MAX_RECONSUME_TIMES = 16
#: Queues of a group's retry and dead-letter topics (RocketMQ's retryQueueNums default 1).
RETRY_QUEUE_NUMS = 1
DLQ_QUEUE_NUMS = 1

#: Properties that only steer the schedule service and are removed when the copy is re-put.
_SCHEDULE_ONLY = (PROPERTY_REAL_TOPIC, PROPERTY_REAL_QUEUE_ID, PROPERTY_DELAY_TIME_LEVEL)
#: Copies read from a level queue per store read.
_SCHEDULE_BATCH = 32


class ScheduleMessageService:
    """Re-puts delayed copies into their real topic when due (RocketMQ's ScheduleMessageService).

    A level's queue is in store order, which is due order (one delay per level), so only its head
    needs a timer. Progress (the next offset per level) is written after each delivery run.
    """

    def __init__(self, store: MessageStore, offsets_path: Path, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._path = offsets_path
        document = read_json(offsets_path)
        table = document.get("offsetTable", {}) if isinstance(document, dict) else {}
        self._offsets: dict[int, int] = {int(level): int(offset) for level, offset in table.items()}
        self._timers: dict[int, TimerHandle] = {}
        self._running = False

    def start(self) -> None:
        """Resume every level that has copies not yet delivered (after a restart, too)."""
        self._running = True
        if SCHEDULE_TOPIC in self.store.topics():
            for level in range(1, len(DELAY_LEVELS_MS) + 1):
                self.kick(level)

    def shutdown(self) -> None:
        self._running = False
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._persist()

    def schedule(self, message: Message, level: int) -> tuple[int, int]:
        """Store ``message`` (already carrying REAL_TOPIC / REAL_QID) in level ``level``'s queue;
        returns (schedule queue id, offset)."""
        result = self.schedule_message(message, level)
        return result.queue_id, result.queue_offset

    def schedule_message(self, message: Message, level: int) -> PutMessageResult:
        """:meth:`schedule`, answering the store's result (a producer's delayed send answers with it)."""
        self.store.create_topic(SCHEDULE_TOPIC, len(DELAY_LEVELS_MS))
        props = dict(message.properties)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        result = self.store.put_message(
            Message(SCHEDULE_TOPIC, message.body, level - 1, message.tags, message.keys, props,
                    message.born_timestamp, message.reconsume_times)
        )
        self.kick(level)
        return result

    def kick(self, level: int) -> None:
        """Deliver what is due on ``level`` now, unless a timer for its head is already pending."""
        if self._running and level not in self._timers:
            self._deliver(level)

    def _fire(self, level: int) -> None:
        self._timers.pop(level, None)
        if self._running:
            self._deliver(level)

    def _deliver(self, level: int) -> None:
        queue_id, delay = level - 1, DELAY_LEVELS_MS[level - 1]
        offset = self._offsets.get(level, 0)
        moved = False
        while True:
            result = self.store.get_message("SCHEDULE", SCHEDULE_TOPIC, queue_id, offset, _SCHEDULE_BATCH, None)
            if not result.messages:
                if offset < result.next_begin_offset <= result.max_offset:
                    offset, moved = result.next_begin_offset, True  # retention removed the head
                    continue
                break
            head_due = None
            for stored in result.messages:
                due = stored.store_timestamp + delay
                if due > self.clock.now_ms():
                    head_due = due
                    break
                self._re_put(stored)
                offset, moved = stored.queue_offset + 1, True
            if head_due is not None:
                self._timers[level] = self.clock.call_later(head_due - self.clock.now_ms(), lambda: self._fire(level))
                break
            offset = max(offset, result.next_begin_offset)
        if moved:
            self._offsets[level] = offset
            self._persist()

    def _re_put(self, stored: StoredMessage) -> None:
        props = {k: v for k, v in stored.properties.items() if k not in _SCHEDULE_ONLY}
        real_topic = stored.properties[PROPERTY_REAL_TOPIC]
        queue_nums = self.store.queue_nums(real_topic)
        queue_id = int(stored.properties.get(PROPERTY_REAL_QUEUE_ID, "0")) % queue_nums
        self.store.put_message(
            Message(real_topic, stored.body, queue_id, stored.tags, stored.keys, props, stored.born_timestamp,
                    stored.reconsume_times)
        )

    def _persist(self) -> None:
        write_json_atomic(self._path, {"offsetTable": {str(k): v for k, v in sorted(self._offsets.items())}})


class ConsumerSendMsgBackProcessor:
    """The broker side of ``consumerSendMessageBack``: choose retry or dead letter, store the copy."""

    def __init__(self, store: MessageStore, offsets_path: Path, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.schedule_service = ScheduleMessageService(store, offsets_path, clock)

    def start(self) -> None:
        self.schedule_service.start()

    def shutdown(self) -> None:
        self.schedule_service.shutdown()

    def send_back(
        self, group: str, message: StoredMessage, delay_level: int = 0,
        max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES,
    ) -> SendBackResult:
        require(bool(group), "consumerGroup", "must be a non-empty group name")
        require(max_reconsume_times >= 0, "maxReconsumeTimes", "must be >= 0")
        reconsume_times = message.reconsume_times
        props = _copy_properties(message)
        if reconsume_times >= max_reconsume_times or delay_level < 0:
            topic = dlq_topic(group)
            self.store.create_topic(topic, DLQ_QUEUE_NUMS)
            stored = self.store.put_message(
                Message(topic, message.body, 0, message.tags, message.keys, props, message.born_timestamp,
                        reconsume_times + 1)
            )
            return SendBackResult(topic, True, delay_level, reconsume_times + 1, stored.queue_id,
                                  stored.queue_offset, self.clock.now_ms())
        level = delay_level or FIRST_RETRY_DELAY_LEVEL + reconsume_times
        level = min(max(level, 1), len(DELAY_LEVELS_MS))
        topic = retry_topic(group)
        self.store.create_topic(topic, RETRY_QUEUE_NUMS)
        props[PROPERTY_REAL_TOPIC] = topic
        props[PROPERTY_REAL_QUEUE_ID] = "0"
        queue_id, offset = self.schedule_service.schedule(
            Message(topic, message.body, 0, message.tags, message.keys, props, message.born_timestamp,
                    reconsume_times + 1),
            level,
        )
        return SendBackResult(topic, False, level, reconsume_times + 1, queue_id, offset,
                              self.clock.now_ms() + DELAY_LEVELS_MS[level - 1])


def _copy_properties(message: StoredMessage) -> dict[str, str]:
    """The copy's properties: the original's, plus where it came from (kept from the first send-back
    on, so a message retried many times still names its first topic, queue and offset)."""
    props: dict[str, str] = dict(message.properties)
    props.setdefault(PROPERTY_RETRY_TOPIC, message.topic)
    props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, message.msg_id)
    props.setdefault(PROPERTY_ORIGIN_QUEUE_ID, str(message.queue_id))
    props.setdefault(PROPERTY_ORIGIN_QUEUE_OFFSET, str(message.queue_offset))
    props.setdefault(UNIQ_KEY, message.unique_id)
    return props
