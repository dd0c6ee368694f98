"""Fixtures of the conformance suite: a fresh target per test, and capability gating."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from conformance.report import CALLS as CALLS_OBSERVATION
from conformance.suite.calls import RecordedTarget
from conformance.suite.support import Settings
from conformance.targets import SettingsTarget, Target
from conformance.targets.registry import open_target

NOT_APPLICABLE = "not applicable: target lacks capability"
#: Capabilities of the tests that run late. A RocketMQ broker's clean service first runs 60 s after the broker
#: starts, so retention tests that come after a minute of other tests never wait for it; a restart starts that
#: minute again, so restarts come last, and of those first the one that also needs retention. A manual delete
#: request goes on forcing deletions for 20 clean runs: its test is the last of the retention ones.
RETENTION = frozenset({"retention_expire", "broker_config", "manual_delete"})
RESTARTS = frozenset({"restart", "kill_restart", "torn_restart", "fresh_store"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*capabilities): target capabilities the test requires")


def acts_on_the_whole_broker(item: pytest.Item) -> bool:
    """Whether the test restarts the broker, runs its retention or changes its settings: it must have the broker
    to itself (``mqtck conform -n N`` runs these after the others, on one worker)."""
    needs = {cap for mark in item.iter_markers("needs") for cap in mark.args}
    return bool(needs & (RETENTION | RESTARTS))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the suite so that a run against a real broker waits as little as it can: other tests, then retention
    (:data:`RETENTION`), then retention with a restart, then restarts (:data:`RESTARTS`); stable within each."""

    def group(item: pytest.Item) -> int:
        needs = {cap for mark in item.iter_markers("needs") for cap in mark.args}
        retention, restart = bool(needs & RETENTION), bool(needs & RESTARTS)
        if "manual_delete" in needs and not restart:
            return 2  # a manual request forces the next 20 clean runs: after the other retention tests
        return [[0, 4], [1, 3]][retention][restart]

    items.sort(key=group)
    phase = config.getoption("--mqtck-phase", default="all")
    if phase != "all":
        keep = [item for item in items if acts_on_the_whole_broker(item) == (phase == "exclusive")]
        dropped = [item for item in items if item not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


@pytest.fixture
def slow(request: pytest.FixtureRequest) -> bool:
    """Whether the run is in the slow profile (``mqtck conform --slow``): wait as long as a real broker with its
    defaults needs, where a test would otherwise say not applicable past its usual cap."""
    return bool(request.config.getoption("--mqtck-slow", default=False))


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    spec = request.config.getoption("--mqtck-target", default="reference") or "reference"
    t = open_target(spec, str(tmp_path / "target"))
    missing = sorted(
        cap for mark in request.node.iter_markers("needs") for cap in mark.args if cap not in t.capabilities
    )
    if missing:
        # A target may say why it lacks a capability (``why_lacking``: the grpc:// target's remoting-only families).
        why: dict[str, str] = getattr(t, "why_lacking", {})
        reasons = "; ".join(dict.fromkeys(why[cap] for cap in missing if cap in why))
        t.close()
        pytest.skip(f"{NOT_APPLICABLE} {', '.join(missing)}" + (f" ({reasons})" if reasons else ""))
    recorded = RecordedTarget(t)
    request.node.stash[CALLS] = recorded.calls
    yield recorded
    t.close()


@pytest.fixture
def settings(target: SettingsTarget) -> Iterator[Settings]:
    """``settings(name=value, ...)`` changes broker settings (RocketMQ's names, capability ``broker_config``); each
    is put back afterwards."""
    saved: dict[str, Any] = {}

    def change(**values: Any) -> None:
        previous = target.configure(values)
        for name, value in previous.items():
            saved.setdefault(name, value)

    yield change
    if saved:
        target.configure(saved)


#: Where the ``target`` fixture leaves a test's calls for :func:`pytest_runtest_makereport`.
CALLS = pytest.StashKey[Any]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """A failed test's report carries its last calls on the target (``calls``), for the report's cause block."""
    outcome = yield
    report = outcome.get_result()
    calls = item.stash.get(CALLS, None)
    if report.when == "call" and report.failed and calls:
        report.user_properties.append((CALLS_OBSERVATION, [str(c) for c in calls]))
