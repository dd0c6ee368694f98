"""ConsumeMessageConcurrentlyService: hands pulled messages to the listener and processes its answer.

Theory of operation (seed 001 §5)
---------------------------------
Pulled messages are split into batches of ``consumeMessageBatchMaxSize`` (1) and each batch becomes
a :class:`ConsumeRequest` on the consume executor. A request:

1. when a thread takes it, skips itself if its ProcessQueue is dropped (the queue was given away);
   otherwise it records DELIVER and calls the listener;
2. when the listener is done, checks ``dropped`` **again** before processing the result. A queue
   dropped while the listener ran is not ours any more: its result is discarded, nothing is
   committed, and the new owner consumes the batch again (the rebalance duplicate of seed 001 §5);
3. otherwise processes the result: a failed message (RECONSUME_LATER, or the listener raised) is
   sent back to ``%RETRY%{group}`` (clustering; broadcasting drops it, as RocketMQ does); if sending
   back fails, the message stays in the ProcessQueue and is consumed again here after 5 s; the
   batch is removed from the ProcessQueue and the offset it returns (the smallest still cached) is
   the new commit point.

Each message's outcome is recorded as CONSUME (``OK``, ``LATER``, ``ERROR``), with ``detail``
saying what happened to a failure (``retry``: the retry topic, or ``local``; ``dead_letter``;
``discarded`` in broadcasting) and ``dropped`` when the result was discarded. DELIVER and CONSUME
name a retried message by its original topic, queue and offset; the retry queue is in ``detail``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from reference.allocation.message_queue import MessageQueue
from reference.broker.protocol import SendBackResult
from reference.client.config import ConsumerConfig, MessageModel
from reference.client.executor import ConsumeExecutor
from reference.client.offset_store import OffsetStore
from reference.client.process_queue import ProcessQueue
from reference.clock import Clock
from reference.rules.topics import PROPERTY_ORIGIN_QUEUE_ID, PROPERTY_ORIGIN_QUEUE_OFFSET, PROPERTY_RETRY_TOPIC
from reference.store.message import StoredMessage
from reference.trace import SourceRecorder


class ConsumeConcurrentlyStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


_SUCCESS = ConsumeConcurrentlyStatus.CONSUME_SUCCESS

#: ConsumeConcurrentlyContext's default ackIndex (Integer.MAX_VALUE): the whole batch succeeded.
ACK_INDEX_ALL = 2**31 - 1


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    message_queue: MessageQueue
    #: 0 lets the broker pick the retry delay (3 + reconsume times); -1 sends straight to %DLQ%.
    delay_level_when_next_consume: int = 0
    #: With CONSUME_SUCCESS, messages after this index are treated as failed.
    ack_index: int = ACK_INDEX_ALL


class MessageListenerConcurrently(Protocol):
    def consume_message(
        self, msgs: list[StoredMessage], context: ConsumeConcurrentlyContext
    ) -> ConsumeConcurrentlyStatus | None: ...


class ConsumeOwner(Protocol):
    """What the service needs from its push consumer."""

    config: ConsumerConfig
    client_id: str
    offset_store: OffsetStore

    def send_message_back(self, msg: StoredMessage, delay_level: int) -> SendBackResult | None: ...


class ConsumeRequest:
    """One batch on the executor (the ConsumeRequest Runnable, split at the listener's return)."""

    __slots__ = ("msgs", "process_queue", "message_queue", "service", "status", "context", "raised")

    def __init__(
        self, msgs: list[StoredMessage], process_queue: ProcessQueue, message_queue: MessageQueue,
        service: ConsumeMessageConcurrentlyService,
    ) -> None:
        self.msgs = msgs
        self.process_queue = process_queue
        self.message_queue = message_queue
        self.service = service
        self.status: ConsumeConcurrentlyStatus | None = None
        self.context: ConsumeConcurrentlyContext | None = None
        self.raised = False

    def begin(self) -> bool:
        return self.service.begin(self)

    def complete(self) -> None:
        self.service.complete(self)


def trace_coordinates(msg: StoredMessage) -> tuple[str, int, int, dict[str, Any] | None]:
    """(topic, queue id, offset, detail) naming ``msg`` in the trace: a retry copy by its original."""
    props: Mapping[str, str] = msg.properties
    if not props or PROPERTY_RETRY_TOPIC not in props:
        return msg.topic, msg.queue_id, msg.queue_offset, None
    origin_topic = props[PROPERTY_RETRY_TOPIC]
    return (
        origin_topic, int(props[PROPERTY_ORIGIN_QUEUE_ID]), int(props[PROPERTY_ORIGIN_QUEUE_OFFSET]),
        {"retry_topic": msg.topic, "retry_queue_id": msg.queue_id, "retry_offset": msg.queue_offset},
    )


def reset_retry_topic(msg: StoredMessage) -> StoredMessage:
    """resetRetryAndNamespace: the listener sees a retried message under its original topic."""
    origin_topic = msg.properties.get(PROPERTY_RETRY_TOPIC) if msg.properties else None
    return msg if origin_topic is None else dataclasses.replace(msg, topic=origin_topic)


class ConsumeMessageConcurrentlyService:
    def __init__(
        self, consumer: ConsumeOwner, listener: MessageListenerConcurrently, executor: ConsumeExecutor,
        clock: Clock, rec: SourceRecorder,
    ) -> None:
        self.consumer = consumer
        self.listener = listener
        self.executor = executor
        self.clock = clock
        self.rec = rec
        self.group = consumer.config.consumer_group
        self.client_id = consumer.client_id
        self.batch_size = consumer.config.consume_message_batch_max_size
        self.clustering = consumer.config.message_model is MessageModel.CLUSTERING

    # -- submission ----------------------------------------------------------------------------
    def submit_consume_request(
        self, msgs: list[StoredMessage], process_queue: ProcessQueue, message_queue: MessageQueue,
        dispatch_to_consume: bool,
    ) -> None:
        size, submit = self.batch_size, self.executor.submit
        if len(msgs) <= size:
            submit(ConsumeRequest(msgs, process_queue, message_queue, self))
            return
        for i in range(0, len(msgs), size):
            submit(ConsumeRequest(msgs[i:i + size], process_queue, message_queue, self))

    def submit_consume_request_later(
        self, msgs: list[StoredMessage], process_queue: ProcessQueue, message_queue: MessageQueue
    ) -> None:
        self.clock.call_later(
            self.consumer.config.consume_request_later_delay_ms,
            partial(self.submit_consume_request, msgs, process_queue, message_queue, True),
        )

    def shutdown(self) -> None:
        self.executor.shutdown()

    # -- the request's two moments -------------------------------------------------------------
    def begin(self, request: ConsumeRequest) -> bool:
        """A thread took ``request``: skip it if its queue is dropped, else deliver and call the listener."""
        if request.process_queue.dropped:
            return False
        record, group, client_id = self.rec.record, self.group, self.client_id
        broker = request.message_queue.broker_name
        msgs = view = request.msgs
        for i, msg in enumerate(msgs):
            props = msg.properties
            if props and PROPERTY_RETRY_TOPIC in props:
                topic, queue_id, offset, detail = trace_coordinates(msg)
                if view is msgs:
                    view = list(msgs)
                view[i] = reset_retry_topic(msg)
            else:
                topic, queue_id, offset, detail = msg.topic, msg.queue_id, msg.queue_offset, None
            record(
                "DELIVER", group=group, client_id=client_id, topic=topic, broker=broker, queue_id=queue_id,
                offset=offset, msg_id=msg.unique_id, reconsume_times=msg.reconsume_times, detail=detail,
            )
        request.context = context = ConsumeConcurrentlyContext(request.message_queue)
        try:
            request.status = self.listener.consume_message(view, context)
        except Exception:  # noqa: BLE001 - a listener's exception is its RECONSUME_LATER
            request.raised = True
        return True

    def complete(self, request: ConsumeRequest) -> None:
        """The listener returned: process the result unless the queue was dropped meanwhile."""
        if self.result_discarded(request):
            self._record_outcomes(request, request.msgs, _listener_status(request), {"dropped": True})
            return
        self.process_consume_result(request)

    def result_discarded(self, request: ConsumeRequest) -> bool:
        """Seed 001 §5: a result for a queue dropped while the listener ran is not processed."""
        return request.process_queue.dropped

    # -- result processing ---------------------------------------------------------------------
    def process_consume_result(self, request: ConsumeRequest) -> None:
        msgs = request.msgs
        if not msgs:
            return
        context = request.context
        assert context is not None
        if request.status is _SUCCESS and not request.raised:
            ack_index = min(context.ack_index, len(msgs) - 1)
        else:
            ack_index = -1
        if ack_index == len(msgs) - 1:  # the common case: the whole batch succeeded
            self._record_outcomes(request, msgs, "OK", None)
            self.commit_consumed(request, request.process_queue.remove_message(msgs))
            return
        if ack_index >= 0:
            self._record_outcomes(request, msgs[:ack_index + 1], "OK", None)
        failed = msgs[ack_index + 1:]
        failed_status = "ERROR" if request.raised else "LATER"
        if failed and self.clustering:
            back_failed = []
            for msg in failed:
                result = self.consumer.send_message_back(msg, context.delay_level_when_next_consume)
                if result is None:
                    back_failed.append(msg)
                    self._record_outcomes(request, [msg], failed_status, {"retry": "local"})
                elif result.dead_letter:
                    self._record_outcomes(request, [msg], failed_status, {"dead_letter": result.topic})
                else:
                    self._record_outcomes(request, [msg], failed_status, {"retry": result.topic})
            if back_failed:
                kept = {m.queue_offset for m in back_failed}
                msgs = [m for m in msgs if m.queue_offset not in kept]
                again = [dataclasses.replace(m, reconsume_times=m.reconsume_times + 1) for m in back_failed]
                self.submit_consume_request_later(again, request.process_queue, request.message_queue)
        elif failed:
            self._record_outcomes(request, failed, failed_status, {"discarded": True})
        offset = request.process_queue.remove_message(msgs)
        self.commit_consumed(request, offset)

    def commit_consumed(self, request: ConsumeRequest, offset: int) -> None:
        """Move the queue's commit point to ``offset`` (increase only), unless it was dropped."""
        if offset >= 0 and not request.process_queue.dropped:
            self.consumer.offset_store.update_offset(request.message_queue, offset, True)

    def _record_outcomes(
        self, request: ConsumeRequest, msgs: list[StoredMessage], status: str, extra: dict[str, Any] | None
    ) -> None:
        record, group, client_id = self.rec.record, self.group, self.client_id
        broker = request.message_queue.broker_name
        for msg in msgs:
            props = msg.properties
            if props and PROPERTY_RETRY_TOPIC in props:
                topic, queue_id, offset, detail = trace_coordinates(msg)
            else:
                topic, queue_id, offset, detail = msg.topic, msg.queue_id, msg.queue_offset, None
            if extra is not None:
                detail = {**extra, **detail} if detail else extra
            record(
                "CONSUME", group=group, client_id=client_id, msg_id=msg.unique_id, status=status, topic=topic,
                broker=broker, queue_id=queue_id, offset=offset, detail=detail,
            )


def _listener_status(request: ConsumeRequest) -> str:
    """The trace's CONSUME status for the listener's answer: OK, LATER, or ERROR when it raised."""
    if request.raised:
        return "ERROR"
    return "OK" if request.status is _SUCCESS else "LATER"
