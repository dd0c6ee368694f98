"""PULL, OFFSET, QOFF and INPUT requirements, through the Target interface."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.suite.support import aged_queue, allowed_corrections, answered, fill
from conformance.targets import StoreLayoutTarget, Target, TargetError

pytestmark = pytest.mark.needs("pull")


@pytest.mark.req("PULL-1", "PULL-2")
def test_empty_queue_and_overflow(target: Target) -> None:
    target.create_topic("CT", 2)
    r = target.start_pull("G", "CT", 0, 0).result()
    assert (r.status, r.next_begin_offset, r.code) == ("NO_MESSAGE_IN_QUEUE", 0, "PULL_NOT_FOUND")
    r = target.start_pull("G", "CT", 0, 7).result()
    assert (r.status, r.next_begin_offset, r.code) == ("NO_MESSAGE_IN_QUEUE", 0, "PULL_OFFSET_MOVED")
    fill(target, "CT", 5)
    for offset in (0, 3, 5, 6, 50):
        r = target.start_pull("G", "CT", 0, offset).result()
        want = allowed_corrections(offset, 0, 5)
        if want is None:
            assert r.status == "FOUND" and r.code == "SUCCESS"
            assert [m.queue_offset for m in r.messages] == list(range(offset, 5))
            assert r.next_begin_offset == 5
        else:
            assert r.status == want[0] and r.next_begin_offset in want[1], f"pull at {offset}: {r} not in {want}"
    codes = {"OFFSET_OVERFLOW_ONE": "PULL_NOT_FOUND", "OFFSET_OVERFLOW_BADLY": "PULL_OFFSET_MOVED"}
    for offset, status in ((5, "OFFSET_OVERFLOW_ONE"), (6, "OFFSET_OVERFLOW_BADLY")):
        assert target.start_pull("G", "CT", 0, offset).result().code == codes[status]


@pytest.mark.req("PULL-6")
def test_every_answer_carries_min_and_max_offset(target: Target) -> None:
    """Split from test_empty_queue_and_overflow: the bounds are upstream's (PULL-6), not seed 002's (PULL-2)."""
    target.create_topic("CT", 2)
    fill(target, "CT", 5)
    for offset in (0, 3, 5, 6, 50):
        r = target.start_pull("G", "CT", 0, offset).result()
        assert (r.min_offset, r.max_offset) == (0, 5), f"pull at {offset}: {r}"


@pytest.mark.req("PULL-1", "PULL-2")
@pytest.mark.needs("retention_control", "clock_control", "store_layout")
def test_correction_after_retention(target: StoreLayoutTarget) -> None:
    target.create_topic("CT", 1)
    old, lo, hi = aged_queue(target, "CT")
    assert 0 < lo <= old < hi == old + 50, f"retention must delete old files and raise the min offset: [{lo}, {hi})"
    for offset in (0, lo - 1, lo, (lo + hi) // 2, hi, hi + 1, hi + 100):
        r = target.start_pull("G", "CT", 0, offset).result()
        want = allowed_corrections(offset, lo, hi)
        if want is None:
            assert r.status == "FOUND" and r.messages[0].queue_offset == offset
            assert r.next_begin_offset == offset + len(r.messages)
        else:
            assert r.status == want[0] and r.next_begin_offset in want[1], f"pull at {offset} in [{lo}, {hi})"
            assert r.code == ("PULL_NOT_FOUND" if want[0] == "OFFSET_OVERFLOW_ONE" else "PULL_OFFSET_MOVED")


@pytest.mark.req("PULL-1", "PULL-5")
def test_tag_filter_and_no_matched_message(target: Target) -> None:
    target.create_topic("CT", 1)
    fill(target, "CT", 3, tags="B")
    fill(target, "CT", 2, tags="A")
    r = target.start_pull("G", "CT", 0, 0, expression="A").result()
    assert r.status == "FOUND" and [m.tags for m in r.messages] == ["A", "A"]
    r = target.start_pull("G", "CT", 0, 0, expression="C").result()
    assert (r.status, r.code, r.next_begin_offset) == ("NO_MATCHED_MESSAGE", "PULL_RETRY_IMMEDIATELY", 5)


@pytest.mark.req("PULL-8")
def test_a_tag_list_matches_each_tag_with_or_without_blanks(target: Target) -> None:
    """Tags A, B, C; 'A || B' (as RocketMQ's docs and examples write it) and 'A||B' both return A and B, never C."""
    target.create_topic("CT", 1)
    for tags in ("A", "C", "B"):
        fill(target, "CT", 1, tags=tags)
    for expression in ("A||B", "A || B"):
        r = target.start_pull("G", "CT", 0, 0, expression=expression).result()
        assert r.status == "FOUND" and [m.tags for m in r.messages] == ["A", "B"], (
            f"PULL-8: {expression!r} returned {r.status} {[m.tags for m in r.messages]}, not the messages tagged A, B")


@pytest.mark.req("PULL-7")
@pytest.mark.needs("consumer_registry")
def test_registered_subscription_is_used_without_flag(target: Target) -> None:
    target.create_topic("CT", 1)
    fill(target, "CT", 2, tags="B")
    fill(target, "CT", 1, tags="A")
    with pytest.raises(TargetError) as err:
        target.start_pull("G", "CT", 0, 0, expression=None)
    assert err.value.code == "SUBSCRIPTION_NOT_EXIST"
    target.heartbeat("c1", "client-1", "G", {"CT": "A"})
    r = target.start_pull("G", "CT", 0, 0, expression=None).result()
    assert [m.tags for m in r.messages] == ["A"]


@pytest.mark.req("PULL-3")
def test_no_suspend_flag_answers_at_once(target: Target) -> None:
    target.create_topic("CT", 1)
    pending = target.start_pull("G", "CT", 0, 0, suspend_ms=0)
    assert answered(target, pending), "a pull without SUSPEND must be answered at once"
    assert pending.result().code == "PULL_NOT_FOUND"


@pytest.mark.req("PULL-4", "QOFF-11")
@pytest.mark.needs("commit_offset", "query_offset")
def test_commit_piggyback(target: Target) -> None:
    target.create_topic("CT", 1)
    fill(target, "CT", 4)
    target.start_pull("G", "CT", 0, 2, commit_offset=2).result()
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 2)
    target.commit_offset("G", "CT", 0, 3)
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 3)


@pytest.mark.req("PULL-4")
@pytest.mark.needs("commit_offset", "query_offset", "long_poll", "clock_control")
def test_held_pull_commits_once(target: Target) -> None:
    """The piggybacked commit is stored when the request is first processed, not again on wake-up."""
    target.create_topic("CT", 1)
    pending = target.start_pull("G", "CT", 0, 0, suspend_ms=15_000, commit_offset=2)
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 2), "stored at first processing"
    target.commit_offset("G", "CT", 0, 5)
    target.advance(1_000)
    fill(target, "CT", 1)
    assert pending.result().code == "SUCCESS"
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 5), "the woken request committed a second time"


@pytest.mark.req("QOFF-12", "QOFF-13.min-above-zero")
@pytest.mark.needs("query_offset", "retention_control", "clock_control", "store_layout")
def test_query_offset_fallback(target: StoreLayoutTarget) -> None:
    target.create_topic("CT", 1)
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 0), "empty queue: nothing at 0 is in disk"
    fill(target, "CT", 3)
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 0), "min offset 0 and hot: start at 0"
    target.create_topic("CQ", 1)
    _, lo, _ = aged_queue(target, "CQ", young=10)
    assert lo > 0, "retention must raise the min offset"
    assert target.query_offset("G", "CQ", 0) == ("QUERY_NOT_FOUND", -1), "min offset above 0"


#: INPUT-1: pulls every RocketMQ broker refuses (unknown topic, queueId out of range, unparsable filter).
REFUSED_PULLS = [
    (dict(group="G", topic="NOPE", queue_id=0, offset=0), "topic"),
    (dict(group="G", topic="CT", queue_id=2, offset=0), "queueId"),
    (dict(group="G", topic="CT", queue_id=0, offset=0, expression="||"), "expression"),
]
#: INPUT-4 (profile strict): pulls the reference refuses besides those, each error naming its field.
STRICT_REFUSED_PULLS = [
    *REFUSED_PULLS,
    (dict(group="", topic="CT", queue_id=0, offset=0), "consumerGroup"),
    (dict(group="G", topic="CT", queue_id=0, offset=-1), "queueOffset"),
    (dict(group="G", topic="CT", queue_id=0, offset=0, max_nums=0), "maxMsgNums"),
    (dict(group="G", topic="CT", queue_id=0, offset=0, max_nums=100_000), "maxMsgNums"),
    (dict(group="G", topic="CT", queue_id=0, offset=0, commit_offset=-5), "commitOffset"),
]


def _refusals(
    target: Target, cases: list[tuple[dict[str, Any], str]]
) -> list[tuple[list[Any], dict[str, Any], str, TargetError]]:
    """Each pull refused, however long its answer takes; each carried a commit piggyback, and none of them moved
    the group's offset."""
    target.create_topic("CT", 2)
    fill(target, "CT", 1)
    offsets = "query_offset" in target.capabilities and "commit_offset" in target.capabilities
    if offsets:
        target.commit_offset("G", "CT", 0, 0)
    out = []
    for case, field in cases:
        kwargs = {"commit_offset": 1, **case}
        args = [kwargs.pop(k) for k in ("group", "topic", "queue_id", "offset")]
        with pytest.raises(TargetError) as err:
            target.start_pull(*args, **kwargs).result()
        out.append((args, kwargs, field, err.value))
    if offsets:
        assert target.query_offset("G", "CT", 0) == ("SUCCESS", 0), "a refused pull's commit piggyback was stored"
    return out


@pytest.mark.req("INPUT-1")
def test_bad_pulls_are_refused(target: Target) -> None:
    _refusals(target, REFUSED_PULLS)


@pytest.mark.req("INPUT-4")
def test_bad_pulls_are_refused_naming_the_field(target: Target) -> None:
    for args, kwargs, field, err in _refusals(target, STRICT_REFUSED_PULLS):
        assert err.field == field, f"{args} {kwargs}: error should name {field}, got {err}"


@pytest.mark.req("INPUT-2", "QOFF-3")
@pytest.mark.needs("commit_offset", "query_offset")
def test_bad_offset_updates_are_refused(target: Target) -> None:
    target.create_topic("CT", 1)
    target.commit_offset("G", "CT", 0, 1)
    for args, field in ((("", "CT", 0, 1), "consumerGroup"), (("G", "CT", 0, -1), "commitOffset"),
                        (("G", "CT", 9, 1), "queueId"), (("G", "CT", -1, 1), "queueId"),
                        (("G", "NOPE", 0, 1), "topic")):
        with pytest.raises(TargetError) as err:
            target.commit_offset(*args)
        assert err.value.field == field
    assert target.query_offset("G", "CT", 0) == ("SUCCESS", 1)
