"""The Java client's own signing (rocketmq-client and rocketmq-acl 4.9.8 from Maven Central, AclClientRPCHook)
against the reference's ACL 1.0 and against Apache RocketMQ 4.9.7's (issue 20, access control): ``AclProbe.java``
sends, sends batches and lite-pulls with an account's keys, and both brokers must answer every case alike, but for
the reviewed deviation of 4.9.7 (ACL-4: it checks no batch). With a wrong secret both refuse everything."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.expectations import load
from conformance.peers import peer_info
from conformance.peers.java import java_program
from conformance.peers.maven import app_client_classpath
from conformance.peers.rocketmq import RocketMQPeer
from conformance.targets.launch import launch_broker
from conformance.targets.remoting import discover_broker
from tests.acl_cases import ACL_FILE, prepare

PEER = "rocketmq-4.9.7"
CLIENT_VERSION = "4.9.8"
PROBE = Path(__file__).resolve().parent / "AclProbe.java"
#: The probe's cases that need the permission ACL-4 adds (RocketMQ 4.9.7 checks no SEND_BATCH_MESSAGE).
BATCH_CASE = "batch to a DENY topic"


#: How long the probe's lite-pull consumer looks for the message when its keys are refused before it says "nothing".
#: With good keys the whole probe, JVM start and both brokers included, takes about 10 s; the probe's own default is
#: 30 s, which the refused run waited out against each broker.
REFUSED_WAIT_MS = 10_000


def probe(namesrv: str, access_key: str, secret_key: str, home: Path, wait_ms: int | None = None) -> dict[str, str]:
    program = java_program(PROBE, app_client_classpath(CLIENT_VERSION), "the ACL probe")
    wait = [] if wait_ms is None else [str(wait_ms)]
    run = subprocess.run(["java", f"-Duser.home={home}", *program, namesrv, access_key, secret_key, *wait],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return {row["case"]: row["outcome"] for row in map(json.loads, run.stdout.splitlines())}


@pytest.fixture(scope="module")
def namesrvs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    reference = launch_broker("remoting", tmp_path_factory.mktemp("acl-java") / "data", "--acl", str(ACL_FILE))
    try:
        prepare(discover_broker(reference.address))
        with RocketMQPeer(peer_info(PEER), acl_file=ACL_FILE) as peer:
            prepare(peer.broker_address)
            yield {"reference": reference.address, PEER: peer.target.removeprefix("remoting://")}
    finally:
        reference.stop()


@pytest.mark.req("ACL-1", "ACL-2", "ACL-4")
def test_the_java_clients_signed_requests_are_judged_as_rocketmq_judges_them(
        namesrvs: dict[str, str], tmp_path: Path) -> None:
    ours = probe(namesrvs["reference"], "mqtckUser", "mqtckUserSecret", tmp_path / "ours")
    real = probe(namesrvs[PEER], "mqtckUser", "mqtckUserSecret", tmp_path / "real")
    assert ours["send"] == real["send"] == "SEND_OK"
    assert ours["lite pull"] == real["lite pull"] == "received", "a signed lite-pull consumer reads"
    assert ours["batch with PUB"] == real["batch with PUB"] == "SEND_OK"
    assert ours["send to a DENY topic"] == real["send to a DENY topic"] != "SEND_OK"
    assert ours[BATCH_CASE] != "SEND_OK", "the reference checks a batch (ACL-4)"
    assert "ACL-4" in load(PEER).entries and real[BATCH_CASE] == "SEND_OK", \
        "4.9.7 lets a denied batch through, as its expectation says; if it no longer does, remove the entry"


def test_a_wrong_secret_is_refused_everything_by_both(namesrvs: dict[str, str], tmp_path: Path) -> None:
    for name, namesrv in namesrvs.items():
        outcomes = probe(namesrv, "mqtckUser", "wrongSecret", tmp_path / name, REFUSED_WAIT_MS)
        assert outcomes["lite pull"] == "nothing", (name, outcomes)
        assert all(o != "SEND_OK" for case, o in outcomes.items() if case != "lite pull"), (name, outcomes)
