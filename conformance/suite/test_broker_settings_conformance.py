"""LPOLL-6 and RETAIN-1..4 on a broker whose settings its runner changes at run time (capability
``broker_config``, RocketMQ's UPDATE_BROKER_CONFIG, and ``manual_delete``, its DELETE_EXPIRED_COMMITLOG).

Real time, the wire only: a pull's answer and when it came; a queue's min offset, which rises when the
commit-log segments holding its first messages are deleted (RETAIN-7). Every expectation is what Apache
RocketMQ 4.9.7 and 5.x do as well as the reference, because each reads these settings again where it uses
them: the hold service's wait and the dispatch's arrival notice (``longPollingEnable``), every clean run
(``deleteWhen``, ``fileReservedTime``, ``diskMaxUsedSpaceRatio``).

Retention on real time
----------------------
The clean service runs every ``clean_interval_ms`` (the target's ``store_layout``; the gating runners use 1 s),
its first run 60 s after the broker started. A test that shows that nothing is deleted watches over several
runs, and only after a deletion in the same test showed the service running: a broker still in its first
minute would otherwise pass the watch without judging anything. Settings are put back after each test.

A manual delete request keeps forcing deletions for 20 runs; the test that makes one runs last here. Run the
module with the broker to yourself (one worker, as ``mqtck conform`` does).
"""

from __future__ import annotations

import datetime
import time

import pytest

from conformance.suite.support import (
    BIG_BODY,
    IN_DISK_BIG,
    IN_DISK_COUNT,
    IN_MEMORY_BIG,
    IN_MEMORY_COUNT,
    Settings,
    batch_queues,
    fill_three_segments,
    segment_bytes,
)
from conformance.targets import SettingsTarget, StoreLayoutTarget, Target
from conformance.targets.patience import visible

#: The clean service's first run comes this long after the broker starts (RocketMQ's fixed initial delay).
FIRST_CLEAN_S = 60.0
#: Clean runs a deletion may take once triggered: the run that deletes the segments, and RocketMQ 5's next
#: one, which raises the consume queues' min offsets; and slack for a loaded machine.
DELETION_RUNS = 4
DELETION_SLACK_S = 10.0
#: Clean runs a watch that expects no deletion spans (plus one second).
WATCH_RUNS = 3
#: Clean runs a fill waits out first. A run reads fileReservedTime when it starts and lists the segments a moment
#: later; a run that read the 0 h of the test's previous step and was held up (a loaded machine: 4.9.7 beside
#: CI's other lane) listed, and deleted, a segment the fill under the new 72 h had just closed.
SETTLED_RUNS = 2
#: Disk-usage trigger set by the disk tests: RocketMQ reads diskMaxUsedSpaceRatio clamped to [10, 95].
LOWEST_RATIO = 10
#: RocketMQ 5 deletes even reserved segments above diskSpaceCleanForciblyRatio (clamped to 85 %): on a disk
#: fuller than this the reservation tests cannot judge anything.
FORCED_CLEAN_RATIO = 0.80
#: fileReservedTime of the tests that must see segments kept: RocketMQ's default.
RESERVED_HOURS = 72

#: Short polling (seed 000): shortPollingTimeMills, and the long-polling wait a switch may still be in.
SHORT_POLLING_MS = 1_000
LONG_POLLING_CHECK_S = 5.0
#: How much earlier than the short-polling time an answer may come (the two clocks differ), and how much
#: later than hold + one check it may come on a loaded machine.
EARLY_TOLERANCE_MS = 50
LATE_SLACK_MS = 1_000
#: A pull's suspend timeout in the short-polling test: far longer than what short polling holds it.
ASKED_SUSPEND_MS = 15_000
#: Rounds of the "arrivals wake nothing" test, the wait before each send, and the latency at least one round
#: must exceed. An answer comes at the first check after the send, up to 1000 ms later; a round's pull is sent
#: just after the previous answer, i.e. just after a check, so the next check comes about 700 ms after its
#: send. Even if the phases were spread evenly, all six rounds under 100 ms would have a chance of 1e-6; a
#: broker that wakes held pulls on arrival answers each within milliseconds.
ARRIVAL_ROUNDS = 6
ARRIVAL_WAIT_S = 0.3
NOT_WOKEN_MS = 100

#: accessMessageInMemoryMaxRatio 0: every message is further behind the commit log's end than 0 bytes, so "in disk".
ALL_IN_DISK = 0

pytestmark = pytest.mark.needs("pull", "broker_config")


def _hours(offsets: tuple[int, ...]) -> str:
    """``deleteWhen`` naming the UTC hours now + each offset (the peers and the reference read UTC)."""
    hour = datetime.datetime.now(datetime.UTC).hour
    return ";".join(f"{(hour + k) % 24:02d}" for k in offsets)


#: This hour and the next (a test running over the hour stays inside), and an hour far from both.
NOW = (0, 1)
ELSEWHERE = (12,)


class Retention:
    """One test's view of the clean service: topics filled past two closed commit-log segments each, and
    waits for the deletion that raises a topic's min offset, or for several runs without one."""

    def __init__(self, target: StoreLayoutTarget, name: str) -> None:
        self.target = target
        self.name = name
        self.segment = segment_bytes(target)
        layout = target.store_layout()
        self.interval_s = layout.clean_interval_ms / 1000
        self.disk = layout.disk_used_ratio
        self._topics = 0

    def fill(self, *, may_delete: bool = False) -> str:
        """A new topic whose first two commit-log segments are closed (a third is being written). Unless
        ``may_delete``, none of them may be deleted while it is filled (the settings keep them)."""
        self._topics += 1
        topic = f"{self.name}{self._topics}"
        time.sleep(SETTLED_RUNS * self.interval_s)  # clean runs that read the settings before the last change end
        self.target.create_topic(topic, 1)
        fill_three_segments(self.target, topic, 0, self.segment)
        lo = self.target.min_max(topic, 0)[0]
        assert may_delete or lo == 0, (
            f"segments of {topic} were deleted while it was being filled (its min offset rose to {lo})")
        return topic

    def deleted(self, topic: str, why: str) -> None:
        """Wait until the clean service deleted the topic's first segments (its min offset rose)."""
        bound = FIRST_CLEAN_S + DELETION_RUNS * self.interval_s + DELETION_SLACK_S
        deadline = time.monotonic() + bound
        while self.target.min_max(topic, 0)[0] == 0:
            assert time.monotonic() < deadline, (
                f"{why}: the expired segments of {topic} were not deleted within {bound:.0f} s")
            time.sleep(min(0.2, self.interval_s / 2))

    def kept(self, topic: str, why: str) -> None:
        """Watch several clean runs: the topic's segments stay (its min offset stays 0)."""
        deadline = time.monotonic() + WATCH_RUNS * self.interval_s + 1.0
        while time.monotonic() < deadline:
            lo = self.target.min_max(topic, 0)[0]
            assert lo == 0, f"{why}: segments of {topic} were deleted (its min offset rose to {lo})"
            time.sleep(min(0.2, self.interval_s / 2))

    def running(self, settings: Settings) -> None:
        """Show the clean service is running now: expired segments deleted at a clean hour."""
        settings(fileReservedTime=0, deleteWhen=_hours(NOW), diskMaxUsedSpaceRatio=95)
        # Every closed segment is expired here, so a clean run that comes while the topic is still being filled
        # (a slow fill on a loaded machine: a CI run's 4.9.7 gate) deletes the first: the service runs, as shown.
        self.deleted(self.fill(may_delete=True), "the clean service at a deleteWhen hour with fileReservedTime 0")

    def require_disk(self, lowest: float | None = None, highest: float = FORCED_CLEAN_RATIO) -> None:
        """Skip unless the disk's usage lets the test judge: above ``lowest`` (to trigger by disk), and below
        RocketMQ 5's forced cleaning (which deletes even reserved segments) and the 95 % ratio the test sets."""
        disk = self.disk
        if disk is None:
            pytest.skip("not applicable: the target does not say how full its disk is")
        if lowest is not None and disk <= lowest:
            pytest.skip(f"not applicable: the store's disk is {disk:.0%} used, not above the lowest "
                        f"diskMaxUsedSpaceRatio ({lowest:.0%})")
        if disk > highest:
            pytest.skip(f"not applicable: the store's disk is {disk:.0%} used; RocketMQ 5 cleans forcibly above 85 %")


@pytest.fixture
def retention(target: StoreLayoutTarget) -> Retention:
    if "clock_control" in target.capabilities:
        pytest.skip("not applicable: the target runs on simulated time, and these tests watch its clean service run "
                    "in real time at the wall clock's hours (a runner on real time gates them; the store's own "
                    "tests judge the rules on simulated time)")
    if "store_layout" not in target.capabilities:
        pytest.skip("not applicable: the target does not say its store's segment sizes (store_layout)")
    return Retention(target, "RS")


# -- short polling ---------------------------------------------------------------------------------------
@pytest.mark.req("LPOLL-6")
def test_short_polling_holds_a_pull_one_short_polling_time(target: Target, settings: Settings) -> None:
    """With long polling off a pull that asks 15 s is held shortPollingTimeMills (1 s) and answered at the check
    after it: a second or two, not fifteen."""
    if "clock_control" in target.capabilities:
        pytest.skip("not applicable: the target has clock_control; the simulated-time LPOLL-6 test covers it")
    settings(longPollingEnable=False)
    time.sleep(LONG_POLLING_CHECK_S + 0.5)  # the hold service may be in a long-polling wait still
    target.create_topic("LS", 1)
    started = time.monotonic()
    r = target.start_pull("G", "LS", 0, 0, suspend_ms=ASKED_SUSPEND_MS).result()
    elapsed = (time.monotonic() - started) * 1000
    assert r.code == "PULL_NOT_FOUND" and not r.messages, r
    assert elapsed >= SHORT_POLLING_MS - EARLY_TOLERANCE_MS, (
        f"answered after {elapsed:.0f} ms, before the short-polling time ({SHORT_POLLING_MS} ms)")
    latest = 2 * SHORT_POLLING_MS + LATE_SLACK_MS
    assert elapsed <= latest, (
        f"answered after {elapsed:.0f} ms: with long polling off a pull is held shortPollingTimeMills and answered "
        f"at the next check (at most {latest} ms), not its {ASKED_SUSPEND_MS} ms")


@pytest.mark.req("LPOLL-6")
def test_short_polling_arrivals_wake_nothing(target: Target, settings: Settings) -> None:
    """With long polling off a message sent to a held pull is answered by the next check, not by its arrival:
    each answer holds the message, none comes later than one check, and they are spread over the interval."""
    if "clock_control" in target.capabilities:
        pytest.skip("not applicable: the target has clock_control; the simulated-time LPOLL-6 test covers it")
    settings(longPollingEnable=False)
    time.sleep(LONG_POLLING_CHECK_S + 0.5)
    target.create_topic("LSA", ARRIVAL_ROUNDS)
    latencies = []
    for q in range(ARRIVAL_ROUNDS):
        pending = target.start_pull("G", "LSA", q, 0, suspend_ms=ASKED_SUSPEND_MS)
        time.sleep(ARRIVAL_WAIT_S)
        sent = target.send("LSA", q, b"short-polled")
        after_send = time.monotonic()
        r = pending.result()
        latencies.append((time.monotonic() - after_send) * 1000)
        assert r.status == "FOUND" and [m.queue_offset for m in r.messages] == [sent.queue_offset], (
            f"round {q}: the held pull was answered {r.code} {r.status} without the message sent to it")
        assert latencies[-1] <= SHORT_POLLING_MS + LATE_SLACK_MS, (
            f"round {q}: answered {latencies[-1]:.0f} ms after the send, later than one check")
    shown = ", ".join(f"{x:.0f}" for x in latencies)
    assert max(latencies) >= NOT_WOKEN_MS, (
        f"every answer came within {NOT_WOKEN_MS} ms of its send ({shown} ms): arrivals wake held pulls although "
        "long polling is off")


# -- retention ----------------------------------------------------------------------------------------------
@pytest.mark.req("RETAIN-2")
def test_expired_segments_go_at_a_clean_hour_and_not_at_others(
    target: Target, settings: Settings, retention: Retention
) -> None:
    retention.require_disk()
    retention.running(settings)
    settings(deleteWhen=_hours(ELSEWHERE))
    topic = retention.fill()
    retention.kept(topic, "expired segments, outside the deleteWhen hours, disk below its ratio, no manual request")
    settings(deleteWhen=_hours(NOW))
    retention.deleted(topic, "expired segments once deleteWhen names this hour")


@pytest.mark.req("RETAIN-1", "RETAIN-5")
def test_reserved_segments_stay_until_they_expire(target: Target, settings: Settings, retention: Retention) -> None:
    """Unconsumed segments younger than fileReservedTime stay at a clean hour; once the reservation is 0 h they
    go (whether or not anyone consumed them); the segment being written stays throughout."""
    retention.require_disk()
    retention.running(settings)
    settings(fileReservedTime=RESERVED_HOURS)
    topic = retention.fill()
    retention.kept(topic, f"segments younger than fileReservedTime ({RESERVED_HOURS} h) at a deleteWhen hour")
    hi = target.min_max(topic, 0)[1]
    settings(fileReservedTime=0)
    retention.deleted(topic, "segments past fileReservedTime 0 at a deleteWhen hour")
    lo, after = target.min_max(topic, 0)
    assert after == hi and 0 < lo < hi, f"the segment being written keeps its messages: [{lo}, {after}) of [0, {hi})"


@pytest.mark.req("RETAIN-3")
def test_a_full_disk_deletes_expired_segments_at_any_hour_and_only_those(
    target: Target, settings: Settings, retention: Retention
) -> None:
    """With diskMaxUsedSpaceRatio below the disk's usage: reserved segments stay, expired ones go outside the
    deleteWhen hours."""
    retention.require_disk(lowest=LOWEST_RATIO / 100 + 0.01)
    retention.running(settings)
    settings(fileReservedTime=RESERVED_HOURS, deleteWhen=_hours(ELSEWHERE), diskMaxUsedSpaceRatio=LOWEST_RATIO)
    topic = retention.fill()
    retention.kept(topic, f"reserved segments ({RESERVED_HOURS} h) with the disk above diskMaxUsedSpaceRatio")
    settings(fileReservedTime=0)
    retention.deleted(topic, "expired segments outside the deleteWhen hours with the disk above its ratio")


@pytest.mark.req("RETAIN-4")
def test_a_manual_delete_request_deletes_expired_segments_at_any_hour(
    target: SettingsTarget, settings: Settings, retention: Retention
) -> None:
    """Last of the module: the request goes on forcing the next clean runs (20)."""
    if "manual_delete" not in target.capabilities:
        pytest.skip("not applicable: the target's runner offers no manual delete request (manual_delete)")
    retention.require_disk()
    retention.running(settings)
    settings(deleteWhen=_hours(ELSEWHERE))
    topic = retention.fill()
    retention.kept(topic, "expired segments outside the deleteWhen hours, before the manual request")
    target.request_manual_delete()
    retention.deleted(topic, "expired segments after a manual delete request, outside the deleteWhen hours")


# -- in disk: accessMessageInMemoryMaxRatio ----------------------------------------------------------------
@pytest.mark.req("OFFSET-10.in-disk", "OFFSET-11")
def test_in_disk_messages_come_in_the_smaller_batches(target: Target, settings: Settings) -> None:
    """With accessMessageInMemoryMaxRatio 0 every message is further behind the commit log's end than 0 % of
    memory, so in disk: a pull returns at most 8 messages, and of 30 KB bodies only 2 (a third would pass 64 KiB);
    at the default ratio the same fresh messages are in memory and come 32 and 8 at a time."""
    batch_queues(target, "OD")

    def batch(queue_id: int, max_nums: int = 64) -> int:
        got = target.start_pull("G", "OD", queue_id, 0, max_nums=max_nums).result()
        assert got.status == "FOUND" and got.next_begin_offset == len(got.messages), (got.status, got.next_begin_offset)
        return len(got.messages)

    assert (batch(0), batch(1)) == (IN_MEMORY_COUNT, IN_MEMORY_BIG), "OFFSET-11: fresh messages are in memory"
    settings(accessMessageInMemoryMaxRatio=ALL_IN_DISK)
    assert batch(0) == IN_DISK_COUNT, f"in disk: {batch(0)} messages in one pull, not maxTransferCountOnMessageInDisk"
    assert batch(1) == IN_DISK_BIG, f"in disk: {batch(1)} bodies of {BIG_BODY} bytes, not what fits in 64 KiB"
    assert batch(1, max_nums=1) == 1, "the first message is always returned"


@pytest.mark.req("QOFF-13.in-disk")
@pytest.mark.needs("query_offset")
def test_a_new_group_on_a_queue_whose_first_message_is_in_disk_is_not_found(target: Target, settings: Settings) -> None:
    target.create_topic("QD", 1)
    for i in range(3):
        target.send("QD", 0, b"m%d" % i, "A")
    visible(target, "QD", 0, 3)
    settings(accessMessageInMemoryMaxRatio=ALL_IN_DISK)
    assert target.query_offset("NewG", "QD", 0) == ("QUERY_NOT_FOUND", -1), (
        "min offset 0, but the message at 0 is in disk (accessMessageInMemoryMaxRatio 0): QUERY_NOT_FOUND")
