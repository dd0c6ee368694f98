"""Tests against real Apache peers started here (JVMs from Maven Central): run by ``tox -e gate-rocketmq``, which
sets ``MQTCK_PEERS=1``; elsewhere they say where they run instead of starting JVMs inside the unit-test budget."""

from __future__ import annotations

import os

import pytest

#: The environment variable that lets these tests start real peers.
PEERS_ENV = "MQTCK_PEERS"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(PEERS_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"starts real Apache peers: runs in tox -e gate-rocketmq ({PEERS_ENV}=1)")
    for item in items:
        if item.path.parent.name == "peers":
            item.add_marker(skip)
