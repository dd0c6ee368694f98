"""Fixtures of the conformance suite: a fresh target per test, and capability gating."""

from __future__ import annotations

import pytest

from conformance.targets import open_target

NOT_APPLICABLE = "not applicable: target lacks capability"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*capabilities): target capabilities the test requires")


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
