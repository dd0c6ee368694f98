"""mqadmin 4.9.7 (rocketmq-tools from Maven Central) runs its daily commands against the reference broker (issue 41):
each is OK, or refused with a code and a remark naming what the reference does not keep; never a success that
changed nothing, never "request code N not supported". The broker's log at ``--log-level info`` has a line per
connection and per refused request."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.peers.mqadmin import MqAdmin
from conformance.peers.mqadmin_daily import (
    OK,
    REFUSED,
    WRONG,
    Scene,
    Verdict,
    prepare_topic,
    run_daily,
    run_patiently,
)
from conformance.peers.mqadmin_members import GroupMembers
from conformance.targets.launch import LaunchedBroker, launch_broker
from conformance.targets.remoting import discover_broker

#: What the reference refuses by design, each with the words its remark must contain.
REFUSED_BY_DESIGN = {"updateBrokerConfig": "fixed when it starts", "consumerStatus": "GET_CONSUMER_RUNNING_INFO"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LaunchedBroker, Path]]:
    base = tmp_path_factory.mktemp("mqadmin-daily")
    log = base / "broker.log"
    with log.open("w") as stderr:
        reference = launch_broker("remoting", base / "data", "--log-level", "info", stderr=stderr)
        try:
            yield reference, log
        finally:
            reference.stop()


@pytest.fixture(scope="module")
def verdicts(served: tuple[LaunchedBroker, Path], tmp_path_factory: pytest.TempPathFactory) -> list[Verdict]:
    reference, _log = served
    namesrv = reference.address.removeprefix("remoting://").partition("?")[0]
    broker = discover_broker(namesrv)
    admin = MqAdmin(namesrv, tmp_path_factory.mktemp("mqadmin-home"))
    scene = Scene(broker, "broker-a", "DefaultCluster", "DailyTopic", "DailyGroup", "DailyProducers", "daily-key")
    prepare_topic(admin, scene)
    members = GroupMembers(broker, scene.topic, scene.group, scene.producer_group)
    try:
        members.start()
        members.commit(0, 0)
        first = run_patiently(admin, "queryMsgByOffset", "-t", scene.topic, "-b", scene.broker_name, "-i", "0",
                              "-o", "0")
        found = re.search(r"OffsetID:\s+(\S+)", first.output)
        assert found is not None, "queryMsgByOffset printed no OffsetID for the prepared message"
        scene.offset_msg_id = found[1]
        return run_daily(admin, scene)
    finally:
        members.close()


def test_every_daily_command_is_ok_or_clearly_refused(verdicts: list[Verdict]) -> None:
    table = "\n".join(f"{v.command:22} {v.verdict:8} {v.why}" for v in verdicts)
    wrong = [v for v in verdicts if v.verdict == WRONG]
    assert not wrong, f"commands answered wrongly:\n{table}"
    for verdict in verdicts:
        if verdict.command in REFUSED_BY_DESIGN:
            assert verdict.verdict == REFUSED and REFUSED_BY_DESIGN[verdict.command] in verdict.why, table
    assert sum(v.verdict == OK for v in verdicts) >= len(verdicts) - len(REFUSED_BY_DESIGN), table


def test_the_server_log_has_connections_and_refusals(
        served: tuple[LaunchedBroker, Path], verdicts: list[Verdict]) -> None:
    _reference, log = served
    text = log.read_text(encoding="utf-8")
    assert re.search(r"mqtck broker: INFO remoting \S+: connected", text), text[-2000:]
    assert re.search(r"request code 307 refused \(1\): the reference broker does not relay", text), text[-2000:]


def test_mqadmin_runs_by_name_and_version(tmp_path: Path) -> None:
    """Without a name server to talk to, mqadmin still starts from Maven's classpath and prints its help."""
    admin = MqAdmin("127.0.0.1:1", tmp_path)
    run = subprocess.run([admin.java, "-cp", admin.classpath, "org.apache.rocketmq.tools.command.MQAdminStartup"],
                         capture_output=True, text=True, timeout=120, check=False,
                         env={"ROCKETMQ_HOME": str(admin.home), "PATH": "/usr/bin:/bin"})
    assert "clusterList" in run.stdout and "queryMsgByUniqueKey" in run.stdout
