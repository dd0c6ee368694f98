"""The conform report as a reader sees it, in headless Chromium (Debian's, driven by Playwright): the verdict and
the counts first, on a failing run the first cause of failure within the first screen, passing families closed; a
gate's report and the results matrix fit a 1400 px window. Screenshots are kept in ``reports/screenshots/`` (a CI
artifact): ``report-pass.png``, ``report-fail.png``, ``gate-report.png``, ``matrix.png``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.report import matrix
from tests.browser import OVERFLOW, ROOT, VIEWPORT, WIDE, open_page
from tests.synthetic_gate import SERVED_AT, write_gate_run

pytestmark = pytest.mark.slow


def _conform(report_dir: Path, *args: str) -> Path:
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "conform", "--report-dir", str(report_dir),
                             "-n", "2", *args], capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return (report_dir / "latest").resolve()


def _in_first_screen(page, selector: str) -> bool:  # type: ignore[no-untyped-def]
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] + box["height"] <= VIEWPORT["height"]


def test_a_passing_run_opens_with_its_verdict_and_counts_and_is_short(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = _conform(tmp_path, "--mutants", "hold-ignore-deadline", "offset-empty-queue-keeps-offset")
    page = open_page(browser, run / "report.html", "report-pass")
    assert page.locator("h1").inner_text().startswith("PASS")
    assert _in_first_screen(page, "#verdict") and _in_first_screen(page, "#counts")
    counts = json.loads((run / "summary.json").read_text())["counts"]
    assert f"{counts['pass']} pass" in page.locator("#counts").inner_text()
    # Nothing failed: every family is closed, and the seeded faults and measurements come after them.
    assert page.locator("details.family[open]").count() == 0
    assert page.locator("#failures").count() == 0
    order = page.evaluate("[...document.querySelectorAll('h2')].map(h => h.id)")
    assert order.index("requirements") < order.index("mutants"), order
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 4 * VIEWPORT["height"], f"a passing report is {height} px tall"
    page.close()


def test_a_failing_run_shows_its_first_cause_on_the_first_screen(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = _conform(tmp_path, "--target", "mutant:hold-ignore-deadline")
    page = open_page(browser, run / "report.html", "report-fail")
    assert page.locator("h1").inner_text().startswith("FAIL")
    assert _in_first_screen(page, ".cause h3")
    first = page.locator(".cause").first.inner_text()
    assert "not answered within timeout" in first and "LPOLL-1" in first and "(MUST)" in first
    assert "last request: " in first, "the request that produced the failing answer is shown with the cause"
    # One cause, every requirement it breaks: the LPOLL test's cause is listed once, not once per requirement.
    tests = page.locator(".cause").evaluate_all("els => els.map(e => e.querySelector('p code').textContent)")
    assert tests and len(tests) == len(set(tests)), tests
    # Families with a failure are open; the traceback waits behind a click.
    assert page.locator("details.family[open]").count() >= 1
    assert not page.locator(".cause pre").first.is_visible()
    page.close()


def test_a_gate_report_named_for_the_peer_fits_1400_px_with_expected_fails_apart(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A gate's report (from a synthetic gate run of rocketmq-5.5.0: no broker) at the 1400 px window its deviations
    table was once cut off in. Screenshot: ``reports/screenshots/gate-report.png``."""
    run = write_gate_run(tmp_path)
    page = open_page(browser, run / "report.html", "gate-report", WIDE)
    assert page.evaluate(OVERFLOW) <= 0, "the page runs past a 1400 px window"
    repro = page.locator("table.deviations tr td:last-child").first.bounding_box()
    assert repro is not None and repro["x"] + repro["width"] <= WIDE["width"], "the repro column is cut off"
    assert page.locator("h1").inner_text() == "PASS — Apache RocketMQ 5.5.0"
    assert page.title().startswith("PASS — Apache RocketMQ 5.5.0")
    tally = page.locator("#tally").inner_text()
    assert tally.startswith("PASS · 0 failed · ") and "expected fails" in tally and "intermittent" in tally, tally
    assert _in_first_screen(page, "#tally") and _in_first_screen(page, "#details")
    assert SERVED_AT in page.locator("#details").inner_text(), "the address is a detail, under the heading"
    page.close()


def test_the_results_matrix_fits_1400_px_with_its_header_over_its_columns(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``mqtck matrix``'s page of docs/matrix/matrix.json (sixteen implementations) at 1400 px: nothing runs past the
    window, and each implementation's header sits over its column. Screenshot: ``reports/screenshots/matrix.png``."""
    model = json.loads((ROOT / "docs" / "matrix" / "matrix.json").read_text(encoding="utf-8"))
    (tmp_path / "index.html").write_text(matrix.html(model), encoding="utf-8")
    page = open_page(browser, tmp_path / "index.html", "matrix", WIDE)
    assert page.evaluate(OVERFLOW) <= 0, "the matrix runs past a 1400 px window"
    heads = page.locator(".head > div").evaluate_all("es => es.slice(2).map(e => e.getBoundingClientRect().x)")
    cells = page.locator("table.grid tr").first.locator("td.c").evaluate_all(
        "es => es.map(e => e.getBoundingClientRect().x)")
    assert len(heads) == len(model["columns"]) == len(cells)
    assert all(abs(h - c) <= 2 for h, c in zip(heads, cells, strict=True)), (heads, cells)
    page.close()
