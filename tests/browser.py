"""Headless Chromium for the tests that look at reports as a reader does (Debian's chromium, driven by
Playwright); screenshots go to ``reports/screenshots/`` (a CI artifact)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "reports" / "screenshots"
#: The first screen of a laptop.
VIEWPORT = {"width": 1280, "height": 800}
#: The window the newcomer's report was cut off in (issue 43): a report must fit it without sideways scrolling.
WIDE = {"width": 1400, "height": 800}
#: What the page's width is beyond the window's (0 when nothing runs past its right edge).
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"
#: Chromium as root on a closed network: no sandbox, no GPU, none of its background connections.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


def open_page(browser, report: Path, name: str, viewport: dict[str, int] = VIEWPORT):  # type: ignore[no-untyped-def]
    """A page of ``report`` (an HTML file) at ``viewport`` (a laptop's), its full-page screenshot kept as ``name``."""
    page = browser.new_page(viewport=viewport)
    page.goto(report.as_uri())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    return page
