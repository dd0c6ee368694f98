"""The live members mqadmin's group commands look at: a consumer and a producer, registered by heartbeat.

``consumerConnection``, ``producerConnection``, ``consumerProgress`` and ``resetOffsetByTime`` read a group the
broker knows from its members' heartbeats and committed offsets. :class:`GroupMembers` keeps one connection to
the broker open with a consumer group (subscribed to every tag of one topic, an offset committed on queue 0) and
a producer group, under one client id named after the consumer group, so a command's output can be matched to
them; it heartbeats every :data:`HEARTBEAT_INTERVAL_S`, as the official clients do, so the broker does not expire
the member while a slow run of commands goes on.
"""

from __future__ import annotations

import json
import threading

from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode

#: The official clients' heartbeatBrokerInterval (30 s).
HEARTBEAT_INTERVAL_S = 30.0


class GroupMembers:
    """One connection registering ``group`` (consuming ``topic``) and ``producer_group`` on ``broker_addr``."""

    def __init__(self, broker_addr: str, topic: str, group: str, producer_group: str) -> None:
        self.client = RemotingClient(broker_addr)
        self.topic, self.group, self.producer_group = topic, group, producer_group
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._beat_loop, name="mqadmin-members", daemon=True)

    def start(self) -> None:
        """The first heartbeat now, then one every HEARTBEAT_INTERVAL_S until :meth:`close`."""
        self.heartbeat()
        self._beat.start()

    def _beat_loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_INTERVAL_S):
            try:
                self.heartbeat()
            except (ConnectionError, RuntimeError, TimeoutError):
                return

    def heartbeat(self) -> None:
        body = {"clientID": f"{self.group}_client", "consumerDataSet": [{
            "groupName": self.group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
            "subscriptionDataSet": [{"topic": self.topic, "subString": "*", "subVersion": 1}]}],
            "producerDataSet": [{"groupName": self.producer_group}]}
        answer = self.client.invoke(RequestCode.HEART_BEAT, body=json.dumps(body).encode())
        if answer.code != 0:
            raise RuntimeError(f"heartbeat refused: {answer.code} {answer.remark}")

    def commit(self, queue_id: int, offset: int) -> None:
        answer = self.client.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": self.group, "topic": self.topic, "queueId": queue_id, "commitOffset": offset})
        if answer.code != 0:
            raise RuntimeError(f"offset commit refused: {answer.code} {answer.remark}")

    def close(self) -> None:
        self._stop.set()
        self.client.close()
