"""PopService: the broker's POP side, wired together, with its trace rows.

The broker facade (:mod:`reference.broker.broker`) delegates pop, ack, change of invisible time and
query assignment here. This module owns the request cycle of a pop (read, then answer or hold), the
conversion of stored messages into popped messages with receipt handles, and the trace rows POP,
ACK, CHANGE_INVISIBLE, REVIVE and ASSIGN (trace schema v1): ``topic`` is always the topic the
consumer named, a retry topic appears only in ``detail``, and ``msg_id`` is the message's unique id,
the same on every delivery and revive. The pop offset's commits are not recorded as COMMIT rows: they
move past messages that are unacknowledged but safe in the revive log, which an auditor's "unsafe
commit" rule for pulling groups would wrongly flag.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from reference.allocation.message_queue import MessageQueue
from reference.broker.consumer_manager import ConsumerManager
from reference.broker.pop.ack import SUBSCRIPTION_GROUP_NOT_EXIST, AckMessageProcessor, ResolvedHandle
from reference.broker.pop.assignment import DEFAULT_STRATEGY, QueryAssignmentProcessor
from reference.broker.pop.buffer import PopBufferMergeService
from reference.broker.pop.checkpoint import PopCheckPoint
from reference.broker.pop.config import PopConfig
from reference.broker.pop.keys import normal_topic
from reference.broker.pop.long_polling import HeldPop, PollingResult, PopLongPollingService
from reference.broker.pop.order_ack import OrderAckProcessor, is_ordered_handle
from reference.broker.pop.order_info import ConsumerOrderInfoManager
from reference.broker.pop.processor import PopMessageProcessor, PoppedBatch
from reference.broker.pop.protocol import (
    AckResult,
    ChangeInvisibleResult,
    PopChannel,
    PopMessageRequest,
    PoppedMessage,
    PopResponse,
)
from reference.broker.pop.queue_lock import QueueLockManager
from reference.broker.pop.receipt import ReceiptHandle
from reference.broker.pop.revive import PopReviveService
from reference.broker.pop.revive_log import ReviveLog
from reference.clock import Clock
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest
from reference.rules.topics import pop_origin, pop_retry_topic
from reference.store.message import PutMessageResult, StoredMessage
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore
from reference.trace import SourceRecorder


class PopService:
    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        consumer_manager: ConsumerManager,
        broker_name: str,
        config: PopConfig,
        clock: Clock,
        rng: random.Random,
        rec: SourceRecorder,
        *,
        processor: type[PopMessageProcessor] = PopMessageProcessor,
        buffer: type[PopBufferMergeService] = PopBufferMergeService,
        revive: type[PopReviveService] = PopReviveService,
        acks: type[AckMessageProcessor] = AckMessageProcessor,
        group_exists: Callable[[str], bool] = lambda group: True,
    ) -> None:
        """The four part classes are the broker's components (``BrokerComponents.pop_*``): a seeded fault
        swaps one there, and the broker hands them on. ``group_exists`` is the subscription group table's look-up
        (creating a missing group while auto-creation is on): a pop from a group that does not exist is refused,
        and the revive skips its checkpoints."""
        self.store = store
        self.offsets = offsets
        self.broker_name = broker_name
        self.config = config
        self.clock = clock
        self.rec = rec
        self.revive_log = ReviveLog(store, config)
        self.buffer = buffer(config, clock, self.revive_log, self._commit_offset, self._on_ck_stored)
        self.group_exists = group_exists
        self.revive = revive(store, offsets, self.revive_log, config, clock, self._on_revived)
        self.revive.group_exists = group_exists
        self.locks = QueueLockManager()
        self.order_info = ConsumerOrderInfoManager()
        self.processor = processor(
            store, offsets, self.buffer, self.locks, config, broker_name, clock, rng, self._commit_offset,
            self.order_info,
        )
        self.long_polling = PopLongPollingService(config, clock, self._wake, self._expire)
        self.acks = acks(
            store, self.buffer, self.revive, self.revive_log, config, broker_name, clock, self.known_group
        )
        self.order_acks = OrderAckProcessor(store, self.order_info, broker_name, self._commit_offset, self.known_group)
        self.assignment = QueryAssignmentProcessor(store, consumer_manager, broker_name, rec, self.consume_offset)
        self._popped_groups: set[tuple[str, str]] = set()
        store.add_arrival_listener(self._on_arrival)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.revive.start()

    def shutdown(self) -> None:
        """Drop held pops, write buffered checkpoints to the revive log, commit what is done."""
        self.long_polling.shutdown()
        self.buffer.shutdown()
        self.revive.shutdown()

    # -- pop -----------------------------------------------------------------------------------
    def pop(self, request: PopMessageRequest, channel: PopChannel) -> PopResponse | None:
        """Answer a pop now, or hold it (None) and answer later through ``channel.deliver_pop``."""
        subscription = self.processor.validate(request)
        if not self.group_exists(request.consumer_group):  # upstream PopMessageProcessor.processRequest
            raise InvalidRequest("consumerGroup", f"subscription group [{request.consumer_group}] does not exist "
                                 "(autoCreateSubscriptionGroup is off)", SUBSCRIPTION_GROUP_NOT_EXIST)
        return self._process(HeldPop(request, channel, subscription, self.clock.now_ms()))

    def _process(self, held: HeldPop) -> PopResponse | None:
        request = held.request
        batch = self.processor.pop(request, held.subscription, held.born_time)
        self._popped_groups.add((request.consumer_group, request.topic))
        held_ms = self.clock.now_ms() - held.born_time
        if batch.entries:
            messages = tuple(self._popped(request, batch, m, ck, retry) for m, ck, retry in batch.entries)
            if batch.rest_num > 0:
                self.long_polling.notify_message_arriving(
                    request.topic, request.queue_id, group=request.consumer_group, exact=True
                )
            return PopResponse(
                ResponseCode.SUCCESS, "FOUND", messages, batch.rest_num, batch.pop_time,
                request.invisible_time_ms, batch.revive_queue_id, held_ms, dict(batch.order_counts),
            )
        polling = self.long_polling.polling(held)
        if polling is PollingResult.POLLING_SUC:
            return None
        full = polling is PollingResult.POLLING_FULL
        code = ResponseCode.POLLING_FULL if full else ResponseCode.POLLING_TIMEOUT
        return PopResponse(
            code, "NO_MESSAGE", (), batch.rest_num, batch.pop_time, request.invisible_time_ms,
            batch.revive_queue_id, held_ms,
        )

    def _wake(self, held: HeldPop) -> None:
        response = self._process(held)
        if response is not None:
            held.channel.deliver_pop(held.request, response)

    def _expire(self, held: HeldPop) -> None:
        request = held.request
        held.channel.deliver_pop(
            request,
            PopResponse(
                ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE", (), 0, self.clock.now_ms(), request.invisible_time_ms,
                0, self.clock.now_ms() - held.born_time,
            ),
        )

    def _popped(
        self, request: PopMessageRequest, batch: PoppedBatch, message: StoredMessage, ck: PopCheckPoint, retry: bool
    ) -> PoppedMessage:
        handle = ReceiptHandle(
            ck.start_offset, ck.pop_time, ck.invisible_time, ck.revive_queue_id, retry, self.broker_name,
            message.queue_id, message.queue_offset,
        ).encode()
        queue_id, offset = _origin(message)
        self.rec.record(
            "POP", group=request.consumer_group, client_id=request.client_id, topic=request.topic,
            broker=self.broker_name, queue_id=queue_id, offset=offset, msg_id=message.unique_id, handle=handle,
            invisible_ms=ck.invisible_time, reconsume_times=message.reconsume_times, status="FOUND",
            detail={"retry_topic": ck.topic, "retry_queue_id": message.queue_id, "retry_offset": message.queue_offset}
            if retry else None,
        )
        return PoppedMessage(
            request.topic, message.queue_id, message.queue_offset, message.body, message.tags, message.keys,
            message.properties, message.unique_id, handle, message.reconsume_times, retry,
            message.store_timestamp, message.born_timestamp, message.commit_log_offset,
        )

    # -- ack and change invisible time ---------------------------------------------------------
    def ack(self, group: str, topic: str, handle: object, client_id: str = "") -> AckResult:
        ordered = is_ordered_handle(handle)
        try:
            resolved = self.order_acks.ack(group, topic, handle) if ordered else self.acks.ack(group, topic, handle)
        except InvalidRequest as exc:
            self._record_refused_ack(group, topic, handle, client_id, exc)
            raise
        if ordered:  # the queue may be free now: wake its held ordered pops
            self.long_polling.notify_message_arriving(topic, resolved.ck.queue_id, group=group)
        self._record_ack(resolved, group, topic, str(handle), client_id, "OK")
        return AckResult(resolved.msg_id)

    def change_invisible_time(
        self, group: str, topic: str, handle: object, invisible_time_ms: int, client_id: str = ""
    ) -> ChangeInvisibleResult:
        if is_ordered_handle(handle):  # stays in its ordered batch (upstream processChangeInvisibleTimeForOrder)
            resolved, new = self.order_acks.change_invisible(group, topic, handle, invisible_time_ms,
                                                             self.clock.now_ms())
        else:
            resolved, new = self.acks.change_invisible_time(group, topic, handle, invisible_time_ms)
        queue_id, offset = self._origin_of(resolved)
        self.rec.record(
            "CHANGE_INVISIBLE", group=group, client_id=client_id, handle=str(handle), invisible_ms=invisible_time_ms,
            msg_id=resolved.msg_id, topic=topic, broker=self.broker_name, queue_id=queue_id, offset=offset,
            detail={"new_handle": new.encode()},
        )
        return ChangeInvisibleResult(resolved.msg_id, new.encode(), new.pop_time, invisible_time_ms)

    def _record_ack(
        self, resolved: ResolvedHandle, group: str, topic: str, handle: str, client_id: str, status: str
    ) -> None:
        queue_id, offset = self._origin_of(resolved)
        self.rec.record(
            "ACK", group=group, client_id=client_id, handle=handle, status=status, msg_id=resolved.msg_id,
            topic=topic, broker=self.broker_name, queue_id=queue_id, offset=offset,
        )

    def _record_refused_ack(self, group: str, topic: str, handle: object, client_id: str, exc: InvalidRequest) -> None:
        self.rec.record(
            "ACK", group=str(group), client_id=client_id, handle=str(handle), status=exc.code, msg_id="",
            topic=str(topic), detail={"field": exc.field, "rule": exc.rule},
        )

    def _origin_of(self, resolved: ResolvedHandle) -> tuple[int, int]:
        """Queue and offset of the message as first stored (a retried message's origin)."""
        if not resolved.handle.retry:
            return resolved.ck.queue_id, resolved.handle.offset
        result = self.store.get_message(resolved.ck.group, resolved.ck.topic, resolved.ck.queue_id,
                                        resolved.handle.offset, 1, None)
        for message in result.messages:
            return _origin(message)
        return resolved.ck.queue_id, resolved.handle.offset

    # -- assignment ----------------------------------------------------------------------------
    def query_assignment(
        self, topic: str, group: str, client_id: str, strategy_name: str = DEFAULT_STRATEGY,
        message_model: str = "CLUSTERING", pop_share_queue_num: int = -1, mode: str = "POP",
    ) -> list[MessageQueue]:
        return self.assignment.query_assignment(
            topic, group, client_id, strategy_name, message_model, pop_share_queue_num, mode
        )

    def consume_offset(self, group: str, topic: str, queue_id: int) -> int:
        """Where the group's next pop of the queue starts."""
        return self.processor.pop_offset(topic, group, queue_id)

    def known_group(self, group: str, topic: str) -> bool:
        """Whether ``group`` consumes ``topic`` by POP here: it popped it since the broker started, it
        has committed pop offsets for it or its retry topic, or a checkpoint of it is pending."""
        if (group, topic) in self._popped_groups:
            return True
        if self.offsets.offsets_of(group, topic) or self.offsets.offsets_of(group, pop_retry_topic(group, topic)):
            return True
        self.revive.catch_up()
        return any(
            p.ck.group == group and normal_topic(p.ck.topic, group) == topic
            for table in self.revive.pending.values() for p in table.values()
        )

    # -- callbacks -----------------------------------------------------------------------------
    def _commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.offsets.commit_offset(group, topic, queue_id, offset)

    def _on_ck_stored(self, ck: PopCheckPoint) -> None:
        self.revive.catch_up()

    def _on_arrival(self, topic: str, queue_id: int, max_offset: int, tags_code: int, store_timestamp: int) -> None:
        self.long_polling.notify_message_arriving(topic, queue_id, tags_code)

    def _on_revived(self, ck: PopCheckPoint, message: StoredMessage, target: str, result: PutMessageResult) -> None:
        topic = normal_topic(ck.topic, ck.group)
        queue_id, offset = _origin(message)
        self.rec.record(
            "REVIVE", group=ck.group, msg_id=message.unique_id, reconsume_times=message.reconsume_times + 1,
            topic=topic, broker=self.broker_name, queue_id=queue_id, offset=offset,
            detail={
                "retry_topic": target, "retry_queue_id": result.queue_id, "retry_offset": result.queue_offset,
                "pop_time": ck.pop_time, "revive_time": ck.revive_time,
            },
        )
        self.long_polling.notify_message_arriving(topic, None, group=ck.group)


def _origin(message: StoredMessage) -> tuple[int, int]:
    return pop_origin(message.properties, message.queue_id, message.queue_offset)
