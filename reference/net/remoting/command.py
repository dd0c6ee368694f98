"""RemotingCommand: one request or response of the RocketMQ remoting protocol (protocols/rocketmq-remoting.md §2).

The header travels as JSON. Two rules of the wire shape this module (§2):

* request ``extFields`` arrive with mixed JSON types (numbers and strings), so decoding turns every value
  into its string form and handlers coerce (``int(str(v))``);
* response ``extFields`` must be JSON *strings*, because the C++ client reads a field only when it is a
  string and silently takes 0 otherwise. :class:`RemotingCommand` therefore holds ``dict[str, str]`` only,
  and :meth:`RemotingCommand.header_json` writes exactly that.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from typing import Any

from reference.rules.codes import ResponseCode

#: flag bit 0: the frame is a response (the client matches it to its request by ``opaque``).
RESPONSE_FLAG = 0x1
#: flag bit 1: the sender expects no reply.
ONEWAY_FLAG = 0x2
#: What this server writes in ``language``/``version``: a Java 4.x broker's values (the client ignores them).
SERVER_LANGUAGE = "JAVA"
SERVER_VERSION = 401


class RequestCode(enum.IntEnum):
    """Request codes (RocketMQ's RequestCode). Client to server unless noted."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    #: Messages by key or unique key (mqadmin queryMsgByKey, queryMsgByUniqueKey: reference.store.index).
    QUERY_MESSAGE = 12
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    #: admin: create or update a topic with a chosen queue count (how a harness creates topics on any broker)
    UPDATE_AND_CREATE_TOPIC = 17
    #: admin: a broker's settings (the peers' runners read and change them)
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    #: The record at a commit-log offset (``mqadmin queryMsgById``: an offset msgId carries the store host and it).
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    #: server to client
    CHECK_TRANSACTION_STATE = 39
    #: server to client, oneway: "rebalance now"
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    #: name server
    GET_ROUTEINFO_BY_TOPIC = 105
    #: admin: create or update a subscription group
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    #: admin (``mqadmin consumerConnection``): a group's connections and stored subscriptions
    GET_CONSUMER_CONNECTION_LIST = 203
    #: admin: delete a subscription group (mqadmin deleteSubGroup), delete a topic (mqadmin deleteTopic)
    DELETE_SUBSCRIPTIONGROUP = 207
    DELETE_TOPIC_IN_BROKER = 215
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    #: admin (``mqadmin deleteExpiredCommitLog``): run the store's retention now, so tests can provoke
    #: PULL_OFFSET_MOVED
    DELETE_EXPIRED_COMMITLOG = 329
    #: POP consumption (RocketMQ 5): the broker allocates (QUERY_ASSIGNMENT) and tracks invisibility.
    QUERY_ASSIGNMENT = 400
    #: Sets a group's request mode for a topic (PULL or POP) and its popShareQueueNum.
    SET_MESSAGE_REQUEST_MODE = 401
    #: mqadmin's daily commands (issue 41 part B): name server
    GET_BROKER_CLUSTER_INFO = 106
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_NAMESRV_CONFIG = 319
    #: mqadmin's daily commands: broker
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_PRODUCER_CONNECTION_LIST = 204
    GET_CONSUME_STATS = 208
    #: broker to client, oneway: reset your offsets to the body's table
    RESET_CONSUMER_CLIENT_OFFSET = 220
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    GET_CONSUMER_RUNNING_INFO = 307
    VIEW_BROKER_STATS_DATA = 315
    GET_BROKER_CONSUME_STATS = 317
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    CHANGE_MESSAGE_INVISIBLETIME = 200053


def encode_body(value: Any) -> bytes:
    """A response body as RocketMQ's RemotingSerializable writes it (fastjson): compact, no space after ``:``
    or ``,``. Clients parse some bodies by hand: the Go client splits a route's ``brokerAddrs`` at ``:`` and
    ``,`` and keeps what follows, so ``{"0": "127.0.0.1:10911"}`` gave it the address " 127.0.0.1:10911"."""
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def ext_value(value: Any) -> str:
    """The string form of one request extFields value, whatever JSON type the sender used (§2)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


@dataclass
class RemotingCommand:
    """One frame's header and body. ``ext_fields`` values are always strings (see the module doc)."""

    code: int
    opaque: int = 0
    flag: int = 0
    language: str = SERVER_LANGUAGE
    version: int = SERVER_VERSION
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def make_response(
        self, code: int = ResponseCode.SUCCESS, remark: str | None = None,
        ext_fields: dict[str, Any] | None = None, body: bytes = b"",
    ) -> RemotingCommand:
        """The response to this request: same ``opaque``, the RESPONSE bit, values stringified."""
        return RemotingCommand(
            code=int(code), opaque=self.opaque, flag=RESPONSE_FLAG, remark=remark,
            ext_fields={k: ext_value(v) for k, v in (ext_fields or {}).items()}, body=body,
        )

    def header_dict(self) -> dict[str, Any]:
        header: dict[str, Any] = {
            "code": self.code, "language": self.language, "version": self.version, "opaque": self.opaque,
            "flag": self.flag, "serializeTypeCurrentRPC": "JSON",
        }
        if self.remark is not None:
            header["remark"] = self.remark
        if self.ext_fields:
            header["extFields"] = {k: ext_value(v) for k, v in self.ext_fields.items()}
        return header

    def header_json(self) -> bytes:
        return json.dumps(self.header_dict(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_header(cls, header: Any, body: bytes) -> RemotingCommand:
        """Build from a decoded JSON header; ValueError names what is wrong with it."""
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        code, opaque, flag = _integer(header, "code", None), _integer(header, "opaque", 0), _integer(header, "flag", 0)
        ext = header.get("extFields") or {}
        if not isinstance(ext, dict):
            raise ValueError("header field 'extFields' must be an object")
        remark = header.get("remark")
        version = header.get("version", 0)
        return cls(
            code=code, opaque=opaque, flag=flag, language=str(header.get("language", "")),
            version=version if isinstance(version, int) and not isinstance(version, bool) else 0,
            remark=remark if isinstance(remark, str) else None,
            ext_fields={str(k): ext_value(v) for k, v in ext.items() if v is not None}, body=body,
        )


#: A JSON string literal, or an object key written as a bare integer (what fastjson does with Map<Long, …>).
_STRING_OR_BARE_KEY = re.compile(r'("(?:\\.|[^"\\])*")|([{,]\s*)(-?\d+)(\s*:)')


def loads_body(body: bytes) -> Any:
    """A JSON body as a Java broker writes it: fastjson writes integer map keys unquoted (a route's
    ``brokerAddrs`` is ``{0:"127.0.0.1:10911"}``), which is not JSON; such keys become strings ("0").
    ValueError if it is not JSON even then."""
    text = body.decode("utf-8")

    def quote(m: re.Match[str]) -> str:
        return m[1] if m[1] is not None else f'{m[2]}"{m[3]}"{m[4]}'

    return json.loads(_STRING_OR_BARE_KEY.sub(quote, text))


def _integer(header: dict[str, Any], name: str, default: int | None) -> int:
    """An integer field of a JSON header (``default`` when absent); ValueError if it is not one (a bool is not)."""
    value = header.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"header field {name!r} must be an integer, got {value!r}")
    return value
