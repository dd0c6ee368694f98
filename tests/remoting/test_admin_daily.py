"""The admin requests behind mqadmin's daily commands (issue 41 part B), on the real servers over loopback.

Each answer is checked against what the broker holds: a statistic against the messages sent and the offsets
committed, a change (offsets reset, a subscription group) by reading it back, a query by key against the
message's own keys and unique id; and what the reference does not keep is refused with a remark naming it, never
answered as a success."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.net.remoting.message_codec import decode_records
from reference.rules.codes import ResponseCode
from tests.remoting.conftest import ServerThread

TOPIC, GROUP = "AdminTopic", "AdminGroup"
MQ0 = '{"brokerName":"broker-a","queueId":0,"topic":"AdminTopic"}'


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[tuple[RemotingClient, RemotingClient]]:
    with ServerThread(tmp_path / "data") as server:
        namesrv = RemotingClient("{}:{}".format(*server.namesrv_addr))
        broker = RemotingClient("{}:{}".format(*server.broker_addr))
        try:
            assert broker.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": TOPIC, "readQueueNums": 2}).code == 0
            yield namesrv, broker
        finally:
            namesrv.close()
            broker.close()


def send(broker: RemotingClient, keys: str, uniq: str, queue_id: int = 0) -> None:
    props = f"KEYS\x01{keys}\x02UNIQ_KEY\x01{uniq}\x02"
    answer = broker.invoke(RequestCode.SEND_MESSAGE, {"producerGroup": "P", "topic": TOPIC, "queueId": queue_id,
                                                      "sysFlag": 0, "bornTimestamp": 1, "properties": props},
                           body=b"body")
    assert answer.code == 0, answer.remark


def test_the_name_server_names_the_broker_its_topics_and_its_settings(
        wire: tuple[RemotingClient, RemotingClient]) -> None:
    namesrv, _broker = wire
    cluster = json.loads(namesrv.invoke(RequestCode.GET_BROKER_CLUSTER_INFO).body)
    assert cluster["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    assert cluster["brokerAddrTable"]["broker-a"]["brokerAddrs"]["0"].startswith("127.0.0.1:")
    assert TOPIC in json.loads(namesrv.invoke(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)["topicList"]
    assert b"clusterName=DefaultCluster\n" in namesrv.invoke(RequestCode.GET_NAMESRV_CONFIG).body
    # The route is the broker's topic: the name server cannot forget one the broker still has.
    kept = namesrv.invoke(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": TOPIC})
    assert kept.code == ResponseCode.SYSTEM_ERROR and "DELETE_TOPIC_IN_BROKER" in (kept.remark or "")


def test_consume_stats_show_the_lag_of_the_committed_offsets(wire: tuple[RemotingClient, RemotingClient]) -> None:
    _namesrv, broker = wire
    for i in range(3):
        send(broker, f"k{i}", f"u{i}")
    assert broker.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0,
                                                              "commitOffset": 1}).code == 0
    stats = broker.invoke(RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP}).body.decode()
    assert f'{MQ0}:{{"brokerOffset":3,"consumerOffset":1,' in stats
    topic = broker.invoke(RequestCode.GET_TOPIC_STATS_INFO, {"topic": TOPIC}).body.decode()
    assert f'{MQ0}:{{"minOffset":0,"maxOffset":3,' in topic
    assert '"totalDiff":2' in broker.invoke(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"}).body.decode()
    who = json.loads(broker.invoke(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": TOPIC}).body)
    assert who == {"groupList": [GROUP]}
    runtime = json.loads(broker.invoke(RequestCode.GET_BROKER_RUNTIME_INFO).body)["table"]
    assert runtime["msgPutTotalTodayNow"] == "3"


def test_reset_offset_by_time_moves_the_committed_offsets(wire: tuple[RemotingClient, RemotingClient]) -> None:
    _namesrv, broker = wire
    send(broker, "a", "ua")
    send(broker, "b", "ub", queue_id=1)
    answer = broker.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": TOPIC, "group": GROUP, "timestamp": 4102444800000, "isForce": "true"})
    assert answer.code == 0, answer.remark
    for queue_id in (0, 1):
        offset = broker.invoke(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC,
                                                                   "queueId": queue_id})
        assert offset.ext_fields["offset"] == "1"
    # Back to the start without force: never backwards.
    broker.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": TOPIC, "group": GROUP, "timestamp": 0,
                                                              "isForce": "false"})
    offset = broker.invoke(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0})
    assert offset.ext_fields["offset"] == "1"


def test_query_message_finds_by_key_and_by_unique_key(wire: tuple[RemotingClient, RemotingClient]) -> None:
    _namesrv, broker = wire
    send(broker, "order-1 order-2", "uniq-1")
    send(broker, "order-3", "uniq-2", queue_id=1)
    by_key = broker.invoke(RequestCode.QUERY_MESSAGE, {"topic": TOPIC, "key": "order-2", "maxNum": 32,
                                                       "beginTimestamp": 0, "endTimestamp": 2**62})
    assert by_key.code == 0 and [m.msg_id for m in decode_records(by_key.body)] == ["uniq-1"]
    by_unique = broker.invoke(RequestCode.QUERY_MESSAGE, {"topic": TOPIC, "key": "uniq-2", "maxNum": 32,
                                                          "beginTimestamp": 0, "endTimestamp": 2**62,
                                                          "_UNIQUE_KEY_QUERY": "true"})
    assert [m.queue_id for m in decode_records(by_unique.body)] == [1]
    missing = broker.invoke(RequestCode.QUERY_MESSAGE, {"topic": TOPIC, "key": "nothing", "maxNum": 32,
                                                        "beginTimestamp": 0, "endTimestamp": 2**62})
    assert missing.code == ResponseCode.QUERY_NOT_FOUND


def test_subscription_groups_and_producers_are_kept(wire: tuple[RemotingClient, RemotingClient]) -> None:
    _namesrv, broker = wire
    config = {"groupName": "SubG", "retryMaxTimes": 3, "consumeEnable": True}
    assert broker.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=json.dumps(config).encode()).code == 0
    table = json.loads(broker.invoke(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)["subscriptionGroupTable"]
    assert table["SubG"]["retryMaxTimes"] == 3
    assert broker.invoke(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "SubG"}).code == 0
    again = broker.invoke(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "SubG"})
    assert again.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert broker.invoke(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"}).code != 0
    beat = {"clientID": "producer-1", "consumerDataSet": [], "producerDataSet": [{"groupName": "PG"}]}
    assert broker.invoke(RequestCode.HEART_BEAT, body=json.dumps(beat).encode()).code == 0
    online = json.loads(broker.invoke(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"}).body)
    assert [c["clientId"] for c in online["connectionSet"]] == ["producer-1"]


@pytest.mark.parametrize("code", [RequestCode.UPDATE_BROKER_CONFIG, RequestCode.GET_CONSUMER_RUNNING_INFO,
                                  RequestCode.VIEW_BROKER_STATS_DATA])
def test_what_the_reference_does_not_keep_is_refused_by_name_and_logged(
        wire: tuple[RemotingClient, RemotingClient], code: int, caplog: pytest.LogCaptureFixture) -> None:
    _namesrv, broker = wire
    with caplog.at_level(logging.INFO, logger="mqtck.remoting"):
        answer = broker.invoke(code, {"key": "maxMessageSize", "value": "1"})
    assert answer.code == ResponseCode.SYSTEM_ERROR and "reference broker" in (answer.remark or "")
    assert any(f"request code {int(code)} refused" in r.getMessage() for r in caplog.records)
