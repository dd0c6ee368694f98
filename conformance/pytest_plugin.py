"""pytest plugin (entry point ``pytest11: mqtck``): requirement markers, target choice, results file.

* ``@pytest.mark.req("OFFSET-1", …)`` names the requirements a test proves.
* ``--mqtck-target T`` chooses the implementation the conformance suite drives (default: the
  embedded reference).
* ``--mqtck-results FILE`` writes one JSON object per test (node id, requirement IDs, outcome,
  duration, failure text); ``mqtck conform`` builds its reports from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mqtck")
    group.addoption("--mqtck-target", default="reference", help="conformance target (default: reference)")
    group.addoption("--mqtck-results", default=None, help="write per-test results as JSON Lines here")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "req(*ids): requirement IDs this test proves")
    path = config.getoption("--mqtck-results", default=None)
    if path:
        config.pluginmanager.register(_ResultsWriter(Path(path)), "mqtck-results")


class _ResultsWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("w", encoding="utf-8")
        self._reqs: dict[str, list[str]] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            ids: list[str] = []
            for mark in item.iter_markers("req"):
                ids.extend(str(a) for a in mark.args)
            self._reqs[item.nodeid] = sorted(set(ids))

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # One line per test: the call phase, or setup when it failed / skipped before the call.
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            outcome = report.outcome
            text = ""
            if report.skipped and isinstance(report.longrepr, tuple):
                text = str(report.longrepr[2])
            elif report.failed:
                text = report.longreprtext[-4000:]
            self._fh.write(
                json.dumps(
                    {
                        "nodeid": report.nodeid,
                        "reqs": self._reqs.get(report.nodeid, []),
                        "outcome": outcome,
                        "duration": round(report.duration, 6),
                        "message": text,
                    }
                )
                + "\n"
            )
            self._fh.flush()

    def pytest_unconfigure(self) -> None:
        self._fh.close()
