"""Reports named for what was judged, and read without a decoder: a gate's title, run folder and JUnit suite carry
the peer's name and version (its address is a detail), the header keeps reviewed deviations apart from failures, a
failure's last request reads as words, the console counts the seeded faults' time, and a test that ran without
its race happening leaves its requirement not applicable, never "not covered"."""

from __future__ import annotations

import argparse
import contextlib
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import expectations, report
from conformance.commands.conform import ConformOptions, run_name
from conformance.report import plots
from tests.synthetic_gate import PEER, SERVED_AT, write_gate_run


def test_a_gate_report_is_named_for_the_peer_and_version_not_its_address(tmp_path: Path) -> None:
    run = write_gate_run(tmp_path)
    assert run.name.endswith("-rocketmq-5.5.0"), run.name
    page = (run / "report.html").read_text(encoding="utf-8")
    heading = page[page.index("<h1"):page.index("</h1>")]
    assert "Apache RocketMQ 5.5.0" in heading and "remoting://" not in heading
    assert "<title>PASS — Apache RocketMQ 5.5.0" in page
    details = page[page.index('id="details"'):]
    assert SERVED_AT in details[:details.index("</p>")], "the address a gate reached the broker at is a detail"
    suite = ET.fromstring((run / "junit.xml").read_bytes())
    assert suite.get("name") == "mqtck conform Apache RocketMQ 5.5.0"


def test_gate_hands_conform_the_peers_name_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.commands import conform, gate
    from conformance.peers import maven, serving

    @contextlib.contextmanager
    def served(info: object, **_: object) -> Iterator[str]:
        yield SERVED_AT

    seen: list[ConformOptions] = []
    monkeypatch.setattr(maven, "server_classpath", lambda kind, version, **_: [])
    monkeypatch.setattr(serving, "served", served)
    monkeypatch.setattr(conform, "conform", lambda options: seen.append(options) or 0)
    args = argparse.Namespace(name="rocketmq-4.9.7", report_dir="reports", junit=None, only=None, workers=1,
                              json=False, slow=False, no_expect=False)
    assert gate.run(args) == 0
    assert (seen[0].target, seen[0].implementation, seen[0].title) == (
        SERVED_AT, "rocketmq-4.9.7", "Apache RocketMQ 4.9.7")
    assert run_name(seen[0]) == "rocketmq-4.9.7"


@pytest.mark.parametrize(("target", "implementation", "named"), [
    ("remoting://127.0.0.1:52411?control=127.0.0.1:52412", None, "remoting"),
    ("http://127.0.0.1:18080", None, "http"),
    ("reference", None, "reference"),
    ("mutant:hold-ignore-deadline", None, "mutant:hold-ignore-deadline"),
    ("http://127.0.0.1:18080", "reference over HTTP", "reference over HTTP"),
])
def test_a_run_folder_is_never_named_after_a_port(target: str, implementation: str | None, named: str) -> None:
    assert run_name(ConformOptions(target=target, implementation=implementation)) == named


def _doc(statuses: dict[str, tuple[str, bool | None]]) -> dict:  # type: ignore[type-arg]
    """A summary's requirements: ID -> (status, None without an expectation, else whether it is intermittent)."""
    return {"requirements": [
        {"id": rid, "status": status,
         "expectation": None if intermittent is None else {"reason": "r", "intermittent": intermittent}}
        for rid, (status, intermittent) in statuses.items()]}


def test_the_header_keeps_reviewed_deviations_apart_from_failures() -> None:
    six = {f"X-{n}": ("expected-fail", False) for n in range(6)}
    assert report.tally(_doc({"A-1": ("pass", None), **six})) == ["0 failed", "6 expected fails"]
    shaky = {"P-1": ("pass", True), "P-2": ("expected-fail", True), "F-1": ("fail", None),
             "S-1": ("unexpected-pass", False)}
    assert report.tally(_doc(shaky)) == ["1 failed", "0 expected fails", "2 intermittent (1 shown this run)",
                                         "1 unexpected pass"]


def test_the_header_of_a_gate_with_expected_fails_says_pass_and_none_failed(tmp_path: Path) -> None:
    entries = expectations.load(PEER).entries.values()
    steady, shaky = sum(not e.intermittent for e in entries), sum(e.intermittent for e in entries)
    assert steady and shaky >= 3, "the synthetic gate passes two intermittent deviations and shows the others"
    page = (write_gate_run(tmp_path) / "report.html").read_text(encoding="utf-8")
    tally = page[page.index('id="tally"'):]
    tally = tally[:tally.index("</p>")]
    assert f"PASS</b> · 0 failed · {steady} expected fails · {shaky} intermittent ({shaky - 2} shown this run)" in tally
    assert " failed<" not in page[page.index('id="counts"'):page.index('id="details"')], "no bare 'N failed'"


@pytest.mark.parametrize(("call", "words"), [
    ("advance(5001) -> None", "advance the clock 5001 ms (no answer)"),
    ("ack('G', 'T', 'h1') -> None", "acknowledge 'G', 'T', 'h1' (no answer)"),
    ("start_pull('G', 'T', 0, 0) -> (pending)", "start a pull of 'G', 'T', 0, 0 (still unanswered when the test "
                                                "failed)"),
    ("min_max('T', 0) -> (0, 5)", "ask the min and max offsets of 'T', 0: answered (0, 5)"),
    ("pop('G') -> raised TimeoutError: no answer", "pop from 'G': raised TimeoutError: no answer"),
    ("not a call", "not a call"),
])
def test_a_failures_last_request_reads_as_words(call: str, words: str) -> None:
    assert report.readable_call(call) == words


def test_a_failing_cause_shows_its_last_request_in_words(tmp_path: Path) -> None:
    doc = json.loads((write_gate_run(tmp_path) / "summary.json").read_text(encoding="utf-8"))
    doc["requirements"][0]["status"] = "fail"  # TRACE-1 failed: no deviation of the peer
    doc["requirements"][0]["tests"][0].update(outcome="failed", summary="assert 1 == 2", message="E   assert 1 == 2",
                                              observations=[[report.CALLS, ["advance(5001) -> None"]]])
    page = report.html(doc)
    assert "the last request: advance the clock 5001 ms (no answer)" in page
    assert "advance(5001) -&gt; None" not in page


def test_a_histogram_of_equal_values_says_so_and_a_spread_one_labels_its_ends() -> None:
    same = plots.histogram_svg([0.0] * 8, "ms")
    assert "every value 0 ms" in same and same.count("<rect") == 1 and ">8<" in same
    spread = plots.histogram_svg([0.5, 3.0, 12.5], "ms")
    assert ">0.5 ms</text>" in spread and ">12.5 ms</text>" in spread and spread.count("<rect") == 12


def test_the_console_counts_the_seeded_faults_time_apart_from_the_suites() -> None:
    assert report.took({"duration_s": 21.46}) == "21.5 s"
    with_mutants = {"duration_s": 21.46, "mutants": {"duration_s": 303.2}}
    assert report.took(with_mutants) == "21.5 s (suite) + 5 min 3 s (mutants)"
    assert report.seconds_text(3725) == "1 h 2 min"


def test_a_test_that_ran_but_whose_race_did_not_happen_leaves_its_requirement_not_applicable() -> None:
    why = "not applicable: no change of invisible time landed in its pop's millisecond in 20 tries: the case PACK-9 " \
          "is about did not arise"
    ran = report.TestResult("t::test_pack_9", ["PACK-9"], "skipped", 1.0, why, why)
    vs = {v.id: v for v in report.verdicts([ran])}
    assert vs["PACK-9"].status == "not-applicable", "a test drove it: it is not 'not covered', and was not judged"
    assert vs["PACK-9"].tests[0]["summary"] == why
    unworded = report.TestResult("t::test_pack_9", ["PACK-9"], "skipped", 1.0, "skipped", "skipped")
    assert {v.id: v.status for v in report.verdicts([unworded])}["PACK-9"] == "not-applicable"
    assert {v.id: v.status for v in report.verdicts([])}["PACK-9"] == "not-covered", "no test ran: not covered"


def test_the_pack_9_test_says_not_applicable_when_its_race_never_happened() -> None:
    """The suite's own words for the case: what the report and a reader of the skip see."""
    source = (Path(__file__).resolve().parents[1] / "conformance/suite/test_pop_conformance.py").read_text()
    body = source[source.index("def test_a_change_of_invisible_time_in_the_pops_millisecond_loses_nothing"):]
    assert 'pytest.skip(f"not applicable: no change of invisible time landed' in body[:body.index("collect_")]
