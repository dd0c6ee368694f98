"""Differential test: every golden line, produced by Apache RocketMQ's own strategy classes, is
reproduced by ``reference.allocation`` exactly (same queues, same order; or the same exception class
and message). A sample also goes through the exec protocol, to show it carries every field."""

from __future__ import annotations

import sys

import pytest
from alloc_golden import as_request, expected, golden_lines, replay

from conformance.strategy.execproc import ExecStrategyUnderTest
from conformance.strategy.golden import protocol_answer
from conformance.strategy.model import Outcome

#: Lines per file, as the golden README lists them: a truncated copy must not pass quietly.
LINE_COUNTS = {
    "averagely": 1909,
    "by_circle": 1889,
    "consistent_hash": 3006,
    "machine_room": 1731,
    "machine_room_nearby": 1978,
    "by_config": 589,
    "pop_share": 2536,
}
#: Lines per file sent through the exec protocol (the whole set is replayed in-process above).
PROTOCOL_SAMPLE = 300


@pytest.mark.req("ALLOC-9")
@pytest.mark.parametrize(
    "name",
    [
        pytest.param("averagely", marks=pytest.mark.req("ALLOC-2", "ALLOC-1", "ALLOC-8")),
        pytest.param("by_circle", marks=pytest.mark.req("ALLOC-3", "ALLOC-1", "ALLOC-8")),
        pytest.param("consistent_hash", marks=pytest.mark.req("ALLOC-19", "ALLOC-8")),
        pytest.param("machine_room", marks=pytest.mark.req("ALLOC-20", "ALLOC-8")),
        pytest.param("machine_room_nearby", marks=pytest.mark.req("ALLOC-21", "ALLOC-8")),
        pytest.param("by_config", marks=pytest.mark.req("ALLOC-7")),
        pytest.param("pop_share", marks=pytest.mark.req("ALLOC-15", "ALLOC-16", "ALLOC-22")),
    ],
)
def test_every_golden_line_is_reproduced(name: str) -> None:
    lines = list(golden_lines(name))
    assert len(lines) == LINE_COUNTS[name]
    mismatches = [
        f"{line['case']} currentCID={line['currentCID']!r}: expected {expected(line)}, got {replay(line)}"
        for line in lines
        if replay(line) != expected(line)
    ]
    assert not mismatches, f"{len(mismatches)} of {len(lines)} lines differ, first: {mismatches[0]}"


@pytest.mark.req("ALLOC-9", "ALLOC-1")
def test_golden_files_cover_errors_and_java_order() -> None:
    """The vectors do exercise what the reference must get right beyond the happy path."""
    lines = [line for name in LINE_COUNTS for line in golden_lines(name)]
    errors = {line["error"] for line in lines if "error" in line}
    assert "java.lang.IllegalArgumentException: currentCID is empty" in errors
    assert "java.lang.IllegalArgumentException: illegal virtualNodeCnt :-1" in errors
    utf16 = [line for line in lines if line["case"].endswith("edge-utf16-sort-order")]
    assert utf16, "the UTF-16 ordering cases are present"
    for line in utf16:
        cids = line["cidAll"]
        assert cids != sorted(cids), "Python's order differs there, so the case is a real test"


@pytest.mark.req("ALLOC-9", "ALLOC-18")
@pytest.mark.parametrize("name", list(LINE_COUNTS))
def test_golden_lines_through_the_exec_protocol(name: str) -> None:
    lines = [line for line in golden_lines(name) if as_request(line) is not None][:PROTOCOL_SAMPLE]
    served = ExecStrategyUnderTest([sys.executable, "-m", "conformance.strategy.serve", name])
    try:
        outcomes = served.allocate_many([as_request(line) for line in lines])
    finally:
        served.close()
    for line, outcome in zip(lines, outcomes, strict=True):
        want = protocol_answer(line)
        if "error" in want:
            assert outcome == Outcome(error=want["error"]), line["case"]
        else:
            assert [mq.to_json() for mq in outcome.queues] == want["result"], line["case"]
