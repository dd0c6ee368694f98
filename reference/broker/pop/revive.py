"""PopReviveService: matches checkpoints and acks read from the revive log, and revives what is
still unacknowledged when its time is up (seed 004 §3.4.2, §4.4.4-§4.4.6).

Theory of operation
-------------------
The service reads each revive queue of the revive log in order, from its committed position. A
checkpoint record becomes *pending* (keyed like the buffer: topic, group, queue id, start offset,
pop time, broker); an ack record sets its message's bit in the pending checkpoint, if there is one
(an ack for a checkpoint that is already finished is ignored). A pending checkpoint is *due* once
``now - revive_time > revive_delay`` (ackTimeInterval + 1 s); then every message whose bit is clear
is revived (:meth:`revive_message`):

A due checkpoint whose normal topic no longer exists, or whose group has no subscription group config (deleted
while ``autoCreateSubscriptionGroup`` is off; with it on the look-up creates the group again), revives nothing
and is dropped, so the committed position moves past it (seed 004 lines 1103-1115). Otherwise:

* the message is read from its queue; if it is gone (retention) it is skipped;
* if the checkpoint's pop time is earlier than the message's store time, the checkpoint belongs to
  an earlier incarnation of the topic (the queue was re-created and the offset now holds another
  message): it is skipped (RocketMQ #8479, "skip ck from last epoch");
* otherwise a copy goes to the retry topic ``%RETRY%{group}_{topic}``, queue 0, with
  reconsumeTimes + 1, the same body, tags, keys and properties, the same unique id (``UNIQ_KEY``)
  and ``FIRST_POP_TIME`` set to the checkpoint's pop time on its first revive.

After reviving, the service writes an ack record for each message it revived or skipped, so that a
restarted broker, which re-reads the log from the committed position, finds the checkpoint finished
instead of reviving it a second time. The committed position of a revive queue is the log offset of
its oldest pending checkpoint (everything before it is finished), or the read position when nothing
is pending.

Unlike RocketMQ, which re-reads a window of the log every round and stops at the first checkpoint
not yet due, the service keeps pending checkpoints between rounds and revives every due one: the
reference's log is not ordered by revive time (it has no timer store, see :mod:`.revive_log`).
It wakes exactly when the next checkpoint falls due.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from reference.broker.pop.checkpoint import AckMsg, PopCheckPoint
from reference.broker.pop.config import PopConfig
from reference.broker.pop.keys import REVIVE_GROUP, CheckpointKey, normal_topic
from reference.broker.pop.revive_log import ReviveLog, ReviveRecord
from reference.clock import Clock, TimerHandle
from reference.rules.errors import InvalidRequest
from reference.rules.topics import (
    FIRST_POP_TIME,
    PROPERTY_POP_ORIGIN_QUEUE_ID,
    PROPERTY_POP_ORIGIN_QUEUE_OFFSET,
    is_retry_topic,
    pop_retry_topic,
)
from reference.store.message import UNIQ_KEY, Message, PutMessageResult, StoredMessage
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore

#: Called for each revived message: (checkpoint, original message, retry topic, put result, reconsume times).
ReviveListener = Callable[[PopCheckPoint, StoredMessage, str, PutMessageResult], None]


@dataclass(eq=False)
class PendingCheckpoint:
    ck: PopCheckPoint
    bits: int
    #: Offset of the checkpoint's record in its revive queue.
    log_offset: int

    @property
    def done(self) -> bool:
        return self.bits == self.ck.all_acked


class PopReviveService:
    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        revive_log: ReviveLog,
        config: PopConfig,
        clock: Clock,
        on_revived: ReviveListener,
    ) -> None:
        self.store = store
        self.offsets = offsets
        self.revive_log = revive_log
        self.config = config
        self.clock = clock
        self._on_revived = on_revived
        queues = range(config.revive_queue_num)
        self._read_offset: dict[int, int] = dict.fromkeys(queues, 0)
        self._committed: dict[int, int] = dict.fromkeys(queues, -1)
        self.pending: dict[int, dict[Hashable, PendingCheckpoint]] = {q: {} for q in queues}
        self._timer: TimerHandle | None = None
        self._timer_due: int | None = None
        self._stopped = False
        #: Whether a consumer group exists now (the broker's subscription group table; set by the POP service).
        self.group_exists: Callable[[str], bool] = lambda group: True

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Resume every revive queue from its committed position and read what is there."""
        for qid in self._read_offset:
            committed = self.offsets.query_offset(REVIVE_GROUP, self.revive_log.topic, qid)
            self._committed[qid] = committed
            self._read_offset[qid] = committed if committed >= 0 else self.revive_log.min_offset(qid)
        self.catch_up()

    def shutdown(self) -> None:
        """Read what is left, commit each queue's position, and stop waking up."""
        self.catch_up()
        self._commit_all()
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_due = None, None

    # -- matching ------------------------------------------------------------------------------
    def map_key(self, key: CheckpointKey) -> Hashable:
        return key

    def catch_up(self) -> None:
        """Read every new record of every revive queue and apply it."""
        for qid, offset in self._read_offset.items():
            if offset >= self.revive_log.max_offset(qid):
                continue
            records, self._read_offset[qid] = self.revive_log.read(qid, offset)
            for record in records:
                self.apply(qid, record)
        self._schedule_next()

    def apply(self, qid: int, record: ReviveRecord) -> None:
        if record.checkpoint is not None:
            ck = record.checkpoint
            pending = PendingCheckpoint(ck, record.acked_bits, record.offset)
            if not pending.done:
                self.pending[qid][self.map_key(ck.key)] = pending
        elif record.ack is not None:
            self.apply_ack(qid, record.ack)

    def apply_ack(self, qid: int, ack: AckMsg) -> None:
        """Set the acked message's bit in its pending checkpoint; finished checkpoints are dropped."""
        key = self.map_key(ack.key)
        pending = self.pending[qid].get(key)
        if pending is None:
            return
        index = pending.ck.index_of_ack(ack.ack_offset)
        if index < 0:
            return
        pending.bits |= 1 << index
        if pending.done:
            del self.pending[qid][key]

    def find(self, key: CheckpointKey, revive_queue_id: int) -> PendingCheckpoint | None:
        """The pending checkpoint with ``key`` in the given revive queue, after reading the log."""
        if revive_queue_id not in self.pending:
            return None
        self.catch_up()
        return self.pending[revive_queue_id].get(self.map_key(key))

    # -- reviving ------------------------------------------------------------------------------
    def due_at(self, ck: PopCheckPoint) -> int:
        """The first instant at which ``ck`` is revived: its revive time plus the revive delay, + 1 ms
        (the rule is ``now - revive_time > delay``)."""
        return ck.revive_time + self.config.revive_delay_ms + 1

    def revive_due(self) -> None:
        """Revive every due checkpoint, then commit each revive queue's position."""
        self._timer, self._timer_due = None, None
        self.catch_up()
        now = self.clock.now_ms()
        for qid, table in self.pending.items():
            for key, pending in sorted(table.items(), key=lambda kv: kv[1].log_offset):
                # Reviving stores messages, which may wake pops that write records we read here.
                if table.get(key) is pending and now >= self.due_at(pending.ck):
                    del table[key]
                    self.revive_checkpoint(qid, pending)
        self.catch_up()
        self._commit_all()

    def revive_checkpoint(self, qid: int, pending: PendingCheckpoint) -> None:
        ck = pending.ck
        try:
            self.store.queue_nums(normal_topic(ck.topic, ck.group))
        except InvalidRequest:
            return  # §4.4.5: the normal topic is gone; nothing to revive into
        if not self.group_exists(ck.group):
            return  # §4.4.5 (seed 004 lines 1111-1115): the group has no subscription group config; skip it
        for index in range(ck.num):
            if pending.bits >> index & 1:
                continue
            offset = ck.offset_at(index)
            message = self._read(ck, offset)
            if message is not None and ck.pop_time >= message.store_timestamp:
                self.revive_message(ck, message)
            # Finished either way (revived, gone, or from an earlier epoch): say so in the log.
            self.revive_log.append_ack(
                AckMsg(ck.topic, ck.group, ck.queue_id, ck.start_offset, ck.pop_time, ck.broker_name, offset), qid
            )

    def _read(self, ck: PopCheckPoint, offset: int) -> StoredMessage | None:
        result = self.store.get_message(ck.group, ck.topic, ck.queue_id, offset, 1, None)
        for message in result.messages:
            if message.queue_offset == offset:
                return message
        return None

    def revive_message(self, ck: PopCheckPoint, message: StoredMessage) -> PutMessageResult:
        """reviveRetry: store a copy of ``message`` in the retry topic with reconsumeTimes + 1."""
        target = ck.topic if is_retry_topic(ck.topic) else pop_retry_topic(ck.group, ck.topic)
        if self.store.topics().get(target) is None:
            self.store.create_topic(target, self.config.retry_queue_num)
        properties = dict(message.properties)
        properties.setdefault(UNIQ_KEY, message.unique_id)
        if message.reconsume_times == 0 or FIRST_POP_TIME not in properties:
            properties[FIRST_POP_TIME] = str(ck.pop_time)
        properties.setdefault(PROPERTY_POP_ORIGIN_QUEUE_ID, str(message.queue_id))
        properties.setdefault(PROPERTY_POP_ORIGIN_QUEUE_OFFSET, str(message.queue_offset))
        result = self.store.put_message(
            Message(
                target, message.body, 0, tags=message.tags, keys=message.keys, properties=properties,
                born_timestamp=message.born_timestamp, reconsume_times=message.reconsume_times + 1,
            )
        )
        self._on_revived(ck, message, target, result)
        return result

    # -- position and timer --------------------------------------------------------------------
    def _commit_all(self) -> None:
        for qid, table in self.pending.items():
            position = min((p.log_offset for p in table.values()), default=self._read_offset[qid])
            if position != self._committed[qid] and self.revive_log.exists():
                self.offsets.commit_offset(REVIVE_GROUP, self.revive_log.topic, qid, position)
                self._committed[qid] = position

    def _schedule_next(self) -> None:
        if self._stopped:
            return
        due = min((self.due_at(p.ck) for table in self.pending.values() for p in table.values()), default=None)
        if due is None or (self._timer_due is not None and self._timer_due <= due):
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_due = due
        self._timer = self.clock.call_later(max(0, due - self.clock.now_ms()), self.revive_due)

    def pending_count(self) -> int:
        return sum(len(t) for t in self.pending.values())
