"""Admin requests of the remoting broker that no client library sends but tools do (RocketMQ's mqadmin).

UPDATE_AND_CREATE_TOPIC (17) is how a conformance harness creates a topic with a chosen queue count on any
RocketMQ broker (``mqadmin updateTopic`` sends it), instead of relying on auto-creation at route lookup,
which always gives the default queue count. Decode, call the core, encode: the rules (name, queue count)
are the store's.

DELETE_TOPIC_IN_BROKER (215, ``mqadmin deleteTopic``) forgets a topic, so that a test can make one vanish
under a pending checkpoint (REVIVE-8).

GET_CONSUMER_CONNECTION_LIST (203, ``mqadmin consumerConnection``) shows what the broker keeps of a consumer
group: its members' connections and the subscriptions the group stores. It is the one answer on the wire that
tells an empty group from a removed one (CONSUMER_NOT_ONLINE) and shows a stored subscription (CGRP-2, -3, -5).
"""

from __future__ import annotations

from typing import Any

from reference.broker.broker import Broker
from reference.broker.topic_perm import check_perm
from reference.net.remoting.command import RemotingCommand, encode_body
from reference.net.remoting.fields import as_int, field_str
from reference.net.remoting.topic_admin import check_queue_pair
from reference.rules.codes import ResponseCode
from reference.rules.filter import SubscriptionData


def update_and_create_topic(broker: Broker, cmd: RemotingCommand) -> RemotingCommand:
    """Create or update ``topic`` with its queue count and ``perm`` (RocketMQ's CreateTopicRequestHeader).

    The reference keeps one queue count per topic, so a ``readQueueNums`` different from ``writeQueueNums``
    (``mqadmin updateTopic -r 2 -w 4``) is refused naming both, instead of answering success with one of them
    (topic_admin.py says why)."""
    read_nums = _queue_nums(cmd, "readQueueNums")
    write_nums = _queue_nums(cmd, "writeQueueNums")
    queue_nums = check_queue_pair(read_nums, write_nums)
    perm = _perm(cmd)
    if perm is not None:
        check_perm(perm)
    broker.create_topic(field_str(cmd, "topic"), queue_nums)
    if perm is not None:
        broker.topic_perms.set(field_str(cmd, "topic"), perm)
    return cmd.make_response()


def delete_topic_in_broker(broker: Broker, cmd: RemotingCommand) -> RemotingCommand:
    """DELETE_TOPIC_IN_BROKER (215, ``mqadmin deleteTopic``): forget ``topic`` (REVIVE-8 needs a topic to vanish)."""
    broker.delete_topic(field_str(cmd, "topic"))
    return cmd.make_response()


def get_consumer_connection_list(broker: Broker, cmd: RemotingCommand) -> RemotingCommand:
    """The group's connections and stored subscriptions as Apache's ConsumerConnection body; CONSUMER_NOT_ONLINE,
    with Apache's remark, when the broker keeps no such group."""
    group = field_str(cmd, "consumerGroup")
    info = broker.consumer_manager.get_consumer_group_info(group)
    if info is None:
        return cmd.make_response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
    connections = []
    for channel in info.channel_info_table.values():
        peer = getattr(channel.channel, "peer", None)
        connections.append({"clientId": channel.client_id, "language": channel.language, "version": channel.version,
                            "clientAddr": f"{peer[0]}:{peer[1]}" if peer else ""})
    return cmd.make_response(body=encode_body({
        "connectionSet": connections, "consumeType": info.consume_type, "messageModel": info.message_model,
        "consumeFromWhere": info.consume_from_where,
        "subscriptionTable": {topic: subscription_json(sub) for topic, sub in info.subscription_table.items()},
    }))


def subscription_json(sub: SubscriptionData) -> dict[str, Any]:
    """A stored subscription as Apache's SubscriptionData JSON (a TAG expression, its tags and their hash codes)."""
    return {"topic": sub.topic, "subString": sub.expression, "subVersion": sub.sub_version, "expressionType": "TAG",
            "tagsSet": sorted(sub.tags), "codeSet": sorted(sub.codes), "classFilterMode": False}


def _queue_nums(cmd: RemotingCommand, name: str) -> int | None:
    text = cmd.ext_fields.get(name)
    return None if text in (None, "") else as_int(text, name)


def _perm(cmd: RemotingCommand) -> int | None:
    text = cmd.ext_fields.get("perm")
    return None if text in (None, "") else as_int(text, "perm")
