"""QUERY_MESSAGE (12): messages of a topic by key or unique key (mqadmin queryMsgByKey, queryMsgByUniqueKey).

The header names the topic, the key, ``maxNum`` and a store-time range; ``_UNIQUE_KEY_QUERY: true`` in the
extFields asks for the producer's unique id instead of a KEYS word. The answer's body is the matching records as
a pull's body holds them, with the index's last update in the header; QUERY_NOT_FOUND with Apache's remark when
none matches. The lookup is :class:`reference.store.index.MessageIndex`'s.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.broker.broker import Broker
from reference.net.remoting.command import RemotingCommand
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fields import field_int, field_str
from reference.net.remoting.message_codec import encode_stored_record
from reference.rules.codes import ResponseCode
from reference.store.index import MessageIndex

#: RocketMQ's MixAll.UNIQUE_MSG_QUERY_FLAG, the extFields key of a query by unique key.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
#: Apache's defaultQueryMaxNum: the most messages one query answers.
DEFAULT_QUERY_MAX_NUM = 32


class QueryMessageHandler:
    """QUERY_MESSAGE over ``broker()``'s store; the index is rebuilt when a restart replaces the broker."""

    def __init__(self, broker: Callable[[], Broker], store_host: bytes) -> None:
        self._broker = broker
        self._store_host = store_host
        self._index: tuple[Broker, MessageIndex] | None = None

    def index(self) -> MessageIndex:
        broker = self._broker()
        if self._index is None or self._index[0] is not broker:
            self._index = (broker, MessageIndex(broker.store))
        return self._index[1]

    def __call__(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic, key = field_str(cmd, "topic"), field_str(cmd, "key")
        max_num = min(field_int(cmd, "maxNum", DEFAULT_QUERY_MAX_NUM), DEFAULT_QUERY_MAX_NUM)
        unique = cmd.ext_fields.get(UNIQUE_KEY_QUERY, "false").lower() == "true"
        found = self.index().query(topic, key, max_num, field_int(cmd, "beginTimestamp", 0),
                                   field_int(cmd, "endTimestamp", 0) or None, unique)
        ext = {"indexLastUpdateTimestamp": self._broker().clock.now_ms(),
               "indexLastUpdatePhyoffset": self._broker().store.get_commit_log_max_offset()}
        if not found:
            return cmd.make_response(ResponseCode.QUERY_NOT_FOUND,
                                     "can not find message, maybe time range not correct", ext)
        return cmd.make_response(ext_fields=ext,
                                 body=b"".join(encode_stored_record(m, self._store_host) for m in found))
