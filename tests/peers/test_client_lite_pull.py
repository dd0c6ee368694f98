"""The Java lite-pull consumer (rocketmq-client 4.9.8) through the client check, as ``mqtck gate`` runs it: the test
of tests/peers/test_client_peers.py, in a file of its own so that tox's two workers (a file at a time) share the
three consumers' gates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers.test_client_peers import OWN_FILE, assert_gate_verdicts


@pytest.mark.req("CCLIENT-1", "CCLIENT-2", "CCLIENT-3", "CCLIENT-4", "CCLIENT-5", "CCLIENT-6", "CCLIENT-7",
                 "CCLIENT-8", "CCLIENT-9")
def test_the_lite_pull_consumers_verdicts(tmp_path: Path) -> None:
    assert_gate_verdicts(OWN_FILE, tmp_path)
