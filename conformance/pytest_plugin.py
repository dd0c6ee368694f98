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

from conformance import spec


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mqtck")
    group.addoption("--mqtck-target", default="reference", help="conformance target (default: reference)")
    group.addoption("--mqtck-results", default=None, help="write per-test results as JSON Lines here")
    group.addoption(
        "--mqtck-only", default=None, help="comma-separated requirement IDs: run only tests marked with one"
    )
    group.addoption(
        "--mqtck-slow", action="store_true", default=False,
        help="the slow profile: wait as long as a real broker with its defaults needs (a silent channel's "
             "expiry after 120 s), instead of saying not applicable past a test's usual cap",
    )
    group.addoption(
        "--mqtck-phase", default="all", choices=("all", "shared", "exclusive"),
        help="shared: only tests that leave the broker as it is (safe on parallel workers); exclusive: only those "
             "that act on the whole broker (restart, retention, run-time settings); all (default): both",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "req(*ids): requirement IDs this test proves")
    path = config.getoption("--mqtck-results", default=None)
    if path:
        worker = getattr(config, "workerinput", {}).get("workerid")
        if worker is None and config.getoption("numprocesses", default=None):
            return  # an xdist controller: its workers write (it would repeat every test of theirs, without IDs)
        target = Path(f"{path}.{worker}") if worker else Path(path)
        config.pluginmanager.register(_ResultsWriter(target), "mqtck-results")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    only = config.getoption("--mqtck-only", default=None)
    if not only:
        return
    wanted = {x.strip() for x in only.split(",") if x.strip()}
    keep, drop = [], []
    for item in items:
        # A clause marker ("CGRP-6.closed") is selected by its requirement's ID as well as by itself.
        ids = {str(a) for mark in item.iter_markers("req") for a in mark.args}
        ids |= {spec.split_marker(i)[0] for i in ids}
        (keep if ids & wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


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
            # A setup that failed (a fixture: the target's broker did not start, a probe timed out) is an error,
            # not a failure: the test never judged the target, so its requirement is not reported as failed.
            outcome = "error" if report.when == "setup" and report.failed else report.outcome
            text = summary = ""
            if report.skipped and isinstance(report.longrepr, tuple):
                text = summary = str(report.longrepr[2])
            elif report.failed:
                text = report.longreprtext[-4000:]
                crash = getattr(report.longrepr, "reprcrash", None)
                summary = str(getattr(crash, "message", "")) or text.strip().splitlines()[-1:][0]
            self._fh.write(
                json.dumps(
                    {
                        "nodeid": report.nodeid,
                        "reqs": self._reqs.get(report.nodeid, []),
                        "outcome": outcome,
                        "duration": round(report.duration, 6),
                        "message": text,
                        "summary": summary[:1000],
                        # Measurements a test attached with pytest's ``record_property(name, value)``;
                        # the report plots them (wake latencies, allocation balance).
                        "observations": [[k, v] for k, v in report.user_properties],
                    }
                )
                + "\n"
            )
            self._fh.flush()

    def pytest_unconfigure(self) -> None:
        self._fh.close()
