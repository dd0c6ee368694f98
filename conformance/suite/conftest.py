"""Fixtures of the conformance suite: a fresh target per test, and capability gating."""

from __future__ import annotations

import pytest

from conformance.targets import open_target

NOT_APPLICABLE = "not applicable: target lacks capability"
#: Tests that need these run after the others, in this order (stable within each group): retention and
#: run-time settings, then restarts. A RocketMQ broker's clean service first runs 60 s after the broker
#: starts, so retention tests that come after a minute of other tests never wait for it; a restart would
#: start that minute again, so restarts come last.
LATE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"retention_expire", "broker_config", "manual_delete"}),
    frozenset({"restart", "kill_restart"}),
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*capabilities): target capabilities the test requires")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the suite so that a run against a real broker waits as little as it can (:data:`LATE_GROUPS`)."""

    def group(item: pytest.Item) -> int:
        needs = {cap for mark in item.iter_markers("needs") for cap in mark.args}
        return max((i + 1 for i, caps in enumerate(LATE_GROUPS) if needs & caps), default=0)

    items.sort(key=group)


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path):  # type: ignore[no-untyped-def]
    spec = request.config.getoption("--mqtck-target", default="reference") or "reference"
    t = open_target(spec, str(tmp_path / "target"))
    missing = sorted(
        cap for mark in request.node.iter_markers("needs") for cap in mark.args if cap not in t.capabilities
    )
    if missing:
        t.close()
        pytest.skip(f"{NOT_APPLICABLE} {', '.join(missing)}")
    yield t
    t.close()
