"""Offset correction and the pull scan against a pure-Python model (OFFSET, RETAIN).

A Hypothesis state machine drives a real store on tiny segments: appends of random tags and sizes
across queues, time passing, the three retention phases run separately and in any order, restarts,
and pulls at offsets chosen around the interesting points (min, max, deleted index segments) with
random batch sizes and filters. The model keeps the queue contents as plain lists and knows the
commit-log layout only through sizes and the segment size; from (offset, min, max, units present,
log start) it predicts the status, nextBeginOffset and the exact messages, and every pull is
compared with it.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from reference.clock import SimClock
from reference.rules.filter import SubscriptionData, tags_hash_code
from reference.rules.status import GetMessageStatus
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.store.record import END_MARKER_BYTES, HEADER_BYTES
from reference.store.store import MessageStore

TOPIC = "T"
QUEUES = 4
#: The first load of messages goes to the other queues, so this one starts empty.
EMPTY_AT_START = QUEUES - 1
TAGS = (None, "a", "b", "c")
EXPRESSIONS = ("*", "a", "b", "a||c", "zz")
MINUTE_MS = 60_000
UNIT_BYTES = 20


@dataclass(frozen=True)
class Unit:
    """What the model knows of one message: where it went and what it was."""

    phy: int
    size: int
    tag: str | None
    body: bytes
    stored_at: int


@dataclass
class Model:
    segment_bytes: int
    units_per_segment: int
    config: MessageStoreConfig
    log: list[Unit] = field(default_factory=list)
    log_start: int = 0
    queues: dict[int, list[Unit]] = field(default_factory=lambda: {q: [] for q in range(QUEUES)})
    min_offset: dict[int, int] = field(default_factory=lambda: {q: 0 for q in range(QUEUES)})
    first_index_segment: dict[int, int] = field(default_factory=lambda: {q: 0 for q in range(QUEUES)})

    # -- storage facts -------------------------------------------------------------------------
    def place(self, size: int) -> int:
        """Commit-log offset of the next record of ``size`` bytes (records never span segments)."""
        if not self.log:
            return 0
        last = self.log[-1]
        end = last.phy + last.size
        segment_end = (last.phy // self.segment_bytes + 1) * self.segment_bytes
        return end if end + size + END_MARKER_BYTES <= segment_end else segment_end

    @property
    def log_end(self) -> int:
        return self.log[-1].phy + self.log[-1].size if self.log else 0

    def clean_log(self, now: int, triggered: bool) -> None:
        if not triggered or not self.log:
            return
        reserved = self.config.file_reserved_time_hours * 3_600_000
        last_segment = self.log[-1].phy // self.segment_bytes
        segment = self.log_start // self.segment_bytes
        # At most delete_files_batch_max segments a run (RocketMQ's DELETE_FILES_BATCH_MAX).
        last_segment = min(last_segment, segment + self.config.delete_files_batch_max)
        while segment < last_segment:
            newest = max(u.stored_at for u in self.log if u.phy // self.segment_bytes == segment)
            if now < newest + reserved:
                break
            segment += 1
        self.log_start = segment * self.segment_bytes

    def clean_index(self) -> None:
        for q, units in self.queues.items():
            if not units:
                continue
            last = (len(units) - 1) // self.units_per_segment
            first = self.first_index_segment[q]
            while first < last and units[(first + 1) * self.units_per_segment - 1].phy < self.log_start:
                first += 1
            self.first_index_segment[q] = first

    def correct_min(self) -> list[int]:
        """Raise each queue's min; returns the queues whose min rose."""
        risen = []
        for q, units in self.queues.items():
            start = max(self.min_offset[q], self.first_index_segment[q] * self.units_per_segment)
            new = next((i for i in range(start, len(units)) if units[i].phy >= self.log_start), len(units))
            if new > self.min_offset[q]:
                self.min_offset[q] = new
                risen.append(q)
        return risen

    # -- the oracle ----------------------------------------------------------------------------
    def predict(self, q: int, offset: int, n: int, expression: str) -> tuple[GetMessageStatus, int, list[int]]:
        units, lo, hi = self.queues[q], self.min_offset[q], len(self.queues[q])
        if hi == 0:
            return GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, []
        if offset < lo:
            return GetMessageStatus.OFFSET_TOO_SMALL, lo, []
        if offset == hi:
            return GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, []
        if offset > hi:
            return GetMessageStatus.OFFSET_OVERFLOW_BADLY, (0 if lo == 0 else hi), []
        segment_start = offset - offset % self.units_per_segment
        if segment_start < self.first_index_segment[q] * self.units_per_segment:
            return GetMessageStatus.OFFSET_FOUND_NULL, segment_start + self.units_per_segment, []
        in_segment = min(segment_start + self.units_per_segment, hi) - offset
        bound_bytes = max(self.config.max_filter_scan_bytes, n * UNIT_BYTES)
        visit = -(-min(in_segment * UNIT_BYTES, bound_bytes) // UNIT_BYTES)
        wanted = None if expression == "*" else set(expression.split("||"))
        budget = self.config.in_memory_budget_bytes()
        status, taken, taken_bytes, skip_below, consumed = GetMessageStatus.NO_MATCHED_MESSAGE, [], 0, None, 0
        for i in range(offset, offset + visit):
            u = units[i]
            if skip_below is not None and u.phy < skip_below:
                consumed += 1
                continue
            if taken:
                in_disk = self.log_end - u.phy > budget
                count_limit = (self.config.max_transfer_count_on_message_in_disk if in_disk
                               else self.config.max_transfer_count_on_message_in_memory)
                byte_limit = (self.config.max_transfer_bytes_on_message_in_disk if in_disk
                              else self.config.max_transfer_bytes_on_message_in_memory)
                if len(taken) >= n or taken_bytes + u.size > byte_limit or len(taken) >= count_limit:
                    break
            consumed += 1
            if wanted is None or u.tag in wanted:
                if u.phy >= self.log_start:
                    taken.append(i)
                    taken_bytes += u.size
                    status, skip_below = GetMessageStatus.FOUND, None
                else:
                    if not taken:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    skip_below = (u.phy // self.segment_bytes + 1) * self.segment_bytes
            elif not taken:
                status = GetMessageStatus.NO_MATCHED_MESSAGE
        return status, offset + consumed, taken


class OffsetCorrectionMachine(RuleBasedStateMachine):

    #: Statuses seen by pulls, across every run in this process (for the coverage test).
    seen: set[GetMessageStatus] = set()

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="mqtck-offset-"))
        self.clock = SimClock()
        self.store: MessageStore | None = None
        self.risen: list[tuple[str, int, int]] = []

    @initialize(
        # Small first: Hypothesis favours the first choice, and small files give retention work.
        segment_bytes=st.sampled_from([300, 700, 1300]),
        units_per_segment=st.sampled_from([2, 3, 7]),
        scan_bytes=st.sampled_from([16_000, 60, 90]),
        memory=st.sampled_from([1 << 40, 1500]),
        in_memory=st.sampled_from([(10_000, 32), (250, 3)]),
        in_disk=st.sampled_from([(10_000, 8), (200, 2)]),
        reserved_hours=st.sampled_from([0, 1]),
        initial=st.lists(st.tuples(st.integers(0, EMPTY_AT_START - 1), st.sampled_from(TAGS), st.integers(0, 40)),
                         min_size=10, max_size=40),
    )
    def open_store(
        self, segment_bytes, units_per_segment, scan_bytes, memory, in_memory, in_disk, reserved_hours, initial
    ) -> None:
        """A store with random limits and a first load of messages spread over several segments."""
        self.config = MessageStoreConfig(
            commit_log_segment_bytes=segment_bytes, consume_queue_units_per_segment=units_per_segment,
            max_filter_scan_bytes=scan_bytes, total_physical_memory_bytes=memory,
            max_transfer_bytes_on_message_in_memory=in_memory[0],
            max_transfer_count_on_message_in_memory=in_memory[1],
            max_transfer_bytes_on_message_in_disk=in_disk[0], max_transfer_count_on_message_in_disk=in_disk[1],
            file_reserved_time_hours=reserved_hours, max_message_size=200,
        )
        self.model = Model(segment_bytes, units_per_segment, self.config)
        self._open()
        self.store.create_topic(TOPIC, QUEUES)
        for queue, tag, length in initial:
            self.append(queue, [(tag, length)])

    def _open(self) -> None:
        self.store = MessageStore(self.dir, self.config, self.clock, disk_usage_ratio=lambda: 0.0)
        self.store.add_retention_listener(lambda t, q, m: self.risen.append((t, q, m)))

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(queue=st.integers(0, QUEUES - 1), items=st.lists(st.tuples(st.sampled_from(TAGS), st.integers(0, 40)),
                                                            min_size=2, max_size=10))
    def append(self, queue: int, items: list[tuple[str | None, int]]) -> None:
        for tag, length in items:
            body = bytes([len(self.model.log) % 256]) * length
            size = HEADER_BYTES + len(TOPIC) + len(tag or "") + length
            phy = self.model.place(size)
            result = self.store.put_message(Message(TOPIC, body, queue, tags=tag))
            assert (result.queue_offset, result.commit_log_offset) == (len(self.model.queues[queue]), phy)
            unit = Unit(phy, size, tag, body, self.clock.now_ms())
            self.model.log.append(unit)
            self.model.queues[queue].append(unit)

    # Hypothesis favours the first choice of sampled_from: 61 minutes makes records older than a
    # 1 h reservation.
    @rule(minutes=st.sampled_from([61, 240, 20, 1]))
    def advance(self, minutes: int) -> None:
        self.clock.advance(minutes * MINUTE_MS)

    @rule(phase=st.sampled_from(["commit_log_manual", "consume_queues", "min_offsets", "commit_log"]))
    def retention_phase(self, phase: str) -> None:
        """One retention phase alone; "commit_log" relies on the hour (deleteWhen) as trigger."""
        if phase.startswith("commit_log"):
            self._clean_commit_log(manual=phase == "commit_log_manual")
        elif phase == "consume_queues":
            self._clean_consume_queues()
        else:
            self._correct_min_offsets()
        self._probe_min()

    @rule(phases=st.sampled_from([2, 1, 3]))
    def age_and_clean(self, phases: int) -> None:
        """Let every record outlive the reservation, then run the first ``phases`` retention phases
        with a manual trigger: stopping after 1 or 2 leaves the windows in which MESSAGE_WAS_REMOVING
        and OFFSET_FOUND_NULL happen."""
        self.advance(61)
        self._clean_commit_log(manual=True)
        if phases >= 2:
            self._clean_consume_queues()
        if phases >= 3:
            self._correct_min_offsets()
        self._probe_min()

    def _clean_commit_log(self, manual: bool) -> None:
        if manual:
            self.store.request_manual_delete(times=1)
        hour = datetime.datetime.fromtimestamp(self.clock.now_ms() / 1000, datetime.UTC).hour
        self.model.clean_log(self.clock.now_ms(), manual or hour in self.config.delete_when_hours())
        self.store.clean_commit_log()
        assert self.store.get_commit_log_min_offset() == self.model.log_start

    def _clean_consume_queues(self) -> None:
        self.model.clean_index()
        self.store.clean_consume_queues()

    def _correct_min_offsets(self) -> None:
        self.risen.clear()
        expected = self.model.correct_min()
        self.store.correct_min_offsets()
        assert sorted(self.risen) == sorted((TOPIC, q, self.model.min_offset[q]) for q in expected)

    @rule()
    def restart(self) -> None:
        self.store.close()
        self._open()
        self.model.correct_min()  # recovery corrects min offsets

    @rule(data=st.data(), n=st.integers(1, 8), expression=st.sampled_from(EXPRESSIONS))
    def pull(self, data: st.DataObject, n: int, expression: str) -> None:
        """A pull at an offset just above min (where a consumer following the corrections is), around
        min, max or the first index segment left, or anywhere."""
        queue = data.draw(st.integers(0, QUEUES - 1), label="queue")
        lo, hi = self.model.min_offset[queue], len(self.model.queues[queue])
        first_present = self.model.first_index_segment[queue] * self.model.units_per_segment
        points = sorted({0, max(lo - 1, 0), lo + 1, (lo + hi) // 2, max(hi - 1, 0), hi, hi + 1, hi + 7,
                         max(first_present - 1, 0), first_present})
        offset = data.draw(
            st.one_of(st.integers(lo, lo + 3), st.sampled_from(points), st.integers(0, hi + 10)), label="offset"
        )
        self._check_pull(queue, offset, n, expression)

    def _probe_min(self) -> None:
        """After a retention phase, a consumer at each queue's min pulls: the moment a phase matters."""
        for queue in range(QUEUES):
            self._check_pull(queue, self.model.min_offset[queue], 4, "*")

    def _check_pull(self, queue: int, offset: int, n: int, expression: str) -> None:
        lo, hi = self.model.min_offset[queue], len(self.model.queues[queue])
        result = self.store.get_message("g", TOPIC, queue, offset, n, SubscriptionData.parse(TOPIC, expression))
        status, next_offset, offsets = self.model.predict(queue, offset, n, expression)
        note(f"pull q={queue} offset={offset} n={n} {expression!r} -> {result.status.name} "
             f"{result.next_begin_offset} {[m.queue_offset for m in result.messages]}")
        assert (result.status, result.next_begin_offset) == (status, next_offset)
        assert (result.min_offset, result.max_offset) == (lo, hi)
        assert [m.queue_offset for m in result.messages] == offsets
        sub = SubscriptionData.parse(TOPIC, expression)
        for m in result.messages:
            unit = self.model.queues[queue][m.queue_offset]
            assert (m.body, m.tags, m.commit_log_offset, m.size) == (unit.body, unit.tag, unit.phy, unit.size)
            assert sub.matches_tag(m.tags) and sub.matches(tags_hash_code(m.tags or ""))
        type(self).seen.add(result.status)

    @invariant()
    def bounds_agree(self) -> None:
        if self.store is None:
            return
        for q in range(QUEUES):
            assert self.store.get_min_offset_in_queue(TOPIC, q) == self.model.min_offset[q]
            assert self.store.get_max_offset_in_queue(TOPIC, q) == len(self.model.queues[q])
            assert self.store.get_min_offset_in_queue(TOPIC, q) <= self.store.get_max_offset_in_queue(TOPIC, q)


@pytest.mark.req(
    "OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5", "OFFSET-6", "OFFSET-7.removed",
    "OFFSET-7.first-record", "OFFSET-8",
    "OFFSET-9", "OFFSET-10.in-memory", "OFFSET-10.in-disk", "OFFSET-11", "OFFSET-12",
    "RETAIN-1", "RETAIN-2", "RETAIN-4", "RETAIN-5", "RETAIN-6", "RETAIN-7", "RETAIN-11", "RETAIN-12",
)
class TestOffsetCorrection(OffsetCorrectionMachine.TestCase):  # type: ignore[name-defined,misc]
    """The machine under the active Hypothesis profile."""


@pytest.mark.req("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5", "OFFSET-7.removed", "OFFSET-8")
def test_every_status_is_reached() -> None:
    """A fixed, derandomized run reaches every status a pull can get from a known queue."""
    OffsetCorrectionMachine.seen = set()
    run_state_machine_as_test(
        OffsetCorrectionMachine,
        settings=settings(
            max_examples=60, stateful_step_count=40, derandomize=True, database=None, deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    expected = set(GetMessageStatus) - {GetMessageStatus.NO_MATCHED_LOGIC_QUEUE}
    assert OffsetCorrectionMachine.seen >= expected, sorted(s.name for s in expected - OffsetCorrectionMachine.seen)
