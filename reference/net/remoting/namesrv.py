"""The name server's one request: GET_ROUTEINFO_BY_TOPIC (protocols/rocketmq-remoting.md §4).

One broker serves every topic, so a route is that broker's queues. Topics are created on first lookup
(RocketMQ's ``autoCreateTopicEnable``), because the official clients never create topics themselves and a
test must be able to produce to a topic nobody set up: a group's ``%RETRY%`` topic gets
:data:`~reference.broker.send_back.RETRY_QUEUE_NUMS` queue, any other valid name
:data:`AUTO_CREATE_QUEUE_NUMS`. An invalid name is TOPIC_NOT_EXIST, which the client takes as "no route".
"""

from __future__ import annotations

import logging
from typing import Any

from reference.broker.broker import Broker
from reference.broker.send_back import RETRY_QUEUE_NUMS
from reference.net.remoting.command import RemotingCommand, RequestCode, encode_body
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.namesrv_admin import NameServerAdmin
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest
from reference.rules.topics import is_retry_topic
from reference.store.names import check_name

log = logging.getLogger("mqtck.remoting")
#: Queues of an auto-created topic: the client's DefaultMQProducer.defaultTopicQueueNums (4).
AUTO_CREATE_QUEUE_NUMS = 4
#: QueueData.perm: READ (4) | WRITE (2).
PERM_READ_WRITE = 6
CLUSTER_NAME = "DefaultCluster"
#: brokerAddrs key of the master (broker id 0, as a decimal string).
MASTER_ID = "0"


def route_data(broker_name: str, broker_addr: str, queue_nums: int, perm: int = PERM_READ_WRITE) -> dict[str, Any]:
    """TopicRouteData for a topic served by one master broker (orderTopicConf left null: §4)."""
    return {
        "orderTopicConf": None,
        "queueDatas": [{"brokerName": broker_name, "readQueueNums": queue_nums, "writeQueueNums": queue_nums,
                        "perm": perm, "topicSysFlag": 0}],
        "brokerDatas": [{"cluster": CLUSTER_NAME, "brokerName": broker_name,
                         "brokerAddrs": {MASTER_ID: broker_addr}}],
        "filterServerTable": {},
    }


class NameServer:
    """Request handler of the name-server port. ``broker_addr`` is the broker's ``ip:port`` as clients
    must connect to it."""

    def __init__(self, broker: Broker, broker_addr: str, queue_nums: int = AUTO_CREATE_QUEUE_NUMS) -> None:
        self.broker = broker
        self.broker_addr = broker_addr
        self.queue_nums = queue_nums
        self.admin = NameServerAdmin(lambda: self.broker, broker_addr, queue_nums).table()

    def dispatch(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand | None:
        if cmd.code in self.admin:
            return self.admin[cmd.code](conn, cmd)
        if cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
            log.info("name server %s: request code %s not supported", conn.key, cmd.code)
            return cmd.make_response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request code {cmd.code} not supported by the name server"
            )
        topic = cmd.ext_fields.get("topic", "")
        try:
            check_name(topic, "topic")
        except InvalidRequest as exc:
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info for {topic!r}: {exc}")
        topics = self.broker.store.topics()
        if topic not in topics:
            self.broker.create_topic(topic, RETRY_QUEUE_NUMS if is_retry_topic(topic) else self.queue_nums)
            topics = self.broker.store.topics()
        return cmd.make_response(body=encode_body(route_data(self.broker.config.broker_name, self.broker_addr,
                                                             topics[topic], self.broker.topic_perms.get(topic))))
