"""Transactional messages as RocketMQ 4.9 keeps them: half messages, END_TRANSACTION, the check-back.

Theory of operation (upstream: broker/transaction/queue/TransactionalMessageServiceImpl,
TransactionalMessageBridge, TransactionalMessageCheckService, processor/EndTransactionProcessor, 4.9.7)
--------------------------------------------------------------------------------------------------------
* **Prepare.** A send whose properties carry ``TRAN_MSG=true`` is a *half* message: it is stored in
  ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its real topic and queue in ``REAL_TOPIC`` / ``REAL_QID``, so no
  consumer of its topic sees it. The send answer names the half's commit-log offset (its offset message id) and
  queue offset, which the producer echoes in END_TRANSACTION.
* **End.** COMMIT re-puts the half into its real topic (through the broker's put, so a delay level applies then)
  without ``TRAN_MSG``; ROLLBACK stores nothing. Either writes an *op* record to ``RMQ_SYS_TRANS_OP_HALF_TOPIC``
  (body: the half's queue offset, tag ``d``), which is what makes the half "done" across a restart. UNKNOWN
  (commitOrRollback 0) changes nothing: the half waits for the check. The producer group, queue offset and
  commit-log offset must match the half (upstream's checkPrepareMessage remarks). An end for a half already
  ended is refused here; upstream would put a committed message a second time (stricter: a SHOULD).
* **Check.** Every ``check_interval_ms`` (transactionCheckInterval, 60 s) every half that is not done and older
  than ``timeout_ms`` (transactionTimeOut, 6 s) is offered to the checker (the front sends
  CHECK_TRANSACTION_STATE to a producer of its group); a half checked ``check_max`` times (transactionCheckMax,
  15) is discarded: never checked again, never delivered. Upstream counts checks in a property of a re-put
  copy of the half; the reference counts them in memory, so a restart starts the count again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from reference.clock import Clock
from reference.periodic import PeriodicTask
from reference.rules.errors import require
from reference.rules.topics import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC
from reference.store.message import Message, PutMessageResult, StoredMessage
from reference.store.store import MessageStore

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
#: MessageConst.PROPERTY_TRANSACTION_PREPARED and PROPERTY_PRODUCER_GROUP.
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"
#: The op record's tag (TransactionalMessageUtil.REMOVETAG).
REMOVE_TAG = "d"
#: MessageSysFlag transaction values an END_TRANSACTION names.
TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED_TYPE = 0, 0x1 << 2
TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE = 0x2 << 2, 0x3 << 2
_READ_BATCH = 32

#: (producer group, the half as the producer sent it: real topic and queue) -> whether a producer was asked.
Checker = Callable[[str, StoredMessage], bool]
#: The broker's put (delay levels included) a committed half goes through.
Put = Callable[[Message], PutMessageResult]


@dataclass
class TransactionConfig:
    """BrokerConfig's transaction settings, under upstream's defaults."""

    #: transactionCheckInterval: how often the half messages are checked.
    check_interval_ms: int = 60_000
    #: transactionTimeOut: a half younger than this is not checked yet.
    timeout_ms: int = 6_000
    #: transactionCheckMax: checks before a half is discarded.
    check_max: int = 15


@dataclass(frozen=True)
class EndResult:
    """What END_TRANSACTION did: ``ok``, or the remark of upstream's refusal (SYSTEM_ERROR)."""

    ok: bool
    remark: str = ""
    committed: PutMessageResult | None = None


def is_half(properties: Mapping[str, str]) -> bool:
    """A send asks for a half message by ``TRAN_MSG=true`` (what upstream's SendMessageProcessor reads)."""
    return properties.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true"


class TransactionalMessageService:
    """Half messages, their end and their check (module docstring)."""

    def __init__(self, store: MessageStore, clock: Clock, put: Put, config: TransactionConfig | None = None) -> None:
        self.store = store
        self.clock = clock
        self.config = config or TransactionConfig()
        self._put = put
        self.checker: Checker | None = None
        #: Half queue offsets ended (committed, rolled back) or discarded.
        self._done: set[int] = set()
        #: Half queue offset -> checks sent so far.
        self.checks: dict[int, int] = {}
        self._task = PeriodicTask(clock, self.config.check_interval_ms, lambda: self.config.check_interval_ms,
                                  self.check)
        self._load_ops()

    def start(self) -> None:
        self._task.start()

    def shutdown(self) -> None:
        self._task.cancel()

    # -- prepare -------------------------------------------------------------------------------
    def prepare(self, message: Message) -> PutMessageResult:
        """Store ``message`` as a half: invisible in its topic until committed."""
        self.store.queue_nums(message.topic)  # TOPIC_NOT_EXIST for a topic the broker does not have
        self.store.create_topic(HALF_TOPIC, 1)
        props = dict(message.properties)
        props[PROPERTY_REAL_TOPIC] = message.topic
        props[PROPERTY_REAL_QUEUE_ID] = str(message.queue_id)
        return self.store.put_message(dataclasses.replace(message, topic=HALF_TOPIC, queue_id=0, properties=props))

    # -- end -----------------------------------------------------------------------------------
    def end(self, group: str, commit_log_offset: int, queue_offset: int, kind: int) -> EndResult:
        """COMMIT or ROLLBACK the half at ``commit_log_offset`` (UNKNOWN is answered by the caller: nothing)."""
        require(kind in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE), "commitOrRollback",
                f"must be {TRANSACTION_COMMIT_TYPE} (commit) or {TRANSACTION_ROLLBACK_TYPE} (rollback), got {kind}")
        half = self.store.look_message_by_offset(commit_log_offset)
        if half is None or half.topic != HALF_TOPIC:
            return EndResult(False, "Find prepared transaction message failed")
        if half.properties.get(PROPERTY_PRODUCER_GROUP, "") != group:
            return EndResult(False, "The producer group wrong")
        if half.queue_offset != queue_offset:
            return EndResult(False, "The transaction state table offset wrong")
        if half.queue_offset in self._done:
            return EndResult(False, f"the transaction of the half message at {commit_log_offset} has already ended")
        committed = self._put(committed_message(half)) if kind == TRANSACTION_COMMIT_TYPE else None
        self._mark_done(half.queue_offset)
        return EndResult(True, committed=committed)

    def is_done(self, half_queue_offset: int) -> bool:
        return half_queue_offset in self._done

    # -- check ---------------------------------------------------------------------------------
    def check(self) -> None:
        """One check round over every half not done (upstream's TransactionalMessageCheckService)."""
        if HALF_TOPIC not in self.store.topics():
            return
        now = self.clock.now_ms()
        for half in self._read_queue(HALF_TOPIC):
            if half.queue_offset in self._done:
                continue
            if now - half.store_timestamp < self.config.timeout_ms:
                return  # store order is age order: the rest are younger still
            if self.checks.get(half.queue_offset, 0) >= self.config.check_max:
                self._mark_done(half.queue_offset)  # discarded: never checked or delivered again
                continue
            self.checks[half.queue_offset] = self.checks.get(half.queue_offset, 0) + 1
            if self.checker is not None:
                self.checker(half.properties.get(PROPERTY_PRODUCER_GROUP, ""), check_view(half))

    # -- op records ----------------------------------------------------------------------------
    def _mark_done(self, half_queue_offset: int) -> None:
        self.store.create_topic(OP_HALF_TOPIC, 1)
        self.store.put_message(Message(OP_HALF_TOPIC, str(half_queue_offset).encode(), 0, tags=REMOVE_TAG))
        self._done.add(half_queue_offset)
        self.checks.pop(half_queue_offset, None)

    def _load_ops(self) -> None:
        if OP_HALF_TOPIC not in self.store.topics():
            return
        for op in self._read_queue(OP_HALF_TOPIC):
            self._done.add(int(op.body.decode()))

    def _read_queue(self, topic: str) -> Iterator[StoredMessage]:
        """Queue 0 of one of the two system topics, oldest first, in batches (both the check round and the
        op records' replay walk a whole queue)."""
        offset = self.store.get_min_offset_in_queue(topic, 0)
        while True:
            result = self.store.get_message("TRANSACTION", topic, 0, offset, _READ_BATCH, None)
            if not result.messages:
                return
            for message in result.messages:
                offset = message.queue_offset + 1
                yield message

def _real_coordinates(half: StoredMessage) -> tuple[str, int, dict[str, str]]:
    props = {k: v for k, v in half.properties.items() if k not in (PROPERTY_REAL_TOPIC, PROPERTY_REAL_QUEUE_ID)}
    topic = half.properties.get(PROPERTY_REAL_TOPIC, half.topic)
    return topic, int(half.properties.get(PROPERTY_REAL_QUEUE_ID, "0")), props


def check_view(half: StoredMessage) -> StoredMessage:
    """The half as a check shows it to its producer (upstream's sendCheckMessage): its real topic and queue, at the
    half's own offsets, so the producer's answer names the half."""
    topic, queue_id, props = _real_coordinates(half)
    return dataclasses.replace(half, topic=topic, queue_id=queue_id, properties=props)


def committed_message(half: StoredMessage) -> Message:
    """What a commit puts into the real topic (upstream's endMessageTransaction): without ``TRAN_MSG``."""
    topic, queue_id, props = _real_coordinates(half)
    props.pop(PROPERTY_TRANSACTION_PREPARED, None)
    return Message(topic, half.body, queue_id, half.tags, half.keys, props, half.born_timestamp, half.reconsume_times)
