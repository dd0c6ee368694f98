"""MessageStore: RocketMQ's DefaultMessageStore for the reference broker.

Theory of operation
-------------------
A message is appended to the commit log (every topic, arrival order), then a 20-byte unit pointing
at it is appended to the consume queue of its (topic, queueId), then the arrival listeners hear of
it (the hold service wakes held pulls there). A pull reads units from the consume queue, filters on
their tags hash codes and fetches the matching records from the commit log (seed 002 §1: "pull操作要
读两次"). Retention deletes old commit-log segments, then consume-queue segments that only point
below the commit log's new start, then raises each queue's min offset (seed 002 §2).

Layout under ``data_dir``::

    commitlog/<20-digit start offset>                 commit-log segments
    consumequeue/<topic>/<queueId>/<20-digit start>   consume-queue segments (start in bytes)
    config/topics.json                                topic -> queue count

Recovery on open keeps every intact commit-log record and cuts the log at the first torn one, drops
consume-queue units that point past the recovered end, and rebuilds units missing for records after
the last one dispatched; the commit log is the truth, the consume queues an index of it.

Single-threaded by design: the servers and the simulator call the store from one thread (the asyncio
loop or the simulation driver), and its periodic work runs as clock timers on that same thread. No
lock is taken anywhere.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from mmap import mmap
from pathlib import Path
from typing import Any, TypeVar

from reference.clock import Clock, RealClock
from reference.periodic import PeriodicTask
from reference.rules.errors import InvalidRequest, TopicNotFound, require
from reference.rules.filter import SubscriptionData, tag_rule_broken, tags_hash_code
from reference.rules.status import CORRECTION_TABLE, CorrectionRow, GetMessageStatus, check_offset, overflow_to_max
from reference.store.commitlog import OS_PAGE_BYTES, CommitLog
from reference.store.config import MessageStoreConfig
from reference.store.consumequeue import CQ_STORE_UNIT_SIZE, UNIT, ConsumeQueue
from reference.store.disk import DiskGuard
from reference.store.message import (
    UNIQ_KEY,
    Message,
    PutMessageResult,
    PutMessageStatus,
    StoredMessage,
    offset_msg_id,
)
from reference.store.record import (
    MAX_SHORT_FIELD_BYTES,
    RecordHeader,
    encode_properties,
    property_rule_broken,
    record_size,
)
from reference.store.retention import CleanService, disk_usage_of
from reference.store.topics import TopicTable

#: listener(topic, queue_id, max offset after the append, tags code, store timestamp): seed 000's
#: messageArrivingListener, called with consumeQueueOffset + 1.
ArrivalListener = Callable[[str, int, int, int, int], None]
#: listener(topic, queue_id, new min offset): a queue's min offset rose through retention.
RetentionListener = Callable[[str, int, int], None]

_INT32_MAX = 0x7FFFFFFF
_INT64_MAX = 0x7FFFFFFFFFFFFFFF


class StoreClosed(RuntimeError):
    """The store was closed: it refuses every read and write instead of answering from emptied tables.

    Without this a pull after :meth:`MessageStore.close` found no consume queue and answered
    NO_MESSAGE_IN_QUEUE with next offset 0, which a consumer takes as OFFSET_MOVED to 0 and rewinds.
    RocketMQ refuses the same way ("message store has shutdown, so getMessage is forbidden"): the broker
    answers SYSTEM_ERROR over remoting, the HTTP front 503."""

    def __init__(self, operation: str) -> None:
        super().__init__(f"the message store is shut down: {operation} is refused")
        self.operation = operation


_T = TypeVar("_T", bound=Callable[..., Any])


def _while_open(method: _T) -> _T:
    """Refuse ``method`` with :class:`StoreClosed` once the store is closed."""
    name = method.__name__

    @functools.wraps(method)
    def guarded(self: MessageStore, *args: Any, **kwargs: Any) -> Any:
        if self.closed:
            raise StoreClosed(name)
        return method(self, *args, **kwargs)

    return guarded  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class GetMessageResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[StoredMessage] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A validated message, encoded, ready to append (validation of a batch ends before any write)."""

    topic: str
    queue_id: int
    topic_b: bytes
    tags_b: bytes
    keys_b: bytes
    props_b: bytes
    body: bytes
    tags_code: int
    born_timestamp: int | None
    reconsume_times: int
    size: int
    uniq_key: str | None


class MessageStore:
    #: The offset-correction rule (``status.CORRECTION_TABLE``); a class attribute so that a seeded
    #: fault can replace one row without touching the store's code.
    correction_table: tuple[CorrectionRow, ...] = CORRECTION_TABLE

    def __init__(
        self,
        data_dir: str | Path,
        config: MessageStoreConfig | None = None,
        clock: Clock | None = None,
        *,
        disk_usage_ratio: Callable[[], float] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = config or MessageStoreConfig()
        self.clock = clock or RealClock()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._topics = TopicTable(self.data_dir / "config" / "topics.json")
        self._commit_log = CommitLog(self.data_dir / "commitlog", self.config)
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._arrival_listeners: list[ArrivalListener] = []
        self._retention_listeners: list[RetentionListener] = []
        #: How full the store's disk is, in [0, 1] (negative: unreadable); the clean service's space trigger.
        self.disk_used_ratio = disk_usage_ratio or disk_usage_of(self.data_dir)
        self._clean = CleanService(self.config, self.clock, self.disk_used_ratio)
        #: Whether writes are refused because the disk is full (STORE-22, STORE-23).
        self.disk = DiskGuard(self.config.disk_space_warning_level_ratio, self.config.disk_space_clean_forcibly_ratio)
        #: The correction table this store answers by: its class's (a seeded fault may replace it), with 4.9.4's
        #: overflow rule if configured.
        self._corrections = (overflow_to_max(self.correction_table) if self.config.offset_overflow_to_max
                             else self.correction_table)
        self._periodic = PeriodicTask(
            self.clock, self.config.clean_resource_initial_delay_ms, self.config.clean_resource_interval_ms,
            self.run_retention,
        )
        #: ASYNC flush: the commit log's new bytes msync'ed on the clock (RocketMQ's FlushRealTimeService).
        self._flusher = PeriodicTask(
            self.clock, self.config.flush_interval_commit_log_ms, self.config.flush_interval_commit_log_ms,
            self.flush_commit_log,
        ) if self.config.flush_disk_type == "ASYNC" else None
        self._last_thorough_flush_ms = self.clock.now_ms()
        self._last_store_timestamp = 0
        #: Set by :meth:`close`; every read and write refuses from then on (:class:`StoreClosed`).
        self.closed = False
        self._recover()

    # -- recovery ------------------------------------------------------------------------------
    def _recover(self) -> None:
        root = self.data_dir / "consumequeue"
        if root.is_dir():
            for topic_dir in sorted(p for p in root.iterdir() if p.is_dir()):
                for queue_dir in sorted(p for p in topic_dir.iterdir() if p.is_dir() and p.name.isdigit()):
                    cq = self._consume_queue(topic_dir.name, int(queue_dir.name))
                    cq.load()
        self._commit_log.recover(self._redispatch)
        end, start = self._commit_log.max_offset, self._commit_log.min_offset
        for cq in self._queues.values():
            cq.truncate_past(end)
            cq.correct_min_offset(start, self.config.raise_min_of_emptied_queue)

    def _redispatch(self, commit_log_offset: int, header: RecordHeader, topic: str) -> None:
        """Recovery's visit of an intact record: index it if its consume queue has not yet."""
        self._last_store_timestamp = max(self._last_store_timestamp, header.store_timestamp)
        cq = self._consume_queue(topic, header.queue_id)
        if header.queue_offset >= cq.max_offset:
            cq.put(header.queue_offset, commit_log_offset, header.total_size, header.tags_code)

    def _consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            directory = self.data_dir / "consumequeue" / topic / str(queue_id)
            cq = ConsumeQueue(topic, queue_id, directory, self.config.consume_queue_units_per_segment)
            self._queues[(topic, queue_id)] = cq
        return cq

    # -- topics --------------------------------------------------------------------------------
    @_while_open
    def create_topic(self, topic: str, queue_nums: int) -> None:
        """Create (or update the queue count of) a topic; InvalidRequest names a bad field."""
        with self.disk.writing("the topic table"):
            self._topics.create(topic, queue_nums)

    @_while_open
    def delete_topic(self, topic: str) -> bool:
        """Delete ``topic`` from the topic table; whether it existed."""
        with self.disk.writing("the topic table"):
            return self._topics.delete(topic)

    def topics(self) -> dict[str, int]:
        return self._topics.as_dict()

    def queue_nums(self, topic: str) -> int:
        nums = self._topics.get(topic)
        if nums is None:
            raise TopicNotFound(topic)
        return nums

    # -- put -----------------------------------------------------------------------------------
    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        self._arrival_listeners.append(listener)

    @_while_open
    def put_message(self, msg: Message) -> PutMessageResult:
        """Validate, append to the commit log, index in the consume queue, notify listeners."""
        return self._append(self._prepare(msg))

    @_while_open
    def put_messages(self, msgs: list[Message]) -> list[PutMessageResult]:
        """Store a batch: every message is validated before the first is written."""
        prepared = [self._prepare(m) for m in msgs]
        self.disk.refuse_if_full()
        return [self._append(p) for p in prepared]

    def _prepare(self, msg: Message) -> _Prepared:
        queue_nums = self.queue_nums(msg.topic)
        require(
            isinstance(msg.queue_id, int) and 0 <= msg.queue_id < queue_nums,
            "queue_id", f"must be in [0, {queue_nums}) for topic {msg.topic!r}",
        )
        require(isinstance(msg.body, bytes | bytearray), "body", "must be bytes")
        require(
            len(msg.body) <= self.config.max_message_size,
            "body", f"must be at most max_message_size = {self.config.max_message_size} bytes",
        )
        tags = msg.tags or ""
        if tags:
            require(isinstance(tags, str), "tags", "must be a string")
            broken = tag_rule_broken(tags)
            if broken is not None:
                raise InvalidRequest("tags", broken)
        keys = msg.keys or ""
        require(isinstance(keys, str), "keys", "must be a string")
        keys_b = keys.encode()
        require(
            len(keys_b) <= MAX_SHORT_FIELD_BYTES, "keys", f"must be at most {MAX_SHORT_FIELD_BYTES} bytes"
        )
        require(isinstance(msg.properties, Mapping), "properties", "must be a mapping of strings to strings")
        for name, value in msg.properties.items():
            broken = property_rule_broken(name, value)
            if broken is not None:
                raise InvalidRequest("properties", broken)
        require(
            msg.born_timestamp is None
            or (isinstance(msg.born_timestamp, int) and 0 <= msg.born_timestamp <= _INT64_MAX),
            "born_timestamp", "must be an integer >= 0 (ms since the epoch) or absent",
        )
        require(
            isinstance(msg.reconsume_times, int) and 0 <= msg.reconsume_times <= _INT32_MAX,
            "reconsume_times", "must be an integer >= 0",
        )
        topic_b, tags_b, body = msg.topic.encode(), tags.encode(), bytes(msg.body)
        props_b = encode_properties(msg.properties)
        size = record_size(topic_b, tags_b, keys_b, props_b, body)
        require(
            self._commit_log.fits(size),
            "body", f"the stored record ({size} bytes) must fit a commit-log segment "
            f"({self.config.commit_log_segment_bytes} bytes)",
        )
        return _Prepared(
            msg.topic, msg.queue_id, topic_b, tags_b, keys_b, props_b, body,
            tags_hash_code(tags) if tags else 0, msg.born_timestamp, msg.reconsume_times, size,
            msg.properties.get(UNIQ_KEY) or None,
        )

    def _append(self, p: _Prepared) -> PutMessageResult:
        self.disk.refuse_if_full()
        # Store times never go backwards (a wall clock may), so the time index stays sorted.
        now = max(self.clock.now_ms(), self._last_store_timestamp)
        self._last_store_timestamp = now
        with self.disk.writing("a new segment"):
            cq = self._consume_queue(p.topic, p.queue_id)
            queue_offset = cq.max_offset
            # Every file the message needs exists before its first byte is written: a full file system
            # refuses it whole (STORE-23), never half-stored.
            cq.reserve(queue_offset)
            phy = self._commit_log.append(
                p.size, p.queue_id, queue_offset, now, now if p.born_timestamp is None else p.born_timestamp,
                p.reconsume_times, p.tags_code, p.topic_b, p.tags_b, p.keys_b, p.props_b, p.body,
            )
        cq.put(queue_offset, phy, p.size, p.tags_code)
        msg_id = offset_msg_id(self._commit_log.store_host, phy)
        result = PutMessageResult(
            PutMessageStatus.PUT_OK, p.queue_id, queue_offset, phy, msg_id, p.uniq_key or msg_id, now
        )
        for listener in self._arrival_listeners:
            listener(p.topic, p.queue_id, queue_offset + 1, p.tags_code, now)
        return result

    # -- get -----------------------------------------------------------------------------------
    @_while_open
    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        subscription: SubscriptionData | None,
    ) -> GetMessageResult:
        """Answer a pull (seed 002 §1, DefaultMessageStore.getMessage). ``group`` is part of the
        RocketMQ signature (it feeds statistics there) and does not change the answer."""
        queue_nums = self._topics.get(topic)
        if queue_nums is None or not 0 <= queue_id < queue_nums:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        cq = self._queues.get((topic, queue_id))
        min_offset, max_offset = (cq.min_offset, cq.max_offset) if cq is not None else (0, 0)
        status, next_begin = check_offset(offset, min_offset, max_offset, self._corrections)
        if status is not None:
            return GetMessageResult(status, next_begin, min_offset, max_offset)
        assert cq is not None  # a legal offset needs max > 0, so the queue exists
        seg = cq.segment_of(offset)
        if seg is None:
            return GetMessageResult(
                GetMessageStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset), min_offset, max_offset
            )
        status, scanned, messages = self._scan(seg.mm, offset * CQ_STORE_UNIT_SIZE - seg.start, seg.wrote,
                                               max_msg_nums, subscription)
        return GetMessageResult(status, offset + scanned, min_offset, max_offset, messages)

    def _scan(
        self, mm: mmap, begin: int, written: int, max_msg_nums: int, subscription: SubscriptionData | None
    ) -> tuple[GetMessageStatus, int, list[StoredMessage]]:
        """The unit loop of getMessage over one consume-queue segment, from byte ``begin`` to at most
        ``written`` and at most max(max_filter_scan_bytes, max_msg_nums * 20) bytes. Returns the
        status, the number of units consumed (the unit that found the batch full is not), and the
        messages."""
        config = self.config
        commit_log = self._commit_log
        bound = max(config.max_filter_scan_bytes, max_msg_nums * CQ_STORE_UNIT_SIZE)
        available = written - begin
        # The loop counter advances 20 bytes a unit and runs while it is below both limits, so the
        # number of units it may visit is the ceiling of the smaller limit over 20.
        limit_units = (min(available, bound) + CQ_STORE_UNIT_SIZE - 1) // CQ_STORE_UNIT_SIZE
        data = mm[begin:begin + limit_units * CQ_STORE_UNIT_SIZE]
        max_phy = commit_log.max_offset
        memory_budget = config.in_memory_budget_bytes()
        codes = None if subscription is None or subscription.subscribes_all else subscription.codes
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        messages: list[StoredMessage] = []
        total_bytes = 0
        next_phy_file_start = None
        scanned = 0
        for phy, size, tags_code in UNIT.iter_unpack(data):
            if next_phy_file_start is not None and phy < next_phy_file_start:
                scanned += 1  # the segment holding it is being deleted: skip, as RocketMQ does
                continue
            if messages and self._is_the_batch_full(
                size, max_msg_nums, total_bytes, len(messages), max_phy - phy > memory_budget
            ):
                break
            scanned += 1
            if codes is None or tags_code in codes:
                msg = commit_log.read(phy, size)
                if msg is not None:
                    messages.append(msg)
                    total_bytes += size
                    status = GetMessageStatus.FOUND
                    next_phy_file_start = None
                else:
                    if not messages:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_phy_file_start = commit_log.roll_next_file(phy)
            elif not messages:
                status = GetMessageStatus.NO_MATCHED_MESSAGE
        return status, scanned, messages

    def _is_the_batch_full(
        self, size: int, max_msg_nums: int, total_bytes: int, count: int, in_disk: bool
    ) -> bool:
        """RocketMQ's isTheBatchFull, for a batch that already holds ``count`` > 0 messages."""
        if count >= max_msg_nums:
            return True
        config = self.config
        if in_disk:
            return (total_bytes + size > config.max_transfer_bytes_on_message_in_disk
                    or count > config.max_transfer_count_on_message_in_disk - 1)
        return (total_bytes + size > config.max_transfer_bytes_on_message_in_memory
                or count > config.max_transfer_count_on_message_in_memory - 1)

    # -- queries -------------------------------------------------------------------------------
    @_while_open
    def look_message_by_offset(self, commit_log_offset: int) -> StoredMessage | None:
        """The message stored at ``commit_log_offset``, or None if no intact record starts there."""
        return self._commit_log.look_message_by_offset(commit_log_offset)

    @_while_open
    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self._queues.get((topic, queue_id))
        return cq.min_offset if cq is not None else 0

    @_while_open
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The next offset to be written (0 for a queue that never had a message)."""
        cq = self._queues.get((topic, queue_id))
        return cq.max_offset if cq is not None else 0

    @_while_open
    def get_commit_log_min_offset(self) -> int:
        return self._commit_log.min_offset

    @_while_open
    def get_commit_log_max_offset(self) -> int:
        return self._commit_log.max_offset

    @_while_open
    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        """Whether the message at ``consume_offset`` is "in disk": further behind the commit-log end
        than the in-memory budget (seed 000, checkInDiskByConsumeOffset). False if there is no unit."""
        cq = self._queues.get((topic, queue_id))
        unit = cq.unit(consume_offset) if cq is not None else None
        if unit is None:
            return False
        return self._commit_log.max_offset - unit[0] > self.config.in_memory_budget_bytes()

    @_while_open
    def tags_codes(self, topic: str, queue_id: int, start: int, end: int) -> Iterator[tuple[int, int]]:
        """(offset, tags code) of the units in ``[start, end)`` that are present and not below min:
        what the hold service needs to tell whether a held pull now has a matching message."""
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            return
        for offset, (_phy, _size, code) in cq.units(start, end):
            yield offset, code

    @_while_open
    def commit_log_offsets(self, topic: str, queue_id: int, start: int, end: int) -> Iterator[tuple[int, int]]:
        """(queue offset, commit-log offset) of the units in ``[start, end)`` still present: what an index by
        key reads to find the records it has not indexed yet (``reference.store.index``)."""
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            return
        for offset, (phy, _size, _code) in cq.units(start, end):
            yield offset, phy

    @_while_open
    def get_offset_by_timestamp(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First offset whose message was stored at or after ``timestamp_ms``; the max offset if none.
        Binary search over the readable units (store times never decrease along a queue)."""
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            return 0
        lo = cq.first_offset_at_or_after(self._commit_log.min_offset)
        hi = cq.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            unit = cq.unit(mid)
            assert unit is not None
            if self._commit_log.store_timestamp(unit[0]) < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # -- retention -----------------------------------------------------------------------------
    def add_retention_listener(self, listener: RetentionListener) -> None:
        self._retention_listeners.append(listener)

    @_while_open
    def request_manual_delete(self, times: int | None = None) -> None:
        """Make the next ``times`` clean runs delete expired files at any hour (see retention)."""
        self._clean.request_manual_delete(times)

    @_while_open
    def clean_commit_log(self) -> int:
        """Phase 1: delete expired commit-log segments if a trigger holds; returns how many."""
        if not self._clean.deletion_triggered():
            return 0
        return self._commit_log.delete_expired(self._clean.is_expired, self.config.delete_files_batch_max)

    @_while_open
    def clean_consume_queues(self) -> int:
        """Phase 2: delete consume-queue segments whose units all point below the commit-log start.
        Min offsets are left alone (phase 3), as between RocketMQ's two clean services."""
        start = self._commit_log.min_offset
        return sum(cq.delete_expired_segments(start) for cq in self._queues.values())

    @_while_open
    def correct_min_offsets(self) -> None:
        """Phase 3: raise each queue's min offset to its first message still in the commit log, and
        tell the retention listeners about every queue whose min rose."""
        start = self._commit_log.min_offset
        for (topic, queue_id), cq in self._queues.items():
            if cq.correct_min_offset(start, self.config.raise_min_of_emptied_queue):
                for listener in self._retention_listeners:
                    listener(topic, queue_id, cq.min_offset)

    @_while_open
    def run_retention(self, file_reserved_hours: int | None = None) -> int:
        """One clean run: the three phases in order (DefaultMessageStore.cleanFilesPeriodically); returns
        how many commit-log segments it deleted.

        ``file_reserved_hours`` replaces fileReservedTime for this run only and triggers it at any hour:
        0 expires every commit-log segment but the one being written, as a runner's ``retention_expire``
        control asks (see ``CleanService.reserved_hours_for_one_run``). None: the run as configured."""
        self.disk.check(self.disk_used_ratio())
        with self._clean.reserved_hours_for_one_run(file_reserved_hours):
            deleted = self.clean_commit_log()
            self.clean_consume_queues()
            self.correct_min_offsets()
        return deleted

    @_while_open
    def expire_all(self) -> int:
        """Every commit-log segment but the one being written expires, and clean runs follow until none is left
        to delete: what a runner's ``retention_expire`` control does. A backlog longer than
        ``delete_files_batch_max`` takes several runs, each correcting the min offsets as it goes, as RocketMQ's
        clean service does when its runs come one after the other. Returns how many segments were deleted."""
        total = 0
        while deleted := self.run_retention(file_reserved_hours=0):
            total += deleted
        return total

    @_while_open
    def start_periodic(self) -> None:
        """Run retention on the clock: after ``clean_resource_initial_delay_ms``, then every
        ``clean_resource_interval_ms``; with ASYNC flush, flush the commit log every
        ``flush_interval_commit_log_ms``."""
        self._periodic.start()
        if self._flusher is not None:
            self._flusher.start()

    @_while_open
    def flush_commit_log(self) -> int:
        """One round of the ASYNC flush: msync the commit log's new bytes if at least
        ``flush_commit_log_least_pages`` pages are dirty, or whatever is dirty once
        ``flush_commit_log_thorough_interval_ms`` passed since the last complete flush. The flushed offset."""
        now = self.clock.now_ms()
        least = self.config.flush_commit_log_least_pages * OS_PAGE_BYTES
        if now - self._last_thorough_flush_ms >= self.config.flush_commit_log_thorough_interval_ms:
            least = 0
        flushed = self._commit_log.flush(least)
        if flushed == self._commit_log.max_offset:
            self._last_thorough_flush_ms = now
        return flushed

    @property
    def flushed_offset(self) -> int:
        """The commit-log offset up to which every byte is on the device (what a machine crash keeps)."""
        return self._commit_log.flushed_where

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop periodic work, flush every mapped segment to disk and unmap it; a second close does nothing."""
        if self.closed:
            return
        self.closed = True
        self._periodic.cancel()
        if self._flusher is not None:
            self._flusher.cancel()
        for cq in self._queues.values():
            cq.close()
        self._queues.clear()
        self._commit_log.close()
