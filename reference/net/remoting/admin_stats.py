"""What mqadmin reads of a broker: its settings, runtime figures, topic and consume statistics, consumers of a topic.

GET_BROKER_CONFIG (26, ``getBrokerConfig``) is the broker's and store's settings as ``key=value`` lines under
RocketMQ's names; GET_BROKER_RUNTIME_INFO (28, ``brokerStatus``, ``clusterList``) the figures the reference
keeps (commit-log offsets, messages stored since start, boot time), and no rate it does not measure;
GET_TOPIC_STATS_INFO (202, ``topicStatus``) each queue's min and max offsets; GET_CONSUME_STATS (208,
``consumerProgress``) and GET_BROKER_CONSUME_STATS (317, ``brokerConsumeStats``) each queue's max offset beside
the group's committed offset, so the lag is their difference; QUERY_TOPIC_CONSUME_BY_WHO (300) the groups with
an offset on, or a member subscribed to, the topic. The tables keyed by a MessageQueue are written as fastjson
writes them (:mod:`reference.net.remoting.fastjson`).

Refused, with a remark naming what is missing, because the reference keeps no such data: UPDATE_BROKER_CONFIG
(25: settings are fixed when ``mqtck broker`` starts), GET_CONSUMER_RUNNING_INFO (307: the broker does not
relay it to the client), VIEW_BROKER_STATS_DATA (315: no per-minute statistics are kept).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from typing import Any

from reference.broker.broker import Broker
from reference.net.remoting.command import RemotingCommand, RequestCode, encode_body
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fastjson import ObjectKeyed, encode, message_queue
from reference.net.remoting.fields import field_str
from reference.net.remoting.namesrv_admin import CLUSTER_NAME, properties_text
from reference.rules.codes import ResponseCode

log = logging.getLogger("mqtck.remoting")
Handler = Callable[[RemotingConnection, RemotingCommand], RemotingCommand]
#: What a refused admin request says it lacks (the command, then what to use instead).
NOT_KEPT: dict[int, str] = {
    RequestCode.UPDATE_BROKER_CONFIG: "the reference broker's settings are fixed when it starts (mqtck broker "
                                      "flags such as --segment-bytes); nothing was changed",
    RequestCode.GET_CONSUMER_RUNNING_INFO: "the reference broker does not relay GET_CONSUMER_RUNNING_INFO to "
                                           "clients; use consumerProgress and consumerConnection",
    RequestCode.VIEW_BROKER_STATS_DATA: "the reference broker keeps no per-minute statistics (statsAll's TPS); "
                                        "use topicStatus and consumerProgress",
}


def refuse_not_kept(conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
    """SYSTEM_ERROR with what the reference does not keep (:data:`NOT_KEPT`), and a line in the server log."""
    log.info("remoting %s: request code %s refused (%s): %s", conn.key, cmd.code, int(ResponseCode.SYSTEM_ERROR),
             NOT_KEPT[cmd.code])
    return cmd.make_response(ResponseCode.SYSTEM_ERROR, NOT_KEPT[cmd.code])


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m[1].upper(), name)


class BrokerStats:
    """Counters the broker's transport keeps for ``brokerStatus``: messages stored since this process started."""

    def __init__(self, boot_ms: int) -> None:
        self.boot_ms = boot_ms
        self.put_total = 0


def store_time(broker: Broker, topic: str, queue_id: int, offset: int) -> int:
    """When the message at ``offset`` of the queue was stored; 0 when it is not (or no longer) there."""
    if offset < 0:
        return 0
    for _offset, phy in broker.store.commit_log_offsets(topic, queue_id, offset, offset + 1):
        message = broker.store.look_message_by_offset(phy)
        return message.store_timestamp if message is not None else 0
    return 0


class AdminStatsHandlers:
    """The read-only admin table over ``broker()`` (looked up per request: restarts replace the broker)."""

    def __init__(self, broker: Callable[[], Broker], stats: BrokerStats) -> None:
        self._broker = broker
        self.stats = stats

    def table(self) -> dict[int, Handler]:
        table: dict[int, Handler] = {
            RequestCode.GET_BROKER_CONFIG: self.broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.runtime_info,
            RequestCode.GET_TOPIC_STATS_INFO: self.topic_stats,
            RequestCode.GET_CONSUME_STATS: self.consume_stats,
            RequestCode.GET_BROKER_CONSUME_STATS: self.broker_consume_stats,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.consumed_by_whom,
        }
        for code in NOT_KEPT:
            table[code] = refuse_not_kept
        return table

    def broker_config(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._broker()
        settings: dict[str, Any] = {"brokerClusterName": CLUSTER_NAME, "brokerId": 0,
                                    "storePathRootDir": str(broker.data_dir)}
        for config in (broker.config, broker.store.config):
            for f in dataclasses.fields(config):
                value = getattr(config, f.name)
                if isinstance(value, int | float | str | bool):
                    settings[_camel(f.name)] = str(value).lower() if isinstance(value, bool) else value
        return cmd.make_response(body=properties_text(settings))

    def runtime_info(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        store = self._broker().store
        now = self._broker().clock.now_ms()
        table = {"brokerVersionDesc": "mqtck reference", "bootTimestamp": self.stats.boot_ms,
                 "runtime": f"{(now - self.stats.boot_ms) // 1000} s", "msgPutTotalTodayNow": self.stats.put_total,
                 "commitLogMinOffset": store.get_commit_log_min_offset(),
                 "commitLogMaxOffset": store.get_commit_log_max_offset()}
        return cmd.make_response(body=encode_body({"table": {k: str(v) for k, v in table.items()}}))

    def topic_stats(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._broker()
        topic = field_str(cmd, "topic")
        if topic not in broker.store.topics():
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        pairs = []
        for q in range(broker.store.queue_nums(topic)):
            max_offset = broker.store.get_max_offset_in_queue(topic, q)
            pairs.append((message_queue(topic, broker.config.broker_name, q), {
                "minOffset": broker.store.get_min_offset_in_queue(topic, q), "maxOffset": max_offset,
                "lastUpdateTimestamp": store_time(broker, topic, q, max_offset - 1)}))
        return cmd.make_response(body=encode({"offsetTable": ObjectKeyed(tuple(pairs))}))

    def _consume_stats(self, group: str, topics: list[str]) -> dict[str, Any]:
        broker = self._broker()
        pairs = []
        for topic in topics:
            for q in range(broker.store.queue_nums(topic)):
                committed = max(broker.offsets.query_offset(group, topic, q), 0)
                # As Apache: the store time of the last message consumed, 0 before the first.
                pairs.append((message_queue(topic, broker.config.broker_name, q), {
                    "brokerOffset": broker.store.get_max_offset_in_queue(topic, q), "consumerOffset": committed,
                    "lastTimestamp": store_time(broker, topic, q, committed - 1)}))
        return {"offsetTable": ObjectKeyed(tuple(pairs)), "consumeTps": 0.0}

    def _topics_of(self, group: str) -> list[str]:
        topics = self._broker().store.topics()
        return sorted({t for t, g in self._broker().offsets.topic_groups() if g == group and t in topics})

    def consume_stats(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = field_str(cmd, "consumerGroup")
        topic = cmd.ext_fields.get("topic") or ""
        topics = [topic] if topic else self._topics_of(group)
        if topic and topic not in self._broker().store.topics():
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        return cmd.make_response(body=encode(self._consume_stats(group, topics)))

    def broker_consume_stats(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._broker()
        groups = sorted({g for _t, g in broker.offsets.topic_groups()})
        stats_list, total = [], 0
        for group in groups:
            per_topic = []
            for topic in self._topics_of(group):
                stats = self._consume_stats(group, [topic])
                total += sum(v["brokerOffset"] - v["consumerOffset"] for _k, v in stats["offsetTable"].pairs)
                per_topic.append(stats)
            if per_topic:
                stats_list.append({group: per_topic})
        return cmd.make_response(body=encode({"consumeStatsList": stats_list, "brokerAddr": "", "totalDiff": total}))

    def consumed_by_whom(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._broker()
        topic = field_str(cmd, "topic")
        groups = {g for t, g in broker.offsets.topic_groups() if t == topic}
        for group, info in broker.consumer_manager.consumer_table.items():
            if topic in info.subscription_table:
                groups.add(group)
        return cmd.make_response(body=encode_body({"groupList": sorted(groups)}))
