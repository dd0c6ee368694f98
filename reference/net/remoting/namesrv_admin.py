"""The name server's admin requests (mqadmin): cluster info, the topic list, a topic's removal, its settings.

One broker serves every topic, so the name server's answers are that broker's: GET_BROKER_CLUSTER_INFO (106,
``clusterList`` and every ``-c CLUSTER`` option) names it in its one cluster; GET_ALL_TOPIC_LIST_FROM_NAMESERVER
(206, ``topicList``, ``statsAll``) lists the topics its store holds; DELETE_TOPIC_IN_NAMESRV (216, the second
half of ``deleteTopic``) has nothing of its own to forget, because routes are read from the broker's store,
which DELETE_TOPIC_IN_BROKER has already emptied, so it answers what is true: the route is gone if the broker's
topic is; GET_NAMESRV_CONFIG (319) is the few settings this name server has, as ``key=value`` lines.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.broker.broker import Broker
from reference.net.remoting.command import RemotingCommand, RequestCode, encode_body
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fields import field_str
from reference.rules.codes import ResponseCode

CLUSTER_NAME = "DefaultCluster"
#: brokerAddrs key of the master (broker id 0).
MASTER_ID = "0"

Handler = Callable[[RemotingConnection, RemotingCommand], RemotingCommand]


def properties_text(settings: dict[str, object]) -> bytes:
    """Settings as Java's ``MixAll.properties2String`` writes them: one ``key=value`` line each."""
    return "".join(f"{k}={v}\n" for k, v in settings.items()).encode("utf-8")


class NameServerAdmin:
    """The name server's admin table over the one ``broker`` at ``broker_addr``."""

    def __init__(self, broker: Callable[[], Broker], broker_addr: str, queue_nums: int) -> None:
        self._broker = broker
        self.broker_addr = broker_addr
        self.queue_nums = queue_nums

    def table(self) -> dict[int, Handler]:
        return {RequestCode.GET_BROKER_CLUSTER_INFO: self.cluster_info,
                RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.topic_list,
                RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
                RequestCode.GET_NAMESRV_CONFIG: self.config}

    def cluster_info(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        name = self._broker().config.broker_name
        return cmd.make_response(body=encode_body({
            "brokerAddrTable": {name: {"cluster": CLUSTER_NAME, "brokerName": name,
                                       "brokerAddrs": {MASTER_ID: self.broker_addr}}},
            "clusterAddrTable": {CLUSTER_NAME: [name]}}))

    def topic_list(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=encode_body({"topicList": sorted(self._broker().store.topics())}))

    def delete_topic(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic = field_str(cmd, "topic")
        if topic in self._broker().store.topics():
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"topic {topic!r} is still on the broker: routes are "
                                     "the broker's topics, delete it there first (DELETE_TOPIC_IN_BROKER)")
        return cmd.make_response()

    def config(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=properties_text({
            "clusterName": CLUSTER_NAME, "autoCreateTopicEnable": "true",
            "defaultTopicQueueNums": self.queue_nums, "brokerAddr": self.broker_addr}))
