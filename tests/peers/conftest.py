"""Tests against real Apache peers started here (JVMs from Maven Central): run by ``tox -e peers``, which
sets ``MQTCK_PEERS=1``; elsewhere they say where they run instead of starting JVMs inside the unit-test budget."""

from __future__ import annotations

import os

import pytest

#: The environment variable that lets these tests start real peers.
PEERS_ENV = "MQTCK_PEERS"


#: The order tox's two workers take these files in (``--dist loadfile --no-loadscope-reorder``: a file at a time,
#: each worker holding at most two tests ahead), longest first. Measured: the Java push and Go consumers' gates
#: 270 s, the lite-pull consumer's 92 s, the ACL comparisons 8 s (RocketMQ's cases) and 41 s (the Java client's),
#: the recorded deployments 129 s, the recorder bench 13 s. The first worker runs the two gates and then
#: RocketMQ's ACL cases; the second the lite-pull gate, the Java client's ACL, the deployments and the bench: 278 s
#: in all. (With the three gates in one file, that file took 364 s, the other worker idle for the last 120 s.)
#: Issue 38/39 added the RocketMQ 5 clients' gates (about 150 s with the Go build), the Pulsar standalone's tests
#: (70-114 s) and the recorded Pulsar run (36-85 s): placed by length among them. The proxy's files run in the
#: gate-v5 lane (tox.ini).
#: Files not named here run last.
FIRST = ("test_client_peers.py", "test_v5_client_peers.py", "test_client_lite_pull.py", "test_pulsar_peer.py",
         "test_e2e_recorded.py", "test_pulsar_recorded.py", "test_acl_rocketmq.py",
         "test_acl_java_client.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(PEERS_ENV) == "1":
        items.sort(key=lambda item: FIRST.index(item.path.name) if item.path.name in FIRST else len(FIRST))
        return
    skip = pytest.mark.skip(reason=f"starts real Apache peers: runs in tox -e peers ({PEERS_ENV}=1)")
    for item in items:
        if item.path.parent.name == "peers":
            item.add_marker(skip)
