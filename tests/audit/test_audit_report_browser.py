"""The audit report as a reader sees it, in headless Chromium: each ownership row says which group and queue it
is, each bar which client owns it, red means an overlap and nothing else, no label covers another, owners at
once are drawn one above the other; bad rows without a run are not a phantom run, and no chart is drawn
empty; the findings come first, as a table that fits a 1400 px window. Screenshots:
``reports/screenshots/audit-*.png``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.audit.svg import ALERT
from conformance.audit.synth import synthesize
from tests.browser import OVERFLOW, WIDE, open_page

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"

#: The boxes of the ownership chart's elements matching a selector, as drawn (page coordinates).
BOXES = """(svg, selector) => [...svg.querySelectorAll(selector)].map(e => {
  const b = e.getBoundingClientRect(); return {text: e.textContent, x: b.x, y: b.y, w: b.width, h: b.height};
})"""


def _boxes(page, selector: str) -> list[dict]:  # type: ignore[no-untyped-def,type-arg]
    return page.locator("svg:has(text.queue)").first.evaluate(BOXES, selector)  # type: ignore[no-any-return]


def _texts(locator) -> list[str]:  # type: ignore[no-untyped-def]
    """The visible text of SVG text elements (their first text node: a tooltip's title is a child too)."""
    return locator.evaluate_all("es => es.map(e => e.firstChild.textContent)")  # type: ignore[no-any-return]


def _overlap(a: dict, b: dict) -> bool:  # type: ignore[type-arg]
    return a["x"] < b["x"] + b["w"] - 0.5 and b["x"] < a["x"] + a["w"] - 0.5 and \
        a["y"] < b["y"] + b["h"] - 0.5 and b["y"] < a["y"] + a["h"] - 0.5


def test_the_ownership_timeline_says_who_owns_which_queue_and_where_they_overlap(spark, browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from conformance.audit.job import run_audit

    trace = tmp_path / "trace"
    synthesize(trace, 20_000, seed=3, inject={"ownership-overlap": 2, "lost": 1})
    run_audit(trace, tmp_path / "report")
    page = open_page(browser, tmp_path / "report" / "report.html", "audit-ownership")
    chart = page.locator("svg:has(text.queue)").first
    labels = _texts(chart.locator("text.queue"))
    assert len(labels) > 1 and len(set(labels)) == len(labels), f"rows labelled alike: {labels}"
    assert all("·" in label and "/" in label for label in labels), labels  # group · broker/queue
    # Red is the overlap's outline and nothing else: no bar is filled red, each overlap has the red outline.
    fills = chart.locator("rect.span").evaluate_all("rs => rs.map(r => r.getAttribute('fill'))")
    assert ALERT not in fills
    overlaps = chart.locator("rect.overlap").evaluate_all("rs => rs.map(r => r.getAttribute('stroke'))")
    assert len(overlaps) >= 2 and set(overlaps) == {ALERT}
    assert "overlaps another client" in _texts(chart.locator("text.legend"))[-1]
    # Every bar wide enough carries its client's name; the names and the queue labels never cover each other.
    assert chart.locator("text.client").count() > len(labels)
    texts = _boxes(page, "text")
    clashes = [(a["text"], b["text"]) for i, a in enumerate(texts) for b in texts[i + 1:] if _overlap(a, b)]
    assert not clashes, clashes
    # Owners at once beyond the window are drawn one above the other: no such bar covers another. (Handovers
    # within the window overlap by a few pixels; that is allowed, REBAL-2.)
    bars = _boxes(page, "rect.overlap")
    covered = [(a["text"], b["text"]) for i, a in enumerate(bars) for b in bars[i + 1:] if _overlap(a, b)]
    assert not covered, covered
    page.close()


def test_rows_without_a_run_are_no_phantom_run_and_no_chart_is_empty(spark, browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from conformance.audit.job import run_audit

    run_audit(FIXTURES / "malformed.jsonl", tmp_path / "report")
    page = open_page(browser, tmp_path / "report" / "report.html", "audit-bad-rows")
    headings = page.locator("h2").all_inner_texts()
    assert "Rows that name no run" in headings and not any("(no run)" in h for h in headings), headings
    whens = page.locator("table.findings td.when").all_inner_texts()
    assert whens and not any("µs" in w for w in whens), whens
    whats = page.locator("table.findings td:nth-child(2)").all_inner_texts()
    assert any("not a JSON object" in w for w in whats), whats  # a bad row says why it is bad
    assert "no data" not in _texts(page.locator("svg text"))
    page.close()


def test_the_findings_come_first_as_a_table_that_fits_1400_px(spark, browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A trace with a lost message, overlapping owners and an unexplained duplicate, audited: the findings table is
    on the first screen of a 1400 px window, nothing runs past it, a time is from the run's start, the lost
    message's client is never an empty name, and the rows behind a finding wait for a click. Screenshot:
    ``reports/screenshots/audit-findings.png``."""
    from conformance.audit.job import run_audit

    trace = tmp_path / "trace"
    synthesize(trace, 20_000, seed=3, inject={"ownership-overlap": 1, "lost": 1, "duplicate-unknown": 1})
    run_audit(trace, tmp_path / "report")
    page = open_page(browser, tmp_path / "report" / "report.html", "audit-findings", WIDE)
    assert page.evaluate(OVERFLOW) <= 0, "the audit report runs past a 1400 px window"
    box = page.locator("table.findings tr").nth(1).bounding_box()
    assert box is not None and box["y"] + box["height"] <= WIDE["height"], "the first finding is below the fold"
    headings = page.locator("h2").all_inner_texts()
    assert headings.index("Findings") < headings.index("Totals"), headings
    rows = page.locator("table.findings tr:has(td)").evaluate_all(
        "trs => trs.map(tr => [...tr.children].map(td => td.innerText.trim()))")
    assert {"lost", "duplicate-unknown"} <= {row[1].split(" ")[0] for row in rows}, rows
    assert all(row[0].startswith("+") and row[0].endswith((" s", " ms")) for row in rows), rows
    lost = next(row for row in rows if row[1] == "lost")
    assert lost[3].startswith("— (clustering: the group's to consume"), lost
    assert not page.locator("table.findings pre").first.is_visible(), "the trace rows wait behind a click"
    page.close()
