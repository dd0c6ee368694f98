"""The broker's request table: one function per request code, each decode -> call the core -> encode.

No semantics live here (protocols/rocketmq-remoting.md §5 and the checklist §10 are the wire shapes; the
rules are :class:`reference.broker.broker.Broker`'s). What the transport does add is only what the wire
needs: header fields coerced from strings, zlib bodies inflated, TAGS/KEYS moved between the properties
string and the store's own fields, C++ integer enums mapped to the core's names, and the core's result
written as string extFields (§2: the C++ client reads only strings).

A handler raises :class:`~reference.rules.errors.InvalidRequest` for a request that breaks a rule;
:meth:`BrokerRequestHandlers.dispatch` turns it into an error response carrying the rule as its remark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from reference.allocation.message_queue import MessageQueue
from reference.broker.broker import Broker
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse
from reference.broker.send_back import DEFAULT_MAX_RECONSUME_TIMES
from reference.net.remoting import admin
from reference.net.remoting.acl.validator import ACL_REFUSAL, AccessDenied, AccessValidator
from reference.net.remoting.admin_daily import daily_admin_table
from reference.net.remoting.command import RemotingCommand, RequestCode, encode_body
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fields import as_int, body_str, field_int, field_str, json_body
from reference.net.remoting.lock_manager import RebalanceLockManager
from reference.net.remoting.message_codec import (
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    SYSFLAG_COMPRESSED,
    CodecError,
    decode_batch_body,
    decode_properties,
    encode_stored_record,
    inflate_body,
)
from reference.net.remoting.pop_handlers import PopRequestHandlers
from reference.net.remoting.producers import ProducerTable
from reference.net.remoting.send_header import send_header
from reference.net.remoting.transaction_handlers import TransactionFront
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest, require
from reference.rules.filter import SubscriptionData
from reference.store.message import Message, store_host_bytes

log = logging.getLogger("mqtck.remoting")

Handler = Callable[[RemotingConnection, RemotingCommand], RemotingCommand | None]

#: C++ clients send the heartbeat enums as integers, Java clients as names (§5.1): both are accepted.
MESSAGE_MODELS = {"0": "BROADCASTING", "1": "CLUSTERING"}
CONSUME_TYPES = {"0": "CONSUME_ACTIVELY", "1": "CONSUME_PASSIVELY", "2": "CONSUME_POP"}
CONSUME_FROM_WHERE = {
    "0": "CONSUME_FROM_LAST_OFFSET", "1": "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "2": "CONSUME_FROM_MIN_OFFSET", "3": "CONSUME_FROM_MAX_OFFSET", "4": "CONSUME_FROM_FIRST_OFFSET",
    "5": "CONSUME_FROM_TIMESTAMP",
}
#: MQVersion.Version.V3_4_9.ordinal(): Apache reads a send-back's maxReconsumeTimes only from a client of this
#: version or later and otherwise uses the group's retryMaxTimes (16), so a C++ 1.2.x client (version 63) asking for
#: fewer retries still gets 16 (SendMessageProcessor.asyncConsumerSendMsgBack, CONSUME-10).
MAX_RECONSUME_TIMES_FROM_VERSION = 165
#: The refusal code when a request breaks a rule, per request (Java: SYSTEM_ERROR from header checks).
_REFUSAL: dict[int, ResponseCode] = {RequestCode.SEND_MESSAGE: ResponseCode.MESSAGE_ILLEGAL,
            RequestCode.SEND_MESSAGE_V2: ResponseCode.MESSAGE_ILLEGAL,
            RequestCode.SEND_BATCH_MESSAGE: ResponseCode.MESSAGE_ILLEGAL,
            RequestCode.POP_MESSAGE: ResponseCode.INVALID_PARAMETER,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: ResponseCode.INVALID_PARAMETER}
#: Core error codes without a remoting response code of the same name. A receipt handle that names no
#: in-flight message is answered as RocketMQ 5's AckMessageProcessor answers an ack at an offset the queue
#: does not hold: NO_MESSAGE.
_CODE_OF = {"INVALID_RECEIPT_HANDLE": ResponseCode.NO_MESSAGE}


def _enum(value: object, table: dict[str, str], field: str) -> str:
    text = str(value)
    if text in table.values():
        return text
    require(text in table, field, f"must be one of {sorted(table)} or {sorted(table.values())}")
    return table[text]


def _split_properties(props: dict[str, str]) -> tuple[str | None, str | None, dict[str, str]]:
    """(tags, keys, the rest): the store keeps TAGS and KEYS in their own fields."""
    rest = dict(props)
    return rest.pop(PROPERTY_TAGS, None) or None, rest.pop(PROPERTY_KEYS, None) or None, rest


class BrokerRequestHandlers:
    """The broker port's dispatch table. ``store_host`` is the ``(ip, port)`` clients reach the broker at:
    it is written into every record, and clients send CONSUMER_SEND_MSG_BACK there (§6.2)."""

    def __init__(self, broker: Broker, store_host: tuple[str, int], acl: AccessValidator | None = None) -> None:
        self.broker = broker
        #: RocketMQ ACL 1.0 (``mqtck broker --remoting --acl FILE``): every request is checked before its handler.
        self.acl = acl
        self.store_host = store_host_bytes(store_host)
        self.locks = RebalanceLockManager(broker.clock)
        #: Messages to store between the lookup and the hold of the next pull of a queue (a runner's race
        #: control, capability ``race_control``): (topic, queue id) -> [(body, tags)].
        self.races: dict[tuple[str, int], list[tuple[bytes, str | None]]] = {}
        #: The producers of every heartbeat: a transaction's check-back and mqadmin's producerConnection.
        self.producers = ProducerTable()
        self.transactions = TransactionFront(broker, self.store_host, self.producers)
        self.table: dict[int, Handler] = {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.SEND_MESSAGE: self.send_message,
            RequestCode.SEND_MESSAGE_V2: self.send_message,
            RequestCode.SEND_BATCH_MESSAGE: self.send_message,
            RequestCode.PULL_MESSAGE: self.pull_message,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.consumer_send_msg_back,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commit_log,
            RequestCode.UPDATE_AND_CREATE_TOPIC: lambda conn, cmd: admin.update_and_create_topic(self.broker, cmd),
            RequestCode.DELETE_TOPIC_IN_BROKER: lambda conn, cmd: admin.delete_topic_in_broker(self.broker, cmd),
            RequestCode.GET_CONSUMER_CONNECTION_LIST:
                lambda conn, cmd: admin.get_consumer_connection_list(self.broker, cmd),
            **PopRequestHandlers(broker, self.store_host).table(),
            **self.transactions.table(),
        }
        self.table.update(daily_admin_table(lambda: self.broker, self.store_host, self.producers, self.table))

    # -- dispatch ------------------------------------------------------------------------------
    def dispatch(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand | None:
        if self.acl is not None:
            try:
                self.acl.check(conn.peer[0], cmd)
            except AccessDenied as exc:
                log.warning("remoting %s: ACL refused request code %s: %s", conn.key, cmd.code, exc)
                # Worded as RocketMQ's remark (its exception's class and message), without the Java stack frame.
                return cmd.make_response(ACL_REFUSAL, f"AclException: {exc}")
        handler = self.table.get(cmd.code)
        if handler is None:
            log.info("remoting %s: request code %s not supported", conn.key, cmd.code)
            return cmd.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request code {cmd.code} not supported")
        try:
            return handler(conn, cmd)
        except InvalidRequest as exc:
            code = (ResponseCode.__members__.get(exc.code) or _CODE_OF.get(exc.code)
                    or _REFUSAL.get(cmd.code, ResponseCode.SYSTEM_ERROR))
            log.info("remoting %s: request code %s refused (%s): %s", conn.key, cmd.code, int(code), exc)
            return cmd.make_response(code, str(exc))
        except CodecError as exc:
            log.info("remoting %s: request code %s refused: %s", conn.key, cmd.code, exc)
            return cmd.make_response(_REFUSAL.get(cmd.code, ResponseCode.SYSTEM_ERROR), str(exc))
        except Exception as exc:  # a bug must cost one request, never the server
            log.exception("remoting %s: request code %s failed", conn.key, cmd.code)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def channel_closed(self, conn: RemotingConnection) -> None:
        self.broker.channel_closed(conn)
        self.producers.channel_closed(conn)

    # -- registry ------------------------------------------------------------------------------
    def heart_beat(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        doc = json_body(cmd)
        client_id = body_str(doc, "clientID")
        consumers = []
        for data in doc.get("consumerDataSet") or []:
            require(isinstance(data, dict), "consumerDataSet", "must hold objects")
            subs = []
            for sub in data.get("subscriptionDataSet") or []:
                require(isinstance(sub, dict), "subscriptionDataSet", "must hold objects")
                subs.append(SubscriptionData.parse(
                    str(sub.get("topic", "")), sub.get("subString"), as_int(sub.get("subVersion", 0), "subVersion"),
                ))
            consumers.append(ConsumerData(
                str(data.get("groupName", "")), tuple(subs),
                _enum(data.get("messageModel", 1), MESSAGE_MODELS, "messageModel"),
                _enum(data.get("consumeType", 1), CONSUME_TYPES, "consumeType"),
                _enum(data.get("consumeFromWhere", 0), CONSUME_FROM_WHERE, "consumeFromWhere"),
            ))
        self.broker.heartbeat(conn, client_id, consumers)
        self.producers.heartbeat(conn, doc, cmd.language, cmd.version)
        conn.client_id = client_id
        return cmd.make_response()

    def unregister_client(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        if group:  # a producer's unregister names only its producerGroup: nothing registered, nothing to do
            self.broker.unregister_client(conn, group)
        return cmd.make_response()

    def get_consumer_list_by_group(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = field_str(cmd, "consumerGroup")
        ids = self.broker.consumer_ids(group)
        if not ids:  # as RocketMQ: an error without body (the client then skips this rebalance round)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return cmd.make_response(body=encode_body({"consumerIdList": ids}))

    # -- produce -------------------------------------------------------------------------------
    def send_message(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        cmd.ext_fields, batch = send_header(cmd)
        topic = field_str(cmd, "topic")
        queue_id = field_int(cmd, "queueId")
        sys_flag = field_int(cmd, "sysFlag", 0)
        born = field_int(cmd, "bornTimestamp", 0) or None
        reconsume_times = field_int(cmd, "reconsumeTimes", 0)
        body = cmd.body
        if sys_flag & SYSFLAG_COMPRESSED:
            body = inflate_body(body, self.broker.store.config.max_message_size)
        if batch:
            entries = [(e.body, e.properties) for e in decode_batch_body(body)]
            require(bool(entries), "body", "a batch must hold at least one message")
        else:
            entries = [(body, decode_properties(cmd.ext_fields.get("properties", "")))]
        producer = cmd.ext_fields.get("producerGroup", "")
        results = []
        for entry_body, props in entries:
            tags, keys, rest = _split_properties(props)
            message = Message(topic, entry_body, queue_id, tags, keys, rest, born, reconsume_times)
            results.append(self.broker.send(message, producer))
        return cmd.make_response(ext_fields={
            # The queue asked for, as upstream answers, also for a delayed or half message stored elsewhere.
            "msgId": ",".join(r.msg_id for r in results), "queueId": queue_id, "queueOffset": results[0].queue_offset,
        })

    def consumer_send_msg_back(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = field_str(cmd, "group")
        offset = field_int(cmd, "offset")
        message = self.broker.store.look_message_by_offset(offset)
        if message is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {offset}")
        max_times = DEFAULT_MAX_RECONSUME_TIMES
        if cmd.version >= MAX_RECONSUME_TIMES_FROM_VERSION:
            max_times = field_int(cmd, "maxReconsumeTimes", DEFAULT_MAX_RECONSUME_TIMES)
        self.broker.send_back(group, message, field_int(cmd, "delayLevel", 0), max_times)
        return cmd.make_response()

    def view_message_by_id(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        """The whole record an intact commit-log record starts with at ``offset``, as a pull's body holds it
        (Apache's QueryMessageProcessor sends the stored bytes); SYSTEM_ERROR, with Apache's remark, when none
        does. A conformance test follows the log with it past records a broker writes for itself (STORE-6)."""
        offset = field_int(cmd, "offset")
        message = self.broker.store.look_message_by_offset(offset)
        if message is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        return cmd.make_response(body=encode_stored_record(message, self.store_host))

    # -- pull ----------------------------------------------------------------------------------
    def pull_message(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand | None:
        request = PullMessageRequest(
            consumer_group=field_str(cmd, "consumerGroup"), topic=field_str(cmd, "topic"),
            queue_id=field_int(cmd, "queueId"), queue_offset=field_int(cmd, "queueOffset"),
            max_msg_nums=field_int(cmd, "maxMsgNums", 32), sys_flag=field_int(cmd, "sysFlag", 0),
            commit_offset=field_int(cmd, "commitOffset", 0),
            suspend_timeout_ms=field_int(cmd, "suspendTimeoutMillis", 0),
            subscription=cmd.ext_fields.get("subscription"), sub_version=field_int(cmd, "subVersion", 0),
            client_id=conn.client_id,
        )

        def encode(response: PullResponse) -> RemotingCommand:
            return self._pull_response(cmd, response)

        # Registered before the call: the core may deliver a held pull at once (an arrival during the call).
        conn.hold(request, encode)
        raced = self.races.pop((request.topic, request.queue_id), None)
        response = self.broker.pull(request, conn, None if raced is None else lambda: self._store(request, raced))
        if response is None:
            return None
        conn.deliver_pull(request, response)  # drops the registration; the answer is written there
        return None

    def _store(self, request: PullMessageRequest, sends: list[tuple[bytes, str | None]]) -> None:
        for body, tags in sends:
            self.broker.send(Message(request.topic, body, request.queue_id, tags=tags))

    def _pull_response(self, cmd: RemotingCommand, response: PullResponse) -> RemotingCommand:
        ext = {"nextBeginOffset": response.next_begin_offset, "minOffset": response.min_offset,
               "maxOffset": response.max_offset, "suggestWhichBrokerId": 0}
        if response.code == ResponseCode.SUCCESS and not response.messages:
            # The client throws on SUCCESS without a body (§5.4); never expected from the core.
            return cmd.make_response(ResponseCode.PULL_RETRY_IMMEDIATELY, "found nothing", ext)
        body = b"".join(encode_stored_record(m, self.store_host) for m in response.messages)
        return cmd.make_response(int(response.code), response.remark or None, ext, body)

    # -- offsets -------------------------------------------------------------------------------
    def _queue(self, cmd: RemotingCommand) -> tuple[str, int]:
        topic, queue_id = field_str(cmd, "topic"), field_int(cmd, "queueId")
        nums = self.broker.store.queue_nums(topic)
        require(0 <= queue_id < nums, "queueId", f"must be in [0, {nums}) for topic {topic!r}")
        return topic, queue_id

    def query_consumer_offset(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic, queue_id = self._queue(cmd)
        result = self.broker.query_consumer_offset(field_str(cmd, "consumerGroup"), topic, queue_id)
        if result.code == ResponseCode.SUCCESS:
            return cmd.make_response(ext_fields={"offset": result.offset})
        return cmd.make_response(int(result.code), result.remark or None)

    def update_consumer_offset(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic, queue_id = self._queue(cmd)
        self.broker.update_consumer_offset(
            field_str(cmd, "consumerGroup"), topic, queue_id, field_int(cmd, "commitOffset"),
            # Before its first heartbeat (after a broker restart) a connection is known by its key, as its pulls are.
            conn.client_id or conn.key,
        )
        return cmd.make_response()

    def get_max_offset(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic, queue_id = self._queue(cmd)
        return cmd.make_response(ext_fields={"offset": self.broker.store.get_max_offset_in_queue(topic, queue_id)})

    def get_min_offset(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic, queue_id = self._queue(cmd)
        return cmd.make_response(ext_fields={"offset": self.broker.store.get_min_offset_in_queue(topic, queue_id)})

    def search_offset_by_timestamp(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        topic, queue_id = self._queue(cmd)
        offset = self.broker.store.get_offset_by_timestamp(topic, queue_id, field_int(cmd, "timestamp"))
        return cmd.make_response(ext_fields={"offset": offset})

    # -- orderly -------------------------------------------------------------------------------
    def _lock_body(self, cmd: RemotingCommand) -> tuple[str, str, list[MessageQueue]]:
        doc = json_body(cmd)
        group, client_id = body_str(doc, "consumerGroup"), body_str(doc, "clientId")
        queues = []
        for mq in doc.get("mqSet") or []:
            require(isinstance(mq, dict), "mqSet", "must hold objects")
            queues.append(MessageQueue(str(mq.get("topic", "")), str(mq.get("brokerName", "")),
                                       as_int(mq.get("queueId"), "mqSet.queueId")))
        return group, client_id, queues

    def lock_batch_mq(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group, client_id, queues = self._lock_body(cmd)
        held = self.locks.try_lock_batch(group, queues, client_id)
        body = {"lockOKMQSet": [{"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id} for q in held]}
        return cmd.make_response(body=encode_body(body))

    def unlock_batch_mq(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group, client_id, queues = self._lock_body(cmd)
        self.locks.unlock_batch(group, queues, client_id)
        return cmd.make_response()

    # -- admin ---------------------------------------------------------------------------------
    def delete_expired_commit_log(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        self.broker.run_retention(manual=True)
        return cmd.make_response()

