"""A target that speaks RocketMQ 5's gRPC MessagingService: a v5 proxy, or anything serving its protocol.

``grpc://HOST:PORT?remoting=NSHOST:NSPORT[&control=HOST:CPORT]``: ``HOST:PORT`` is the MessagingService (a
RocketMQ 5 proxy's gRPC port, 8081 by default); ``remoting`` is the name server of the same deployment, required,
because v5 has no RPC for what a test must also do to a broker (create a topic, read a queue's bounds, read or
commit a group's offset, register a consumer for the broker's allocation); ``control`` is the runner's control
channel, as for ``remoting://`` (:mod:`conformance.targets.control`).

What goes over gRPC, as the official v5 SimpleConsumer sends it:

* ``pop`` of every queue (``queue_id`` -1): ReceiveMessage with ``long_polling_timeout`` = the poll time, on a
  client id whose settings (a SIMPLE_CONSUMER subscribed to the topic) were sent first on a Telemetry stream, as
  the proxy answers a ReceiveMessage only for a client whose settings it holds;
* ``ack``: AckMessage; ``change_invisible``: ChangeInvisibleDuration (its answer's receipt handle is the new one).

What goes over the remoting protocol of the same deployment (a composed
:class:`~conformance.targets.remoting.RemotingTarget`, sharing its namespace), each because v5 cannot say it:

* ``send``: SendMessage has no queue id (the proxy picks the queue), and the suite sends to a named queue;
* ``pop`` of one named queue: ReceiveMessage reads every queue of a broker (the proxy's acting queue, id -1);
* ``query_assignment``: v5's QueryAssignment answers brokers (acting queues), not the broker's allocate4Pop over
  queues that POP-1 and ALLOC-15/16 judge;
* create_topic, min_max, query_offset / commit_offset, heartbeat / consumer_ids / group_info: no v5 RPC.

The mapping between a v5 ``Status`` and the suite's values is :data:`RECEIVE_OUTCOMES` (a ReceiveMessage's
outcome to ``PopReply.code``, named as the remoting POP codes are) and :func:`target_error` (a refusal to
``TargetError``: the field from a ``field: rule`` message when the server writes one, as the reference's front
does, else from :data:`FIELD_OF_CODE`; the code by :data:`SUITE_CODE` where the suite has its own name).

Capabilities are those of the composed remoting target that POP needs (:data:`FROM_REMOTING`), and what the
control channel offers for the broker; ``pull``, ``long_poll``, ``remoting_wire``, ``channel_close`` and the
clock and race controls are not declared: those families judge the remoting protocol, which ``remoting://`` gates.
``pop_order`` (:meth:`GrpcTarget.pop_orderly`) is a ReceiveMessage of a FIFO group: the group's subscription group
config says ``consumeMessageOrderly``, set over remoting as an operator sets it (``mqadmin updateSubGroup -o
true``), and switched back for an unordered pop of the same group (the proxy reads the config at every receive).
What that wire cannot show is :data:`UNSEEN`: no ``restNum`` and no ``orderCountInfo``; an ordered message's
consume count is its ``delivery_attempt`` - 1 (the proxy's rule), in ``PoppedRecord.reconsume_times``.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from reference.net.grpc import protos
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.rules.codes import ResponseCode

from . import GroupInfo, MalformedAnswer, PendingPop, PoppedRecord, PopReply, SendReceipt, StoreLayout, TargetError
from .http import UnreachableTarget
from .remoting import NORMAL_MARK, RemotingTarget, _PendingRemoting, control_capabilities

#: What a ReceiveMessage's first status says -> the suite's PopReply.code (the remoting POP answer's names):
#: OK with messages; MESSAGE_NOT_FOUND when nothing came within the poll time (the broker's POLLING_NOT_FOUND and
#: NO_NEW_MSG alike, ReceiveMessageResponseStreamWriter); TOO_MANY_REQUESTS when the broker holds too many pops.
RECEIVE_OUTCOMES = {"OK": "SUCCESS", "MESSAGE_NOT_FOUND": "POLLING_TIMEOUT", "TOO_MANY_REQUESTS": "POLLING_FULL"}
#: The request field a v5 refusal code is about, when its message does not name one.
FIELD_OF_CODE = {
    "ILLEGAL_TOPIC": "topic", "TOPIC_NOT_FOUND": "topic", "ILLEGAL_CONSUMER_GROUP": "consumerGroup",
    "CONSUMER_GROUP_NOT_FOUND": "consumerGroup", "ILLEGAL_INVISIBLE_TIME": "invisibleTime",
    "ILLEGAL_POLLING_TIME": "pollTime", "ILLEGAL_FILTER_EXPRESSION": "expression",
    "INVALID_RECEIPT_HANDLE": "receiptHandle", "ILLEGAL_MESSAGE_TAG": "tags",
}
#: v5 request fields (as a ``field: rule`` message names them) -> the suite's neutral names (the remoting header's,
#: as :data:`conformance.targets.remoting.FIELD_NAMES` maps a remoting broker's).
V5_FIELD_NAMES = {
    "batch_size": "maxMsgNums", "invisible_duration": "invisibleTime", "long_polling_timeout": "pollTime",
    "group": "consumerGroup", "group.name": "consumerGroup", "message_queue.topic": "topic", "topic.name": "topic",
    "message_queue.topic.name": "topic", "filter_expression": "expression",
    "filter_expression.expression": "expression",
    "receipt_handle": "receiptHandle", "entries.receipt_handle": "receiptHandle",
}
#: v5 codes the suite knows by the remoting name of the same refusal.
SUITE_CODE = {"CONSUMER_GROUP_NOT_FOUND": "SUBSCRIPTION_GROUP_NOT_EXIST", "TOPIC_NOT_FOUND": "TOPIC_NOT_EXIST"}
#: Capabilities of the composed remoting target that the gRPC target keeps (what POP tests also need).
FROM_REMOTING = frozenset({"pop", "pop_order", "query_offset", "commit_offset", "consumer_registry", "group_info",
                           "topic_admin"})
#: What a ReceiveMessage answer cannot show, which the suite reads to call a clause not applicable (rather than
#: judge a value the target made up): a pop's restNum, an ordered pop's orderCountInfo (the proxy folds each
#: message's count into its delivery_attempt instead: ConsumerProcessor, MQClientAPIImpl.processPopResponse).
UNSEEN = frozenset({"rest_num", "order_count_info"})
#: SubscriptionGroupConfig.consumeMessageOrderly: what makes a group FIFO for the proxy (GrpcClientSettingsManager).
CONSUME_ORDERLY = "consumeMessageOrderly"
#: Runner capabilities that only make sense with the remoting protocol's pulls (or the runner's own clock).
NOT_OVER_GRPC = frozenset({"race_control", "clock_control", "trace", "retention_control"})
#: Why the target lacks what the remoting target offers: the reason a not-applicable test gives.
REMOTING_FAMILIES = "the pull, long-polling and remoting-wire families judge the remoting protocol: gate it with remoting://"
WHY_LACKING = {
    "pull": REMOTING_FAMILIES, "long_poll": REMOTING_FAMILIES, "remoting_wire": REMOTING_FAMILIES,
    "channel_close": REMOTING_FAMILIES, "race_control": REMOTING_FAMILIES,
    "clock_control": "a RocketMQ 5 deployment runs on real time", "trace": "the deployment records no mqtck trace",
    "retention_control": REMOTING_FAMILIES,
}
#: A ``field: rule`` status message (how the reference's front writes a refusal).
_MESSAGE = re.compile(r"^(?P<field>[A-Za-z_][\w.\[\]]*): (?P<rule>.*)$", re.S)
#: Metadata every v5 client sends (the proxy reads the client id from it: ContextInitPipeline).
CLIENT_ID, LANGUAGE, PROTOCOL, CLIENT_VERSION, REQUEST_ID = (
    "x-mq-client-id", "x-mq-language", "x-mq-protocol", "x-mq-client-version", "x-mq-request-id")
#: What the target says it is.
CLIENT_VERSION_TEXT = "mqtck"
#: Deadline of a call that is not held, and what a held ReceiveMessage gets beyond its poll time.
CALL_TIMEOUT_S = 30.0
HOLD_SLACK_S = 15.0
#: How often a consumer sends Heartbeat (the v5 Java client's 10 s).
HEARTBEAT_INTERVAL_S = 10.0
#: How long a Telemetry stream may take to answer the settings it was opened with.
SETTINGS_TIMEOUT_S = 10.0


def target_error(code_name: str, message: str) -> TargetError:
    """A v5 refusal as the suite's neutral error."""
    m = _MESSAGE.match(message or "")
    field = V5_FIELD_NAMES.get(m["field"], m["field"]) if m else FIELD_OF_CODE.get(code_name, "")
    return TargetError(SUITE_CODE.get(code_name, code_name), field, m["rule"] if m else message)


#: Words of a refused Telemetry's prose message (the proxy's own: "group not found: G", "The specified group: G,
#: contains illegal characters") -> the request field it is about.
FIELD_IN_MESSAGE = (("group", "consumerGroup"), ("topic", "topic"), ("expression", "expression"))


def settings_error(grpc_code: str, message: str) -> TargetError:
    """A consumer's settings refused on its Telemetry stream (a gRPC status, not a v5 Status): its code, and the
    field its message names."""
    lowered = message.lower()
    field = next((f for word, f in FIELD_IN_MESSAGE if word in lowered), "settings")
    return TargetError(grpc_code, field, message)


class _Telemetry:
    """One client's Telemetry stream: opened with its settings, kept open while the target lives (the proxy
    drops a client's settings when its stream ends), and its Heartbeat every :data:`HEARTBEAT_INTERVAL_S` as a v5
    client sends it: a client silent for the broker's channelExpiredTimeout is dropped with its settings."""

    def __init__(self, stub: Any, stubs: protos.Stubs, grpc_module: Any, metadata: list[tuple[str, str]],
                 settings: Any) -> None:
        self._stopped = threading.Event()
        self._heartbeat = stubs.service.HeartbeatRequest(group=settings.subscription.group,
                                                         client_type=settings.client_type)
        self._stub, self._metadata = stub, metadata
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._outbox.put(stubs.service.TelemetryCommand(settings=settings))
        self._answered = threading.Event()
        self._grpc = grpc_module
        #: Why the stream ended, when it ended before it answered.
        self.failure: Any = None
        self._call = stub.Telemetry(self._commands(), metadata=metadata)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._answered.wait(SETTINGS_TIMEOUT_S):
            self.close()
            raise UnreachableTarget(f"the Telemetry stream did not answer its settings within {SETTINGS_TIMEOUT_S} s")
        threading.Thread(target=self._beat, daemon=True).start()

    def _beat(self) -> None:
        """Heartbeat until closed; a failed beat is retried at the next (the server may be restarting). A beat
        that wakes as the target closes finds its channel closed (ValueError from grpc, printed with a traceback
        by the thread in a mqtck diff run against the proxy): the stream is closing, nothing to retry."""
        while not self._stopped.wait(HEARTBEAT_INTERVAL_S):
            with contextlib.suppress(self._grpc.RpcError, ValueError):
                self._stub.Heartbeat(self._heartbeat, timeout=CALL_TIMEOUT_S, metadata=self._metadata)

    def _commands(self) -> Iterator[Any]:
        while (command := self._outbox.get()) is not None:
            yield command

    def _read(self) -> None:
        try:
            for _ in self._call:
                self._answered.set()
        except self._grpc.RpcError as exc:
            self.failure = exc  # the settings refused (INVALID_ARGUMENT), the server gone, or cancelled at close
            self._answered.set()

    def close(self) -> None:
        self._stopped.set()
        self._outbox.put(None)
        self._call.cancel()


class GrpcTarget:
    """The suite's PopTarget over a v5 MessagingService (see the module's docstring for what goes where)."""

    why_lacking = WHY_LACKING
    unseen = UNSEEN

    def __init__(self, address: str, remoting: str, name: str | None = None, control: str | None = None) -> None:
        import grpc  # type: ignore[import-untyped]

        self.name = name or f"grpc://{address}?remoting={remoting}"
        self.address = address
        self._remoting = RemotingTarget(remoting, name=self.name, control=control)
        runner = control_capabilities(control) if control else frozenset()
        self.capabilities = (self._remoting.capabilities & FROM_REMOTING) | (runner - NOT_OVER_GRPC)
        self._stubs = protos.load()
        self._grpc = grpc
        self._channel = grpc.insecure_channel(address)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=CALL_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            self._remoting.close()
            raise UnreachableTarget(f"no gRPC server answers at {address}") from None
        self._stub = self._stubs.grpc.MessagingServiceStub(self._channel)
        self._client_id = f"{self._remoting.namespaced('grpc')}-{uuid.uuid4().hex[:8]}"
        self._sessions: dict[tuple[str, str, str], tuple[str, _Telemetry]] = {}
        #: The message id of each receipt handle handed out, for the entries of an ack (the proxy keys by both).
        self._message_ids: dict[str, str] = {}
        #: The client that received each receipt handle: its ack and change come from that client, as in a v5
        #: consumer (the proxy's receipt-handle bookkeeping looks up the client's channel).
        self._holders: dict[str, str] = {}
        #: Groups created on the broker for the consumers' settings, and whether each is FIFO now.
        self._groups: dict[str, bool] = {}
        self._lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------------
    def _metadata(self, client_id: str) -> list[tuple[str, str]]:
        return [(CLIENT_ID, client_id), (LANGUAGE, "PYTHON"), (PROTOCOL, "v2"), (CLIENT_VERSION, CLIENT_VERSION_TEXT),
                (REQUEST_ID, uuid.uuid4().hex)]

    def _resource(self, name: str) -> Any:
        return self._stubs.definition.Resource(name=self._remoting.namespaced(name))

    def _code_name(self, status: Any) -> str:
        try:
            return str(self._stubs.definition.Code.Name(status.code))
        except ValueError:
            return str(status.code)

    def _unary(self, method: str, request: Any, client_id: str) -> Any:
        """Call a unary RPC; a transport failure is an AssertionError naming it (the suite fails on it)."""
        try:
            return getattr(self._stub, method)(request, timeout=CALL_TIMEOUT_S, metadata=self._metadata(client_id))
        except self._grpc.RpcError as exc:
            raise MalformedAnswer(f"{method}: the call failed with {exc.code()}: {exc.details()}") from None

    def _session(self, client_id: str, group: str, topic: str, expression: str) -> str:
        """The client id of a SIMPLE_CONSUMER of ``group`` subscribed to ``topic``, its settings sent once."""
        key = (client_id, group, topic)
        with self._lock:
            if key in self._sessions:
                return self._sessions[key][0]
        d = self._stubs.definition
        # The consumer is named by what it is (the namespace keeps targets apart), never by what the target did
        # before: two targets diffed in one process must name a consumer alike (mqtck diff compares members), and
        # a v5 client keeps its client id when it reconnects after a restart. Counters of sessions opened, per
        # process and then per target, named one consumer conformance-21 on the proxy and conformance-20 on the
        # reference after a dozen sequences (mqtck diff seed 2, with restarts).
        cid = f"{self._remoting.namespaced(client_id)}-{group}-{topic}"
        host, _, port = self.address.rpartition(":")
        settings = d.Settings(
            client_type=d.SIMPLE_CONSUMER,
            access_point=d.Endpoints(scheme=d.IPv4, addresses=[d.Address(host=host, port=int(port))]),
            request_timeout={"seconds": int(CALL_TIMEOUT_S)},
            subscription=d.Subscription(
                group=self._resource(group),
                subscriptions=[d.SubscriptionEntry(topic=self._resource(topic),
                                                   expression=d.FilterExpression(type=d.TAG, expression=expression))],
            ),
            user_agent=d.UA(language=d.PYTHON, version=CLIENT_VERSION_TEXT, platform="mqtck", hostname="mqtck"),
        )
        self._create_group(group)
        telemetry = _Telemetry(self._stub, self._stubs, self._grpc, self._metadata(cid), settings)
        if telemetry.failure is not None:
            failure = telemetry.failure
            raise settings_error(failure.code().name, str(failure.details()))
        with self._lock:
            self._sessions[key] = (cid, telemetry)
        return cid

    def _holder(self, group: str, topic: str, handle: str) -> str:
        """Who acknowledges ``handle``: the client it was handed to; for a handle this target did not receive over
        gRPC (a pop of one queue, a made-up handle), a consumer of ``group`` on ``topic`` when the group exists, or
        a client that sent no settings (a consumer of a group the broker does not know cannot start)."""
        if handle in self._holders:
            return self._holders[handle]
        if group in self._groups:
            return self._session("conformance", group, topic, "*")
        return self._client_id

    def _create_group(self, group: str, orderly: bool | None = None) -> None:
        """Create ``group`` on the broker as an operator does before a v5 consumer starts (``mqadmin updateSubGroup``):
        the proxy refuses the settings of a consumer whose group the broker does not know. ``orderly`` (when said)
        is its consumeMessageOrderly: a FIFO group, whose ReceiveMessage is an ordered pop; changed when it differs,
        as an operator changes a group (the proxy reads the config at every receive)."""
        known = self._groups.get(group)
        if known is not None and (orderly is None or known == orderly):
            return
        config = {"groupName": self._remoting.namespaced(group), "consumeEnable": True,
                  CONSUME_ORDERLY: bool(orderly)}
        body = json.dumps(config).encode("utf-8")
        client = RemotingClient(self._remoting.broker_addr)
        try:
            response = client.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body,
                                     timeout_s=CALL_TIMEOUT_S)
        finally:
            client.close()
        if response.code == ResponseCode.SUCCESS:  # a refused name is the proxy's to judge, at the settings
            self._groups[group] = bool(orderly)

    def _drop_sessions(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for _, telemetry in sessions:
            telemetry.close()

    # -- for a client that speaks gRPC itself (mqtck bench pop-wake) ---------------------------
    def wire_name(self, name: str) -> str:
        """``name`` (a topic's, a group's) as this target puts it on the wire: what a gRPC client of the same
        deployment must ask for. The composed remoting target namespaces every name, so a topic made by
        :meth:`create_topic` is routed under this name only (a QueryRoute for the bare name finds no topic)."""
        return self._remoting.namespaced(name)

    def consumer(self, group: str, topic: str) -> str:
        """The client id of a SIMPLE_CONSUMER of ``group`` subscribed to ``topic`` (every tag), its group created
        and its settings held by the server for as long as this target is open: a ReceiveMessage on this id, sent
        on any channel, is answered as the proxy answers an official SimpleConsumer's."""
        return self._session("conformance", group, topic, "*")

    # -- Target (the remoting protocol of the same deployment) ---------------------------------
    def create_topic(self, topic: str, queues: int) -> None:
        self._remoting.create_topic(topic, queues)

    def send(self, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> SendReceipt:
        return self._remoting.send(topic, queue_id, body, tags)

    def start_pull(self, group, topic, queue_id, offset, *, max_nums=32, expression="*", suspend_ms=0,
                   commit_offset=None, client_id="conformance"):  # type: ignore[no-untyped-def]
        """A pull over remoting: not a capability (the pull families judge the remoting protocol, which
        ``remoting://`` gates), but the suite's helpers read a queue with one to see that a send is visible."""
        return self._remoting.start_pull(group, topic, queue_id, offset, max_nums=max_nums, expression=expression,
                                         suspend_ms=suspend_ms, commit_offset=commit_offset, client_id=client_id)

    def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[str, int]:
        return self._remoting.query_offset(group, topic, queue_id)

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self._remoting.commit_offset(group, topic, queue_id, offset)

    def heartbeat(self, conn: str, client_id: str, group: str, subscriptions: dict[str, str],
                  model: str = "CLUSTERING", sub_version: int = 0) -> bool:
        return bool(self._remoting.heartbeat(conn, client_id, group, subscriptions, model, sub_version))

    def unregister(self, conn: str, group: str) -> None:
        self._remoting.unregister(conn, group)

    def consumer_ids(self, group: str) -> list[str]:
        return self._remoting.consumer_ids(group)

    def group_info(self, group: str) -> GroupInfo | None:
        return self._remoting.group_info(group)

    def notifications(self, conn: str) -> list[str]:
        return self._remoting.notifications(conn)

    def min_max(self, topic: str, queue_id: int) -> tuple[int, int]:
        return self._remoting.min_max(topic, queue_id)

    def delete_topic(self, topic: str) -> None:
        """DELETE_TOPIC_IN_BROKER over remoting (mqadmin deleteTopic): v5 has no admin RPC."""
        self._remoting.delete_topic(topic)

    def run_retention(self) -> None:
        self._remoting.run_retention()

    def advance(self, ms: int) -> None:
        time.sleep(ms / 1000.0)

    def clock_now_ms(self) -> int:
        raise RuntimeError(f"{self.name} lacks capability clock_control")

    def close(self) -> None:
        self._drop_sessions()
        self._channel.close()
        self._remoting.close()

    # -- the runner's control channel (through the composed target) ----------------------------
    def restart(self, kill: bool = False) -> None:
        """The runner restarts the broker (and the proxy around it): the Telemetry streams end with it, so each
        client sends its settings again at its next pop, as a v5 client does when it reconnects."""
        self._drop_sessions()
        self._remoting.restart(kill)

    def restart_torn(self, commit_log_offset: int) -> None:
        self._drop_sessions()
        self._remoting.restart_torn(commit_log_offset)

    def restart_fresh(self) -> None:
        self._drop_sessions()
        self._remoting.restart_fresh()

    def record_at(self, commit_log_offset: int) -> Any:
        return self._remoting.record_at(commit_log_offset)

    def expire_retention(self) -> int:
        return self._remoting.expire_retention()

    def store_layout(self) -> StoreLayout:
        return self._remoting.store_layout()

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        return self._remoting.configure(settings)

    def request_manual_delete(self) -> None:
        self._remoting.request_manual_delete()

    # -- pop ------------------------------------------------------------------------------------
    def pop(self, group: str, topic: str, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000,
            poll_ms: int = 0, client_id: str = "conformance", expression: str = "*") -> PendingPop:
        """ReceiveMessage of every queue, the group not FIFO; a pop of one named queue goes over remoting (v5 cannot
        name one)."""
        if queue_id != -1:
            pending = self._remoting.pop(group, topic, queue_id, max_nums, invisible_ms, poll_ms, client_id,
                                         expression)
            return _Remembering(self, pending, group, topic)
        return self._receive(group, topic, max_nums, invisible_ms, poll_ms, client_id, expression, orderly=False)

    def pop_orderly(self, group: str, topic: str, queue_id: int = -1, max_nums: int = 32,
                    invisible_ms: int = 60_000, poll_ms: int = 0) -> PendingPop:
        """An ordered pop: ReceiveMessage of every queue by the group made FIFO (consumeMessageOrderly), as the
        proxy pops for a FIFO group; one named queue goes over remoting's ordered POP_MESSAGE."""
        if queue_id != -1:
            pending = self._remoting.pop(group, topic, queue_id, max_nums, invisible_ms, poll_ms, order=True)
            return _Remembering(self, pending, group, topic)
        return self._receive(group, topic, max_nums, invisible_ms, poll_ms, "conformance", "*", orderly=True)

    def _receive(self, group: str, topic: str, max_nums: int, invisible_ms: int, poll_ms: int, client_id: str,
                 expression: str, orderly: bool) -> PendingPop:
        d = self._stubs.definition
        self._create_group(group, orderly)
        cid = self._session(client_id, group, topic, expression)
        request = self._stubs.service.ReceiveMessageRequest(
            group=self._resource(group),
            message_queue=d.MessageQueue(topic=self._resource(topic), id=-1),
            filter_expression=d.FilterExpression(type=d.TAG, expression=expression),
            batch_size=max_nums, auto_renew=False,
        )
        request.invisible_duration.FromMilliseconds(invisible_ms)
        request.long_polling_timeout.FromMilliseconds(poll_ms)
        out: Future[PopReply] = Future()
        started = time.monotonic()
        call = self._stub.ReceiveMessage(request, timeout=max(poll_ms, 0) / 1000 + HOLD_SLACK_S,
                                         metadata=self._metadata(cid))

        def read() -> None:
            try:
                out.set_result(self._pop_reply(call, topic, cid, started))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                out.set_exception(exc)

        threading.Thread(target=read, daemon=True).start()
        pending = _PendingRemoting(out, poll_ms)
        if poll_ms <= 0:
            pending.done()  # answered at once, a refusal surfaces at result() like the remoting target's
        return pending

    def _pop_reply(self, call: Any, topic: str, cid: str, started: float) -> PopReply:
        status_name, status_message, messages = "", "", []
        try:
            for response in call:
                kind = response.WhichOneof("content")
                if kind == "status":
                    status_name, status_message = self._code_name(response.status), response.status.message
                elif kind == "message":
                    messages.append(self._popped(response.message, topic, cid))
        except self._grpc.RpcError as exc:
            raise MalformedAnswer(f"ReceiveMessage: the stream failed with {exc.code()}: {exc.details()}") from None
        held_ms = int((time.monotonic() - started) * 1000)
        if status_name not in RECEIVE_OUTCOMES:
            if not status_name:
                raise MalformedAnswer("ReceiveMessage: the stream ended without a status")
            raise target_error(status_name, status_message)
        return PopReply(RECEIVE_OUTCOMES[status_name], tuple(messages), 0, held_ms)

    def _popped(self, message: Any, topic: str, cid: str) -> PoppedRecord:
        sp = message.system_properties
        handle = sp.receipt_handle
        fields = handle.split(" ")
        mark = fields[4] if len(fields) > 4 else NORMAL_MARK
        self._message_ids[handle] = sp.message_id
        self._holders[handle] = cid
        return PoppedRecord(
            topic=topic, queue_id=sp.queue_id, queue_offset=sp.queue_offset, body=bytes(message.body),
            tags=sp.tag if sp.HasField("tag") else None, msg_id=sp.message_id, handle=handle,
            reconsume_times=max(sp.delivery_attempt - 1, 0), retry=mark != NORMAL_MARK,
            properties=dict(message.user_properties),
        )

    def remember(self, reply: PopReply, group: str, topic: str) -> None:
        """Keep the message ids of a pop over remoting's handles, and give them to a gRPC consumer of the group."""
        self._create_group(group)
        for m in reply.messages:
            self._message_ids[m.handle] = m.msg_id
            self._holders[m.handle] = self._holder(group, topic, m.handle)

    def ack(self, group: str, topic: str, handle: str) -> None:
        entry = self._stubs.service.AckMessageEntry(message_id=self._message_ids.get(handle, ""), receipt_handle=handle)
        request = self._stubs.service.AckMessageRequest(group=self._resource(group), topic=self._resource(topic),
                                                        entries=[entry])
        response = self._unary("AckMessage", request, self._holder(group, topic, handle))
        status = response.entries[0].status if response.entries else response.status
        if self._code_name(status) != "OK":
            raise target_error(self._code_name(status), status.message)

    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str:
        request = self._stubs.service.ChangeInvisibleDurationRequest(
            group=self._resource(group), topic=self._resource(topic), receipt_handle=handle,
            message_id=self._message_ids.get(handle, ""),
        )
        request.invisible_duration.FromMilliseconds(invisible_ms)
        response = self._unary("ChangeInvisibleDuration", request, self._holder(group, topic, handle))
        if self._code_name(response.status) != "OK":
            raise target_error(self._code_name(response.status), response.status.message)
        new = str(response.receipt_handle)
        self._message_ids[new] = self._message_ids.get(handle, "")
        self._holders[new] = self._holder(group, topic, handle)
        return new

    def query_assignment(self, group: str, topic: str, client_id: str, strategy: str = "AllocateMessageQueueAveragely",
                         pop_share_queue_num: int = -1, model: str = "CLUSTERING",
                         mode: str = "POP") -> list[tuple[str, str, int]]:
        return self._remoting.query_assignment(group, topic, client_id, strategy, pop_share_queue_num, model, mode)


class _Remembering:
    """A pop over remoting whose handles' message ids are kept for the gRPC acks of them."""

    def __init__(self, target: GrpcTarget, pending: _PendingRemoting, group: str, topic: str) -> None:
        self._pending = pending
        self._target = target
        self._group, self._topic = group, topic

    def done(self) -> bool:
        return self._pending.done()

    def result(self) -> PopReply:
        reply: PopReply = self._pending.result()
        self._target.remember(reply, self._group, self._topic)
        return reply
