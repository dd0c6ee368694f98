"""How mqadmin's printed output is judged (conformance.peers.mqadmin_daily), without a JVM: the peers test
(tests/peers/test_mqadmin_daily.py) trusts these verdicts, so a refusal must never pass for OK, nor a bare
"not supported" or a refusal of what exists for a clear refusal."""

from __future__ import annotations

from conformance.peers.mqadmin import AdminRun
from conformance.peers.mqadmin_daily import DAILY, OK, REFUSED, WRONG, Scene, judge

SCENE = Scene("127.0.0.1:10911", "broker-a", "DefaultCluster", "T", "G", "PG", "K", "UNIQ", "OFFSETID")
BY_NAME = {d.name: d for d in DAILY}


def run(stdout: str) -> AdminRun:
    return AdminRun(("x",), 0, stdout, "")


def test_there_are_thirty_one_daily_commands() -> None:
    assert len(DAILY) == 31 == len(BY_NAME)


def test_a_refusal_with_a_remark_is_refused_and_a_bare_not_supported_is_wrong() -> None:
    refused = run("org.apache.rocketmq.client.exception.MQBrokerException: CODE: 1  DESC: settings are fixed\n")
    assert judge(BY_NAME["updateBrokerConfig"], refused, SCENE, None).verdict == REFUSED
    unsupported = run("MQBrokerException: CODE: 3  DESC: request code 25 not supported\n")
    assert judge(BY_NAME["updateBrokerConfig"], unsupported, SCENE, None).verdict == WRONG


def test_a_refusal_of_what_exists_is_wrong() -> None:
    nothing = run("MQClientException: CODE: 208  DESC: query message by key finished, but no message.\n")
    assert judge(BY_NAME["queryMsgByKey"], nothing, SCENE, None).verdict == WRONG


def test_success_is_ok_only_with_its_output_and_its_effect() -> None:
    printed = run("create topic to 127.0.0.1:10911 success.\n")
    assert judge(BY_NAME["updateTopicPerm"], printed, SCENE, None).verdict == OK
    no_effect = judge(BY_NAME["updateTopicPerm"], printed, SCENE, "topicRoute still shows perm 6")
    assert no_effect.verdict == WRONG and "perm 6" in no_effect.why
    assert judge(BY_NAME["clusterList"], run("#Cluster Name\n"), SCENE, None).verdict == WRONG
    assert judge(BY_NAME["clusterList"], run("DefaultCluster  broker-a  0\n"), SCENE, None).verdict == OK
