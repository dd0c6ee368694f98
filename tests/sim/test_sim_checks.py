"""The trace checks on hand-written rows: each finding fires when it should, and only then."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reference.rules.constants import DROP_GRACE_MS
from reference.sim.judges import check_trace

BASE = 1_700_000_000_000_000


class Rows:
    """Builds a trace: ``at(ms, source, event, **columns)``."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.seq: dict[str, int] = {}

    def at(self, ms: int, source: str, event: str, **columns: Any) -> Rows:
        self.seq[source] = self.seq.get(source, 0) + 1
        row = {"schema_version": 1, "run": "t", "ts": BASE + ms * 1000, "source": source, "seq": self.seq[source],
               "event": event, **columns}
        if isinstance(row.get("detail"), dict):
            row["detail"] = json.dumps(row["detail"], sort_keys=True)
        self.rows.append(row)
        return self

    def subscribe(self, ms: int, client: str, model: str = "CLUSTERING", expression: str = "*") -> Rows:
        return self.at(ms, f"client:{client}", "SUBSCRIBE", group="G", client_id=client, topic="T",
                       expression=expression, model=model)

    def send(self, ms: int, queue: int, offset: int, msg_id: str, tags: str = "") -> Rows:
        return self.at(ms, "broker:b", "SEND", topic="T", broker="b", queue_id=queue, offset=offset, msg_id=msg_id,
                       tags=tags)

    def q(self, ms: int, client: str, event: str, queue: int, **columns: Any) -> Rows:
        return self.at(ms, f"client:{client}", event, group="G", client_id=client, topic="T", broker="b",
                       queue_id=queue, **columns)

    def consume(self, ms: int, client: str, queue: int, offset: int, msg_id: str, status: str = "OK",
                detail: Any = None) -> Rows:
        self.q(ms, client, "DELIVER", queue, offset=offset, msg_id=msg_id, reconsume_times=0, detail=detail)
        return self.q(ms + 1, client, "CONSUME", queue, offset=offset, msg_id=msg_id, status=status, detail=detail)


def kinds(rows: Rows, **kwargs: Any) -> list[tuple[str, str]]:
    return [(f.requirement, f.kind) for f in check_trace(rows.rows, **kwargs).findings]


def healthy() -> Rows:
    r = Rows().subscribe(0, "a").send(1, 0, 0, "m0").send(2, 0, 1, "m1")
    r.q(3, "a", "ASSIGN", 0, offset=0, epoch=1).q(4, "a", "PULL_REQ", 0, offset=0, max_nums=32, suspend_ms=15_000)
    r.consume(10, "a", 0, 0, "m0").consume(12, "a", 0, 1, "m1")
    r.q(20, "a", "COMMIT", 0, offset=2)
    r.at(21, "broker:b", "COMMIT", group="G", client_id="a", topic="T", broker="b", queue_id=0, offset=2)
    return r


def test_a_healthy_trace_has_no_finding() -> None:
    report = check_trace(healthy().rows)
    assert report.findings == [] and report.stats["consumed_ok"] == 2 and not report.duplicates


@pytest.mark.req("REBAL-4", "REBAL-5")
def test_pull_and_commit_after_revoke() -> None:
    r = healthy().q(30, "a", "REVOKE", 0, epoch=2, detail={"reason": "rebalance"})
    r.q(31, "a", "PULL_REQ", 0, offset=2, max_nums=32, suspend_ms=15_000).q(32, "a", "COMMIT", 0, offset=2)
    assert kinds(r, only=("drop",)) == [("REBAL-4", "pull after drop")], "2 ms after: the drop's own persist"
    r.q(30 + DROP_GRACE_MS, "a", "COMMIT", 0, offset=2)
    assert kinds(r, only=("drop",)) == [("REBAL-4", "pull after drop"), ("REBAL-5", "commit after drop")]
    later = 40 + DROP_GRACE_MS
    r.q(later, "a", "ASSIGN", 0, offset=2, epoch=3).q(later + 1, "a", "PULL_REQ", 0, offset=2, max_nums=32,
                                                      suspend_ms=1)
    assert len(kinds(r, only=("drop",))) == 2, "assigned again: pulling is fine"


@pytest.mark.req("REBAL-5")
def test_the_drops_own_persist_is_not_a_commit_after_drop() -> None:
    """Seed 001 §4: removeUnnecessaryMessageQueue persists a removed queue's progress in the rebalance round that
    dropped it (Apache RocketMQ's Java client: milliseconds after); a commit from then on is one."""
    r = healthy().q(30, "a", "REVOKE", 0, epoch=2).q(30 + DROP_GRACE_MS - 1, "a", "COMMIT", 0, offset=2)
    assert kinds(r, only=("drop",)) == []


@pytest.mark.req("REBAL-4")
def test_a_pull_the_broker_got_right_after_the_revoke_may_predate_the_drop() -> None:
    """A client that records no requests of its own is judged by the broker's rows, which see a pull sent just
    before the drop a few milliseconds after the REVOKE (recorded when the round decided)."""
    r = Rows().subscribe(0, "b").q(3, "b", "ASSIGN", 0, offset=0, epoch=1).q(30, "b", "REVOKE", 0, epoch=2)
    pull = dict(group="G", client_id="b", topic="T", broker="b", queue_id=0, offset=0, max_nums=32, suspend_ms=1)
    r.at(33, "broker:b", "PULL_REQ", **pull)
    assert kinds(r, only=("drop",)) == []
    r.at(30 + DROP_GRACE_MS, "broker:b", "PULL_REQ", **pull)
    assert kinds(r, only=("drop",)) == [("REBAL-4", "pull after drop")]


@pytest.mark.req("REBAL-6")
def test_start_offset_must_be_the_committed_one() -> None:
    r = healthy().subscribe(30, "b").q(31, "b", "ASSIGN", 0, offset=1, epoch=1)
    assert kinds(r, only=("start",)) == [("REBAL-6", "start not committed")]
    ok = healthy().subscribe(30, "b").q(31, "b", "ASSIGN", 0, offset=2, epoch=1)
    assert kinds(ok, only=("start",)) == []
    lenient = healthy().at(25, "broker:b", "CRASH").subscribe(30, "b").q(31, "b", "ASSIGN", 0, offset=1, epoch=1)
    assert kinds(lenient, only=("start",)) == [], "a broker crash may lose offsets committed since its persist"


@pytest.mark.req("CONSUME-2")
def test_a_commit_past_an_unconsumed_message_is_unsafe() -> None:
    r = Rows().subscribe(0, "a").send(1, 0, 0, "m0").send(2, 0, 1, "m1").q(3, "a", "ASSIGN", 0, offset=0, epoch=1)
    r.consume(10, "a", 0, 1, "m1").q(12, "a", "COMMIT", 0, offset=2).consume(20, "a", 0, 0, "m0")
    assert kinds(r, only=("commit_safety",)) == [("CONSUME-2", "unsafe commit")]
    handed = Rows().subscribe(0, "a").send(1, 0, 0, "m0").q(3, "a", "ASSIGN", 0, offset=0, epoch=1)
    handed.consume(10, "a", 0, 0, "m0", status="LATER", detail={"retry": "%RETRY%G"})
    handed.q(12, "a", "COMMIT", 0, offset=1)
    assert kinds(handed, only=("commit_safety",)) == [], "handed over to %RETRY%: safe to pass"
    local = Rows().subscribe(0, "a").send(1, 0, 0, "m0").q(3, "a", "ASSIGN", 0, offset=0, epoch=1)
    local.consume(10, "a", 0, 0, "m0", status="LATER", detail={"retry": "local"}).q(12, "a", "COMMIT", 0, offset=1)
    assert kinds(local, only=("commit_safety",)) == [("CONSUME-2", "unsafe commit")]
    expired = Rows().subscribe(0, "a").send(1, 0, 0, "m0").q(3, "a", "ASSIGN", 0, offset=0, epoch=1)
    expired.at(5, "broker:b", "RETENTION", topic="T", broker="b", queue_id=0, min_offset=1)
    expired.q(12, "a", "COMMIT", 0, offset=1)
    assert kinds(expired, only=("commit_safety",)) == []


@pytest.mark.req("CONSUME-2")
def test_commit_past_an_unconsumed_retry_copy() -> None:
    copy = {"retry_topic": "%RETRY%G", "retry_queue_id": 0, "retry_offset": 0}
    r = Rows().subscribe(0, "a").send(1, 0, 0, "m0").q(3, "a", "ASSIGN", 0, offset=0, epoch=1)
    r.consume(4, "a", 0, 0, "m0", status="LATER", detail={"retry": "%RETRY%G"})
    r.q(5, "a", "DELIVER", 0, offset=0, msg_id="m0", reconsume_times=1, detail=copy)
    r.at(6, "client:a", "COMMIT", group="G", client_id="a", topic="%RETRY%G", broker="b", queue_id=0, offset=1)
    r.q(7, "a", "CONSUME", 0, offset=0, msg_id="m0", status="OK", detail=copy)
    assert kinds(r, only=("commit_safety",)) == [("CONSUME-2", "unsafe commit")]


@pytest.mark.req("ALO-1")
def test_lost_expired_pending_and_never_assigned() -> None:
    r = healthy().send(30, 0, 2, "m2")
    assert kinds(r, only=("at_least_once",)) == [("ALO-1", "lost")]
    assert kinds(r, only=("at_least_once",), pending_ms=60_000) == [], "sent near the horizon: pending"
    r.at(40, "broker:b", "RETENTION", topic="T", broker="b", queue_id=0, min_offset=3)
    assert kinds(r, only=("at_least_once",)) == [], "expired before it was consumed"
    never = Rows().subscribe(0, "a").send(1, 3, 0, "x")
    finding = check_trace(never.rows, only=("at_least_once",)).findings[0]
    assert "never assigned" in finding.message
    other_tag = Rows().subscribe(0, "a", expression="A").send(1, 0, 0, "m0", tags="B")
    assert kinds(other_tag, only=("at_least_once",)) == [], "not subscribed: not expected"
    dead = Rows().subscribe(0, "a").send(1, 0, 0, "m0").q(2, "a", "ASSIGN", 0, offset=0, epoch=1)
    dead.consume(3, "a", 0, 0, "m0", status="LATER", detail={"dead_letter": "%DLQ%G"})
    assert kinds(dead, only=("at_least_once",)) == []


@pytest.mark.req("ALO-2")
def test_broadcasting_each_live_consumer_must_consume() -> None:
    r = Rows().subscribe(0, "a", "BROADCASTING").subscribe(0, "b", "BROADCASTING").send(1, 0, 0, "m0")
    r.q(2, "a", "ASSIGN", 0, offset=0, epoch=1).q(2, "b", "ASSIGN", 0, offset=0, epoch=1)
    r.consume(3, "a", 0, 0, "m0")
    assert kinds(r, only=("at_least_once",)) == [("ALO-2", "lost")]
    r.at(4, "client:b", "CRASH")
    assert kinds(r, only=("at_least_once",)) == [], "only consumers alive at the end count"


@pytest.mark.req("ALO-4")
def test_broadcasting_a_consumer_back_must_consume_what_was_sent_while_it_was_down() -> None:
    r = Rows().subscribe(0, "a", "BROADCASTING").subscribe(0, "b", "BROADCASTING").send(1, 0, 0, "m0")
    r.q(2, "a", "ASSIGN", 0, offset=0, epoch=1).q(2, "b", "ASSIGN", 0, offset=0, epoch=1)
    r.consume(3, "a", 0, 0, "m0").consume(3, "b", 0, 0, "m0")
    r.at(4, "client:b", "CRASH")
    r.send(5, 0, 1, "m1").consume(6, "a", 0, 1, "m1")
    r.subscribe(7, "b", "BROADCASTING").q(8, "b", "ASSIGN", 0, offset=1, epoch=2)
    assert kinds(r, only=("at_least_once",)) == [("ALO-4", "lost")], "sent while b was down: the come-back clause"
    r.send(9, 0, 2, "m2").consume(10, "a", 0, 2, "m2")
    assert sorted(kinds(r, only=("at_least_once",))) == [("ALO-2", "lost"), ("ALO-4", "lost")], "m2: b was up"


@pytest.mark.req("ALO-3")
def test_duplicates_need_a_cause() -> None:
    r = healthy().consume(30, "a", 0, 0, "m0")
    report = check_trace(r.rows, only=("duplicates",))
    assert [f.kind for f in report.findings] == ["duplicate without cause"]
    assert report.duplicates == {"unknown": 1}
    causes = {
        "crash": lambda x: x.at(25, "client:a", "CRASH"),
        "broker_restart": lambda x: x.at(25, "broker:b", "RESTART"),
        "rebalance": lambda x: x.q(25, "a", "REVOKE", 0, epoch=2, detail={"reason": "rebalance"}),
        "shutdown": lambda x: x.q(25, "a", "REVOKE", 0, epoch=2, detail={"reason": "shutdown"}),
        "offset_moved": lambda x: x.q(25, "a", "REVOKE", 0, epoch=2, detail={"reason": "offset_moved"}),
        "retry": lambda x: x.q(25, "a", "CONSUME", 0, offset=0, msg_id="m0", status="LATER", detail=None),
    }
    for cause, add in causes.items():
        rows = healthy()
        add(rows)
        rows.consume(30, "a", 0, 0, "m0")
        report = check_trace(rows.rows, only=("duplicates",))
        assert report.duplicates == {cause: 1} and not report.findings, cause
    other = healthy().subscribe(25, "b").q(26, "b", "ASSIGN", 0, offset=0, epoch=1).consume(30, "b", 0, 0, "m0")
    assert check_trace(other.rows, only=("duplicates",)).duplicates == {"rebalance": 1}
    copy = healthy().consume(30, "a", 0, 0, "m0", detail={"retry_topic": "%RETRY%G", "retry_queue_id": 0,
                                                         "retry_offset": 4})
    assert check_trace(copy.rows, only=("duplicates",)).duplicates == {"retry": 1}


@pytest.mark.req("REBAL-2", "REBAL-3")
def test_ownership_at_the_end() -> None:
    r = healthy().subscribe(5, "b").q(6, "b", "ASSIGN", 0, offset=0, epoch=1)
    assert kinds(r, only=("ownership",)) == [("REBAL-2", "ownership")]
    r.q(7, "a", "REVOKE", 0, epoch=2, detail={"reason": "rebalance"})
    assert kinds(r, only=("ownership",)) == []
    r.at(8, "client:b", "CRASH")
    assert kinds(r, only=("ownership",)) == [("REBAL-2", "ownership")], "a dead owner owns nothing"
    b = Rows().subscribe(0, "a", "BROADCASTING").subscribe(0, "b", "BROADCASTING").send(1, 0, 0, "m0")
    b.q(2, "a", "ASSIGN", 0, offset=0, epoch=1)
    assert kinds(b, only=("ownership",)) == [("REBAL-3", "ownership")]
    b.q(3, "b", "ASSIGN", 0, offset=0, epoch=1)
    assert kinds(b, only=("ownership",)) == []


def test_summary_lists_findings() -> None:
    report = check_trace(healthy().send(30, 0, 2, "m2").rows)
    text = report.summary()
    assert "1 finding(s)" in text and "[ALO-1] lost" in text
    assert report.of("ALO-1") and not report.of("REBAL-2")
