"""Fixtures shared by the tests under ``tests/``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.browser import CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's chromium under Playwright; not applicable where there is none."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("not applicable: no chromium on PATH (tox -e ci installs Debian's: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
