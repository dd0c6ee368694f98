"""Groups as mqadmin changes and reads them: producers online, subscription groups, offsets reset by time.

GET_PRODUCER_CONNECTION_LIST (204, ``producerConnection``) lists the connections whose last heartbeat named the
producer group (:class:`~reference.net.remoting.producers.ProducerTable`). UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200,
``updateSubGroup``) and DELETE_SUBSCRIPTIONGROUP (207, ``deleteSubGroup``) keep the group's SubscriptionGroupConfig
as sent in the broker's subscription group table (``config/subscriptionGroup.json`` of the data directory), and
GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) shows them, with the groups created on first use. Consumption reads the
table only for whether a group exists (a pop, a heartbeat, the revive: autoCreateSubscriptionGroup); a group's
settings (its retries, consumeEnable) are not read: a group's retries stay the send-back's, which the docs say.
INVOKE_BROKER_TO_RESET_OFFSET (222, ``resetOffsetByTime``) moves the group's committed offset of each queue of
the topic to the first message stored at or after the time (forward always, backward only with ``isForce``), and
answers the new offsets; Apache asks the group's clients to commit them (RESET_CONSUMER_CLIENT_OFFSET), the
reference commits them itself, so the change is visible even with no client online.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.broker.broker import Broker
from reference.net.remoting.command import RemotingCommand, RequestCode, encode_body
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fastjson import ObjectKeyed, encode, message_queue
from reference.net.remoting.fields import field_int, field_str, json_body
from reference.net.remoting.producers import ProducerTable
from reference.rules.codes import ResponseCode
from reference.rules.errors import require

Handler = Callable[[RemotingConnection, RemotingCommand], RemotingCommand]


class AdminGroupHandlers:
    """The group admin table over ``broker()`` (looked up per request: restarts replace the broker)."""

    def __init__(self, broker: Callable[[], Broker], producers: ProducerTable) -> None:
        self._broker = broker
        self.producers = producers

    def table(self) -> dict[int, Handler]:
        return {RequestCode.GET_PRODUCER_CONNECTION_LIST: self.producer_connections,
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_subscription_group,
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.all_subscription_groups,
                RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset}

    def producer_connections(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = field_str(cmd, "producerGroup")
        online = self.producers.online(group)
        if not online:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        return cmd.make_response(body=encode_body({"connectionSet": online}))

    # -- subscription groups (the broker's table, reference.broker.subscription_groups) --------------
    def update_subscription_group(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        self._broker().subscription_groups.update(json_body(cmd))
        return cmd.make_response()

    def all_subscription_groups(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=encode_body({"subscriptionGroupTable": self._broker().subscription_groups.all()}))

    def delete_subscription_group(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        name = field_str(cmd, "groupName")
        if not self._broker().subscription_groups.delete(name):
            return cmd.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                     f"subscription group [{name}] does not exist on this broker")
        return cmd.make_response()

    # -- offsets ---------------------------------------------------------------------------------
    def reset_offset(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._broker()
        topic, group = field_str(cmd, "topic"), field_str(cmd, "group")
        timestamp = field_int(cmd, "timestamp")
        force = cmd.ext_fields.get("isForce", "true").lower() == "true"
        require(timestamp >= 0, "timestamp", "must be >= 0")
        if topic not in broker.store.topics():
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        pairs = []
        for q in range(broker.store.queue_nums(topic)):
            target = broker.store.get_offset_by_timestamp(topic, q, timestamp)
            committed = broker.offsets.query_offset(group, topic, q)
            if force or committed < 0 or target > committed:
                broker.offsets.commit_offset(group, topic, q, target)
            else:
                target = committed
            pairs.append((message_queue(topic, broker.config.broker_name, q), target))
        broker.offsets.persist()
        return cmd.make_response(body=encode({"offsetTable": ObjectKeyed(tuple(pairs))}))
