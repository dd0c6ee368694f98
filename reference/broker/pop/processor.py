"""PopMessageProcessor: reads a batch for a pop and leaves a checkpoint for it (seed 004 §3.2, §4.2).

Theory of operation
-------------------
One pop (``pop``) draws a random number ``random_q`` in [0, 100) and a revive queue (round-robin),
takes its pop time, and reads, in this order, until the batch holds ``max_msg_nums`` messages:

1. the retry topic ``%RETRY%{group}_{topic}``, first, when ``random_q % 5 == 0`` (one pop in five),
   so that retried messages are not starved by a busy topic;
2. the topic: the requested queue, or, for queue id -1, every queue starting at ``random_q mod n``;
3. the retry topic again, to fill a batch the topic left short, unless step 1 already read it.

Each queue read (``pop_msg_from_queue``) locks ``{topic}@{group}@{queueId}`` (a locked queue is
skipped and only its backlog is counted), reads from the queue's *pop offset*, and leaves one
checkpoint for the messages it got. The pop offset is the newest in-flight pop's next offset, or the
committed consume offset (or the queue's min offset for a new group). When the store says that
offset is wrong (OFFSET_TOO_SMALL, OFFSET_OVERFLOW_BADLY, OFFSET_FOUND_NULL: retention moved the
queue on, or a crash cut it short) the processor commits the store's nextBeginOffset and reads
again from there (§4.2.2). ``rest_num`` adds up what was left behind in every queue visited.

An *ordered* pop (``request.order``) reads no retry topic, skips a queue whose previous ordered batch is
still unacknowledged and invisible, leaves no checkpoint, commits the queue's offset at the batch's start
and counts how often each message was handed out (:mod:`.order_info`).

Whether the pop is held when it finds nothing is the caller's business (:mod:`.service`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from reference.broker.pop.buffer import PopBufferMergeService
from reference.broker.pop.checkpoint import PopCheckPoint
from reference.broker.pop.config import RANDOM_Q_BOUND, RETRY_FIRST_MODULUS, PopConfig
from reference.broker.pop.keys import lock_key
from reference.broker.pop.order_info import POP_ORDER_REVIVE_QUEUE, ConsumerOrderInfoManager
from reference.broker.pop.protocol import ALL_QUEUES, PopMessageRequest
from reference.broker.pop.queue_lock import QueueLockManager
from reference.clock import Clock
from reference.rules.errors import require
from reference.rules.filter import SubscriptionData
from reference.rules.status import GetMessageStatus
from reference.rules.topics import pop_retry_topic
from reference.store.message import StoredMessage
from reference.store.names import check_name
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore

#: Store answers that mean the pop offset itself is wrong: commit nextBeginOffset, read again.
CORRECTED_STATUSES = (
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
)
#: Store answers after which the pop offset moves past units that gave the group nothing (addCkMock).
SKIP_STATUSES = (
    GetMessageStatus.NO_MATCHED_MESSAGE,
    GetMessageStatus.OFFSET_FOUND_NULL,
    GetMessageStatus.MESSAGE_WAS_REMOVING,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
)
_RETRY_SUBSCRIPTION = SubscriptionData.parse("", "*")

#: Called when the processor commits a corrected offset: (group, topic, queue_id, offset).
OffsetCommitter = Callable[[str, str, int, int], None]


@dataclass
class PoppedBatch:
    """What one pop read: messages with the checkpoint each belongs to and whether it is a retry."""

    pop_time: int
    revive_queue_id: int
    random_q: int
    entries: list[tuple[StoredMessage, PopCheckPoint, bool]] = field(default_factory=list)
    rest_num: int = 0
    #: An ordered pop's consume counts: (retry, queue id, queue offset) -> times handed out before.
    order_counts: dict[tuple[bool, int, int], int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.entries)


class PopMessageProcessor:
    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        buffer: PopBufferMergeService,
        locks: QueueLockManager,
        config: PopConfig,
        broker_name: str,
        clock: Clock,
        rng: random.Random,
        commit: OffsetCommitter,
        order_info: ConsumerOrderInfoManager | None = None,
    ) -> None:
        self.store = store
        self.order_info = order_info if order_info is not None else ConsumerOrderInfoManager()
        self.offsets = offsets
        self.buffer = buffer
        self.locks = locks
        self.config = config
        self.broker_name = broker_name
        self.clock = clock
        self.rng = rng
        self._commit = commit
        self._ck_counter = itertools.count()

    # -- validation ----------------------------------------------------------------------------
    def validate(self, request: PopMessageRequest) -> SubscriptionData:
        """Refuse a malformed pop before anything happens; returns its subscription."""
        check_name(request.consumer_group, "consumerGroup")
        nums = self.store.queue_nums(request.topic)  # raises TopicNotFound
        require(
            request.queue_id == ALL_QUEUES or 0 <= request.queue_id < nums,
            "queueId", f"must be -1 (all queues) or in [0, {nums}) for topic {request.topic!r}",
        )
        require(
            1 <= request.max_msg_nums <= self.config.max_msg_nums,
            "maxMsgNums", f"must be in [1, {self.config.max_msg_nums}]",
        )
        cfg = self.config
        require(
            cfg.min_invisible_time_ms <= request.invisible_time_ms <= cfg.max_invisible_time_ms,
            "invisibleTime", f"must be in [{cfg.min_invisible_time_ms}, {cfg.max_invisible_time_ms}] ms",
        )
        require(
            0 <= request.poll_time_ms <= cfg.max_poll_time_ms,
            "pollTime", f"must be in [0, {cfg.max_poll_time_ms}] ms",
        )
        check_name(pop_retry_topic(request.consumer_group, request.topic), "consumerGroup+topic (retry topic name)")
        return SubscriptionData.parse(request.topic, request.expression)

    # -- one pop -------------------------------------------------------------------------------
    def pop_time(self, born_time: int) -> int:
        """The instant invisibility counts from: when the batch is read, not when the request came."""
        return self.clock.now_ms()

    def pop(self, request: PopMessageRequest, subscription: SubscriptionData, born_time: int) -> PoppedBatch:
        random_q = self.rng.randrange(RANDOM_Q_BOUND)
        revive_queue_id = (
            POP_ORDER_REVIVE_QUEUE if request.order else next(self._ck_counter) % self.config.revive_queue_num
        )
        batch = PoppedBatch(self.pop_time(born_time), revive_queue_id, random_q)
        need_retry = random_q % RETRY_FIRST_MODULUS == 0
        if need_retry and not request.order:
            self._pop_retry(request, batch)
        nums = self.store.queue_nums(request.topic)
        queues = (
            [(random_q + i) % nums for i in range(nums)] if request.queue_id == ALL_QUEUES else [request.queue_id]
        )
        for queue_id in queues:
            self.pop_msg_from_queue(request.topic, False, request, subscription, queue_id, batch)
        if not need_retry and len(batch) < request.max_msg_nums and not request.order:
            self._pop_retry(request, batch)
        return batch

    def _pop_retry(self, request: PopMessageRequest, batch: PoppedBatch) -> None:
        topic = pop_retry_topic(request.consumer_group, request.topic)
        nums = self.store.topics().get(topic) or 0
        for i in range(nums):
            self.pop_msg_from_queue(topic, True, request, _RETRY_SUBSCRIPTION, (batch.random_q + i) % nums, batch)

    def pop_offset(self, topic: str, group: str, queue_id: int) -> int:
        """getPopOffset: the newest in-flight pop's next offset, else the committed offset, else (a new
        group) the queue's min offset, so that messages sent before the group started are popped."""
        committed = self.offsets.query_offset(group, topic, queue_id)
        if committed < 0:
            committed = self.store.get_min_offset_in_queue(topic, queue_id)
        return max(committed, self.buffer.latest_offset(topic, group, queue_id))

    def pop_msg_from_queue(
        self,
        topic: str,
        is_retry: bool,
        request: PopMessageRequest,
        subscription: SubscriptionData,
        queue_id: int,
        batch: PoppedBatch,
    ) -> None:
        group = request.consumer_group
        key = lock_key(topic, group, queue_id)
        offset = self.pop_offset(topic, group, queue_id)
        if not self.locks.try_lock(key):
            batch.rest_num += self.store.get_max_offset_in_queue(topic, queue_id) - offset
            return
        try:
            offset = self.pop_offset(topic, group, queue_id)
            if request.order and self.order_info.check_block(topic, group, queue_id, self.clock.now_ms()):
                batch.rest_num += self.store.get_max_offset_in_queue(topic, queue_id) - offset
                return
            wanted = request.max_msg_nums - len(batch)
            if wanted <= 0:
                batch.rest_num += self.store.get_max_offset_in_queue(topic, queue_id) - offset
                return
            result = self.store.get_message(group, topic, queue_id, offset, wanted, subscription)
            if result.status in CORRECTED_STATUSES:
                offset = result.next_begin_offset
                self.buffer.reset_offset_queue(topic, group, queue_id)
                self._commit(group, topic, queue_id, offset)
                result = self.store.get_message(group, topic, queue_id, offset, wanted, subscription)
            batch.rest_num += result.max_offset - result.next_begin_offset
            if result.messages:
                ck = PopCheckPoint(
                    topic, group, queue_id, offset,
                    tuple(m.queue_offset - offset for m in result.messages),
                    tuple(m.unique_id for m in result.messages),
                    batch.pop_time, request.invisible_time_ms, batch.revive_queue_id, self.broker_name,
                )
                if request.order:
                    self._ordered(ck, [m.queue_offset for m in result.messages], is_retry, batch)
                else:
                    self.buffer.add_checkpoint(ck, result.next_begin_offset)
                batch.entries.extend((m, ck, is_retry) for m in result.messages)
            elif result.status in SKIP_STATUSES and result.next_begin_offset > offset:
                if request.order:
                    self._commit(group, topic, queue_id, result.next_begin_offset)
                else:
                    self.buffer.add_offset_only(topic, group, queue_id, result.next_begin_offset)
        finally:
            self.locks.unlock(key)

    def _ordered(self, ck: PopCheckPoint, offsets: list[int], is_retry: bool, batch: PoppedBatch) -> None:
        """An ordered batch: remember it (the queue is blocked while it is invisible), count each message's
        deliveries and commit the queue's offset at the batch's start (seed 004 lines 592-599). The
        checkpoint only names the handles; it is never buffered nor revived."""
        counts = self.order_info.update(ck.topic, ck.group, ck.queue_id, ck.pop_time, ck.invisible_time, offsets)
        self._commit(ck.group, ck.topic, ck.queue_id, ck.start_offset)
        batch.order_counts.update({(is_retry, ck.queue_id, o): n for o, n in counts.items()})
