"""The audit's permit checks as FLOW-2 was corrected to seed 003 (issue 39): a batch entry is never split, so a
consumer's balance may go negative within a read and that is no finding; an entry *started* at 0 permits or below
is FLOW-11 (SHOULD, strict), not a MUST breach; and only more entries than any read could carry prove FLOW-2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main

pytest.importorskip("pyspark")


class _Trace:
    """JSON Lines rows of one broker recorder: FLOW grants and DISPATCHed entries."""

    def __init__(self, run: str) -> None:
        self.run, self.rows, self.ts, self.entry = run, [], 1_000, 0

    def _row(self, event: str, **cols: object) -> None:
        self.ts += 1_000
        self.rows.append({"schema_version": 1, "run": self.run, "ts": self.ts, "source": "broker:b",
                          "seq": len(self.rows), "event": event, **cols})

    def flow(self, permits: int, client: str = "c1") -> None:
        self._row("FLOW", group="sub", client_id=client, topic="t", count=permits, broker="b")

    def entry_of(self, size: int | None, client: str = "c1") -> None:
        """One entry of ``size`` messages (None: a recorder that cannot see batches, one message)."""
        for i in range(size or 1):
            detail = {"batch_index": i, "batch_size": size, "redelivery_count": 0} if size else None
            self._row("DISPATCH", group="sub", client_id=client, topic="t", msg_id=f"{self.entry}:{i}", broker="b",
                      offset=self.entry, **({"detail": json.dumps(detail)} if detail else {}))
        self.entry += 1

    def send(self, n: int) -> None:
        for _ in range(n):
            self._row("SEND", topic="t", broker="b", queue_id=0, offset=self.entry, msg_id=f"{self.entry}:0", tags="")
            self.entry += 1

    def restart(self) -> None:
        self._row("CRASH")
        self._row("RESTART")

    def leave(self, client: str = "c1") -> None:
        self._row("UNSUBSCRIBE", group="sub", client_id=client, topic="t")

    def end(self, after_ms: int = 0) -> list[dict]:
        self.ts += after_ms * 1000
        self._row("END")
        return self.rows


def _audit(tmp_path: Path, *runs: list[dict]) -> tuple[int, dict]:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for rows in runs for r in rows))
    code = main(["audit", str(trace), "--report-dir", str(tmp_path / "report")])
    return code, json.loads((tmp_path / "report" / "summary.json").read_text())


def _count(summary: dict, run: str, category: str) -> int:
    return summary["runs"][run]["categories"][category]["count"]


@pytest.mark.req("FLOW-2", "FLOW-11")
def test_batch_overshoot_is_legal_and_a_start_at_zero_is_a_should(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The reference: every entry starts at permits > 0, batches of 10 drive the balance to -9 (FLOW-2 allows it).
    ref = _Trace("reference")
    ref.flow(3)
    for _ in range(3):
        ref.entry_of(10)
        ref.flow(10)          # -7 + 10 = 3 > 0: the next entry starts with permits
    ref.entry_of(10)
    # Java: a read at 8 permits reads up to 8 entries and sends them whole; the 2nd and 3rd start at 0 or below
    # (FLOW-11), none is past what the read allowed (no FLOW-2).
    java = _Trace("java")
    java.flow(8)
    for _ in range(3):
        java.entry_of(10)
    code, summary = _audit(tmp_path, ref.end(), java.end())
    assert code == 0, "a SHOULD finding never fails the audit"
    assert summary["must_violations"] == 0
    for run in ("reference", "java"):
        assert _count(summary, run, "permit-overrun") == 0, run
    assert _count(summary, "reference", "permit-entry-overrun") == 0
    assert _count(summary, "java", "permit-entry-overrun") == 2
    entry = summary["runs"]["java"]["categories"]["permit-entry-overrun"]
    assert entry["requirement"] == "FLOW-11" and entry["level"] == "SHOULD"
    assert [e["detail"]["permits_before_entry"] for e in entry["examples"]] == [-2, -12]


@pytest.mark.req("FLOW-2")
def test_more_entries_than_any_read_allows_is_a_flow2_breach(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Single messages (no batch detail): 2 permits, 3 messages: the third is past every read.
    single = _Trace("single")
    single.flow(2)
    for _ in range(3):
        single.entry_of(None)
    # Batches: a read at 2 permits may carry 2 entries (the second a FLOW-11 start), never a third.
    batches = _Trace("batches")
    batches.flow(2)
    for _ in range(3):
        batches.entry_of(10)
    # A FLOW that leaves the balance at or below 0 allows no new read.
    low = _Trace("low")
    low.flow(1)
    low.entry_of(10)
    low.flow(5)               # -9 + 5 = -4
    low.entry_of(10)
    code, summary = _audit(tmp_path, single.end(), batches.end(), low.end())
    assert code == 1 and summary["must_violations"] == 3
    for run in ("single", "batches", "low"):
        assert _count(summary, run, "permit-overrun") == 1, run
    assert _count(summary, "batches", "permit-entry-overrun") == 1
    assert _count(summary, "single", "permit-entry-overrun") == 0
    example = summary["runs"]["batches"]["categories"]["permit-overrun"]["examples"][0]
    assert example["detail"] == {"permits_before_entry": -18, "permits_after_dispatch": -19, "entries_sent": 3,
                                 "entries_reads_allow": 2}


@pytest.mark.req("FLOW-3")
def test_a_consumer_that_left_holds_no_permits(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    def run(name: str, leaves: bool) -> list[dict]:
        t = _Trace(name)
        t.flow(10)
        t.send(3)
        t.entry = 0
        for _ in range(3):
            t.entry_of(None)
        if leaves:
            t.leave()           # closed with 7 permits unspent
        t.entry = 3
        t.send(5)               # nobody left to send them to
        return t.end(after_ms=30_000)

    code, summary = _audit(tmp_path, run("left", True), run("stayed", False))
    assert _count(summary, "left", "permit-freeze") == 0
    assert _count(summary, "stayed", "permit-freeze") == 1, "the control: a consumer still there with permits"
    assert code == 1


@pytest.mark.req("FLOW-2", "FLOW-11")
def test_a_consumer_created_again_starts_at_zero_permits(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A batch drives c1 to -9; then c1 is gone (its broker restarts; it leaves) and subscribes again under the same
    # name: the broker starts it at 0, so its next entry, at 5 permits, is no finding. Carried over, -9 + 5 = -4.
    runs = []
    for name in ("restart", "rejoin", "carried"):
        t = _Trace(name)
        t.flow(1)
        t.entry_of(10)
        if name == "restart":
            t.restart()
        elif name == "rejoin":
            t.leave()
        t.flow(5)
        t.entry_of(10)
        runs.append(t.end())
    _, summary = _audit(tmp_path, *runs)
    for run in ("restart", "rejoin"):
        assert _count(summary, run, "permit-overrun") == 0 and _count(summary, run, "permit-entry-overrun") == 0
    assert _count(summary, "carried", "permit-overrun") == 1, "the control: the same consumer, never gone"
