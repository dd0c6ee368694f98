"""A target that speaks the RocketMQ 4.x remoting protocol: any broker reachable through its name server.

``remoting://HOST:PORT`` names the **name server**. The target asks it for the route of ``TBW102`` (the
auto-create topic every client asks about, protocols/rocketmq-remoting.md §4) to learn the master broker's
address, and from then on talks to that broker directly. It never looks up the route of a suite topic,
because a name server that auto-creates topics on lookup (the reference's, Java's with
``autoCreateTopicEnable``) would create topics the suite expects to be absent.

What the wire cannot carry, and how the target fills it in (each is what a Java client could observe):

* ``PullReply.status`` (the GetMessageStatus): derived from the response code, the requested offset and the
  ``minOffset``/``maxOffset`` the broker reports (:func:`reference.rules.codes.derive_status`);
* ``PullReply.held_ms``: measured here, request written to response read (loopback adds well under 1 ms);
* ``heartbeat(...) -> changed``: a RocketMQ broker notifies every member of a group whose membership or
  subscriptions changed (NOTIFY_CONSUMER_IDS_CHANGED, §5.12), including the member that caused it, and writes
  that notification before the heartbeat's response on the same connection; so a heartbeat changed the group
  exactly when a notification for the group arrived on its connection while it was processed;
* refusals: the broker's response code gives ``TargetError.code`` (its RocketMQ name) and a remark of the form
  ``field: rule`` (how the reference writes an InvalidRequest) gives the field.

Isolation and naming as in :mod:`conformance.targets.http`: every topic, group, client id and connection name
is prefixed with a namespace unique to the target instance. One TCP connection carries the suite's data
requests; each ``conn`` of the suite gets its own connection, whose NOTIFY frames are its notifications.

Capabilities are what the protocol allows: no clock or retention control (``advance`` sleeps), no restart,
no allocation or permits, no race control; ``pop`` when the broker serves RocketMQ 5's POP codes (asked once
with a pop of a topic that does not exist: a 4.x broker answers REQUEST_CODE_NOT_SUPPORTED). Receipt handles
are built from a pop's answer as the Java 5 client builds them (ExtraInfoUtil's ``extraInfo``), and a group's
assignment is asked after setting its request mode to POP, as an operator's ``mqadmin setConsumeMode`` does.
What the protocol cannot do, the broker's runner may offer
through its control channel (``remoting://HOST:PORT?control=HOST:CPORT``, :mod:`conformance.targets.control`):
``restart`` (and so ``kill_restart``), ``retention_expire``, ``retention_control`` (a clean run on
request), ``store_layout``, ``race_control`` (a race placed between a pull's lookup and its hold) and
``clock_control`` (a runner on simulated time,
:mod:`conformance.targets.sim_time`) are then capabilities too, and after a restart the target reconnects every
connection (the broker's address stays the same). The commit-log offset of a sent message comes from the offset
msgId of the send response, that of a pulled one from its
PHYSICALOFFSET.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from reference.allocation.registry import strategy_class
from reference.broker.protocol import PullSysFlag
from reference.net.remoting.client import RemotingClient, split_address
from reference.net.remoting.command import RemotingCommand, RequestCode, loads_body
from reference.net.remoting.message_codec import CodecError, DecodedRecord, decode_records, encode_properties
from reference.rules.codes import ResponseCode, derive_status
from reference.rules.filter import tags_hash_code
from reference.rules.topics import POP_RETRY_SEPARATOR_V2, is_retry_topic, pop_retry_topic, pop_retry_topic_v2

from . import (
    HOLD_SLACK_MS,
    CommitLogRecord,
    GroupInfo,
    MalformedAnswer,
    PoppedRecord,
    PopReply,
    PulledMessage,
    PullReply,
    SendReceipt,
    StoreLayout,
    TargetError,
)
from .control import ControlClient, ControlDescription, ControlError
from .http import ADVANCE_STEP_MS, UnreachableTarget
from .sim_time import HoldStamp, SimulatedTime

#: The auto-create topic every RocketMQ client asks the name server about (§4); its route names the broker.
DEFAULT_TOPIC = "TBW102"
#: Broker id of the master in ``brokerAddrs`` (§4).
MASTER_ID = "0"
#: perm = READ | WRITE (§4).
PERM_READ_WRITE = 6
#: Producer group the target's sends name.
PRODUCER_GROUP = "mqtck-conformance"
#: How long ``done()`` waits for an answer already on its way (as the HTTP target).
SETTLE_S = 0.25
#: Wait for a response that is not a held pull.
REQUEST_TIMEOUT_S = 30.0
#: How often a request the broker refused unrun (SYSTEM_BUSY) is sent, and the first pause between two tries
#: (each pause one step longer: 0.2, 0.4, 0.6 s ...).
BUSY_ATTEMPTS = 5
BUSY_PAUSE_S = 0.2
#: The remarks of a SYSTEM_BUSY answer to a request the broker never ran (Apache RocketMQ's BrokerFastFailure
#: cleaning its queues of requests that waited too long, and NettyRemotingServer's rejectRequest): sending it again
#: changes nothing that the first did.
UNRUN_BUSY_REMARKS = ("[TIMEOUT_CLEAN_QUEUE]", "[PCBUSY_CLEAN_QUEUE]", "[REJECTREQUEST]", "[OVERLOAD]")
#: How much later than its hold time a held request may be answered: RocketMQ's PullRequestHoldService checks
#: every 5 s (long polling), and a loaded machine adds seconds.
HOLD_SLACK_S = 15.0
#: The remark shape of a refused request: ``field: rule``.
_REMARK = re.compile(r"^(?P<field>[A-Za-z_][\w.\[\]]*): (?P<rule>.*)$", re.S)
#: Header / heartbeat-body field names a remoting broker names in refusals -> the suite's neutral names.
FIELD_NAMES = {
    "messageModel": "consumerData.messageModel", "groupName": "consumerData.groupName",
    "consumeType": "consumerData.consumeType", "subString": "expression", "subscription": "expression",
}
CAPABILITIES = frozenset({"pull", "long_poll", "query_offset", "commit_offset", "consumer_registry",
                          "remoting_wire", "channel_close"})
#: ExtraInfoUtil's marks of a popped message's topic: the topic, its v1 retry topic, its v2 retry topic.
NORMAL_MARK, RETRY_MARK, RETRY_V2_MARK = "0", "1", "2"
#: The property in which a RocketMQ 5 broker hands a retried message's receipt handle (MessageConst.PROPERTY_POP_CK).
PROPERTY_POP_CK = "POP_CK"
#: ConsumeInitMode.MIN: a group's first pop of a queue starts at its min offset (POP-4).
INIT_MODE_MIN = 0
#: Refusal codes of an ack or a change of invisible time that mean "this handle names no in-flight message".
HANDLE_REFUSALS = ("NO_MESSAGE",)
_namespaces = itertools.count()


def code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


def _refused_unrun(response: RemotingCommand) -> bool:
    return response.code == ResponseCode.SYSTEM_BUSY and (response.remark or "").startswith(UNRUN_BUSY_REMARKS)


def target_error(response: RemotingCommand) -> TargetError:
    """A refusal as the suite's neutral error: the code's name and the field the remark names."""
    m = _REMARK.match(response.remark or "")
    name = code_name(response.code)
    if name == "INVALID_PARAMETER":
        name = "INVALID_ARGUMENT"
    if m is None:
        return TargetError(name, "", response.remark or "")
    return TargetError(name, FIELD_NAMES.get(m["field"], m["field"]), m["rule"])


def ext_int(ext: dict[str, str], key: str, default: int = 0) -> int:
    """An integer header field of an answer, ``default`` when it is missing or not a number."""
    try:
        return int(ext.get(key, default))
    except ValueError:
        return default


class _PendingRemoting:
    """A pull or a pop in flight. Its answer is due by its hold time (suspend or poll time) plus one check of
    the broker's hold service; :data:`HOLD_SLACK_S` later it counts as never answered. With clock control
    (``sim``), simulated time is advanced until the answer comes, within the hold time plus
    :data:`~conformance.targets.HOLD_SLACK_MS`, and the hold is measured in simulated time."""

    def __init__(self, future: Future[Any], hold_ms: int = 0, sim: SimulatedTime | None = None,
                 stamp: HoldStamp | None = None) -> None:
        self._future = future
        self._hold_ms = hold_ms
        self._wait_s = max(REQUEST_TIMEOUT_S, hold_ms / 1000 + HOLD_SLACK_S)
        self._sim = sim
        self._stamp = stamp

    def done(self) -> bool:
        try:
            self._future.result(timeout=SETTLE_S)
        except FutureTimeout:
            return False
        except TargetError:
            return True
        return True

    def result(self) -> Any:
        if self._sim is not None and self._stamp is not None:
            return self._simulated_result(self._sim, self._stamp)
        try:
            return self._future.result(timeout=self._wait_s)
        except FutureTimeout:
            raise AssertionError(f"no answer {self._wait_s:.0f} s after the request (its hold time plus "
                                 f"{HOLD_SLACK_S:.0f} s)") from None

    def _simulated_result(self, sim: SimulatedTime, stamp: HoldStamp) -> Any:
        waited, limit = 0, self._hold_ms + HOLD_SLACK_MS
        if not self.done():  # an answer written at once may still be on its way: it belongs to this instant
            while not self._future.done():
                if waited > limit:
                    raise AssertionError(f"held request not answered within {limit} ms of simulated time")
                sim.advance(ADVANCE_STEP_MS)
                waited += ADVANCE_STEP_MS
        value = self._future.result(timeout=REQUEST_TIMEOUT_S)
        return dataclasses.replace(value, held_ms=stamp.held_ms)


class RemotingTarget:
    capabilities = CAPABILITIES

    def __init__(self, namesrv: str, name: str | None = None, control: str | None = None) -> None:
        self.namesrv = namesrv
        self.name = name or f"remoting://{namesrv}"
        self._ns = f"n{os.getpid()}x{next(_namespaces)}-"
        self.broker_addr, self.broker_name = discover_route(namesrv)
        #: The runner's control channel, and what it offers (None without one).
        self._control = ControlClient(control) if control else None
        self._offer: ControlDescription | None = describe_control(control) if control else None
        self.capabilities = wire_capabilities(self.broker_addr, namesrv)
        if self._offer is not None:
            self.capabilities = self.capabilities | offered_capabilities(self._offer)
        #: The runner's simulated clock, when it offers clock control.
        self._sim = SimulatedTime(self._control) if self._control and "clock_control" in self.capabilities else None
        #: Where this target's part of the runner's trace begins (capability ``trace``).
        self._trace_from = self._control.trace(TRACE_END)[1] if self._control and "trace" in self.capabilities else 0
        self._main = self._connect()
        self._conns: dict[str, RemotingClient] = {}
        self._client_of_conn: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------------
    def _connect(self) -> RemotingClient:
        try:
            return RemotingClient(self.broker_addr)
        except OSError as exc:
            raise UnreachableTarget(f"broker {self.broker_addr} (from {self.namesrv}): {exc}") from None

    def _n(self, name: str) -> str:
        return f"{self._ns}{name}" if name else name

    def namespaced(self, name: str) -> str:
        """``name`` as this target puts it on the wire (its namespace prefix): for tests that write raw frames."""
        return self._n(name)

    def _strip(self, name: str) -> str:
        return name[len(self._ns):] if name.startswith(self._ns) else name

    def _call(self, code: int, ext: dict[str, Any], body: bytes = b"", client: RemotingClient | None = None,
              ok: tuple[int, ...] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
        response = self._invoke(client or self._main, code, ext, body)
        if response.code not in ok:
            raise target_error(response)
        return response

    @staticmethod
    def _invoke(client: RemotingClient, code: int, ext: dict[str, Any], body: bytes = b"") -> RemotingCommand:
        """One request, sent again (up to BUSY_ATTEMPTS, with a growing pause) while the broker answers it
        SYSTEM_BUSY without having run it: its flow control on a loaded machine, which RocketMQ's own clients retry
        too. A verdict must not hang on the machine's load (a CI run's proxy gate failed PACK-9 on one)."""
        for attempt in range(1, BUSY_ATTEMPTS):
            response = client.invoke(code, ext, body, timeout_s=REQUEST_TIMEOUT_S)
            if not _refused_unrun(response):
                return response
            time.sleep(BUSY_PAUSE_S * attempt)
        return client.invoke(code, ext, body, timeout_s=REQUEST_TIMEOUT_S)

    def _conn(self, conn: str) -> RemotingClient:
        with self._lock:
            if conn not in self._conns:
                self._conns[conn] = self._connect()
            return self._conns[conn]

    # -- Target --------------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int) -> None:
        self._call(RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": self._n(topic), "defaultTopic": DEFAULT_TOPIC, "readQueueNums": queues,
            "writeQueueNums": queues, "perm": PERM_READ_WRITE, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0,
            "order": "false",
        })

    def send(self, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> SendReceipt:
        uniq = uuid.uuid4().hex.upper()
        props = {"UNIQ_KEY": uniq, "WAIT": "true"}
        if tags is not None:
            props["TAGS"] = tags
        r = self._call(RequestCode.SEND_MESSAGE, {
            "producerGroup": PRODUCER_GROUP, "topic": self._n(topic), "defaultTopic": DEFAULT_TOPIC,
            "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": 0,
            "bornTimestamp": str(int(time.time() * 1000)), "flag": 0, "properties": encode_properties(props),
            # Booleans as the Java client writes them (Boolean.toString): RocketMQ's Java broker also reads "0" as
            # false, rocketmq-rust refuses it (PROTOCOL_HEADER_INVALID).
            "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
        }, body)
        return SendReceipt(ext_int(r.ext_fields, "queueId"), ext_int(r.ext_fields, "queueOffset"), uniq,
                           commit_log_offset_of(r.ext_fields.get("msgId", "")))

    def start_pull(self, group, topic, queue_id, offset, *, max_nums=32, expression="*", suspend_ms=0,
                   commit_offset=None, client_id="conformance"):  # type: ignore[no-untyped-def]
        flag = PullSysFlag.of(suspend_ms=suspend_ms, subscription=expression, commit_offset=commit_offset)
        ext: dict[str, Any] = {
            "consumerGroup": self._n(group), "topic": self._n(topic), "queueId": queue_id,
            "queueOffset": str(offset), "maxMsgNums": max_nums, "sysFlag": int(flag),
            "commitOffset": str(commit_offset if commit_offset is not None else 0),
            "suspendTimeoutMillis": str(suspend_ms), "subVersion": "0",
        }
        if expression is not None:
            ext["subscription"] = expression
        # A refusal comes back at once; surface it here, as the in-process target does.
        return self._held(RequestCode.PULL_MESSAGE, ext, lambda r, held_ms: self._pull_reply(r, offset, held_ms),
                          suspend_ms, settle=True)

    def start_pull_racing(self, group: str, topic: str, queue_id: int, offset: int, sends: list[tuple[bytes, str]],
                          *, expression: str = "*", suspend_ms: int = 15_000) -> _PendingRemoting:
        """A held pull with ``sends`` stored after the broker found nothing and before it holds the request
        (RocketMQ issue #7358's interleaving), placed by the runner (capability ``race_control``)."""
        self._controlled("race_control").race_pull(self._n(topic), queue_id, list(sends))
        return self.start_pull(group, topic, queue_id, offset, expression=expression, suspend_ms=suspend_ms)

    def _held(self, code: int, ext: dict[str, Any], parse: Any, hold_ms: int, settle: bool) -> _PendingRemoting:
        """Send a request that may be held (a pull, a pop); its answer, parsed with the time it was held, comes
        through the returned pending. ``settle``: wait a moment here for an answer already on its way."""
        started = time.monotonic()
        stamp = self._sim.stamp() if self._sim is not None else None
        wire = self._main.invoke_async(code, ext)
        out: Future[Any] = Future()

        def finish(f: Future[RemotingCommand]) -> None:
            if self._sim is not None and stamp is not None:
                self._sim.arrived(stamp)
            try:
                out.set_result(parse(f.result(), int((time.monotonic() - started) * 1000)))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                out.set_exception(exc)

        wire.add_done_callback(finish)
        if settle:
            with contextlib.suppress(FutureTimeout):
                out.result(timeout=SETTLE_S)
        return _PendingRemoting(out, hold_ms, self._sim, stamp)

    @staticmethod
    def _pull_reply(response: RemotingCommand, offset: int, held_ms: int) -> PullReply:
        moved_codes = (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
                       ResponseCode.PULL_OFFSET_MOVED)
        if response.code not in moved_codes:
            raise target_error(response)
        ext = response.ext_fields
        lo, hi = ext_int(ext, "minOffset"), ext_int(ext, "maxOffset")
        messages: tuple[PulledMessage, ...] = ()
        if response.code == ResponseCode.SUCCESS:
            try:
                records = decode_records(response.body)
            except CodecError as exc:
                raise MalformedAnswer(f"PULL_MESSAGE body does not decode: {exc}") from None
            messages = tuple(PulledMessage(r.queue_offset, r.body, r.tags, r.msg_id, r.commit_log_offset)
                             for r in records)
        return PullReply(
            code=code_name(response.code), status=derive_status(response.code, offset, lo, hi),
            next_begin_offset=ext_int(ext, "nextBeginOffset"), min_offset=lo, max_offset=hi, messages=messages,
            held_ms=held_ms,
        )

    def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[str, int]:
        r = self._call(RequestCode.QUERY_CONSUMER_OFFSET,
                       {"consumerGroup": self._n(group), "topic": self._n(topic), "queueId": queue_id},
                       ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        if r.code == ResponseCode.QUERY_NOT_FOUND:
            return "QUERY_NOT_FOUND", -1
        return "SUCCESS", ext_int(r.ext_fields, "offset")

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        ext = {"consumerGroup": self._n(group), "topic": self._n(topic), "queueId": queue_id,
               "commitOffset": str(offset)}
        ok = (ResponseCode.SUCCESS, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
        if self._call(RequestCode.UPDATE_CONSUMER_OFFSET, ext, ok=ok).code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
            # RocketMQ 5 commits only for a group it knows (ConsumerManageProcessor.updateConsumerOffset); a real
            # consumer's group exists by then (created by its heartbeat, or by an operator). Create it as an
            # operator would, then commit.
            self._call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                       json.dumps({"groupName": self._n(group), "consumeEnable": True}).encode("utf-8"))
            self._call(RequestCode.UPDATE_CONSUMER_OFFSET, ext)

    def heartbeat(self, conn, client_id, group, subscriptions, model="CLUSTERING", sub_version=0):  # type: ignore[no-untyped-def]
        client = self._conn(conn)
        subs = [subscription_data(self._n(t), e, sub_version) for t, e in sorted(subscriptions.items())]
        body = {
            "clientID": self._n(client_id),
            "consumerDataSet": [{
                "groupName": self._n(group), "consumeType": "CONSUME_PASSIVELY", "messageModel": model,
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": subs,
                # Every Java client's ConsumerData carries it; rocketmq-rust refuses a heartbeat without it.
                "unitMode": False,
            }],
        }
        before = len(self._notified(client, group))
        self._call(RequestCode.HEART_BEAT, {}, json.dumps(body).encode("utf-8"), client=client)
        self._client_of_conn[conn] = client_id
        return len(self._notified(client, group)) > before

    def _notified(self, client: RemotingClient, group: str) -> list[str]:
        ns_group = self._n(group)
        return [r.ext_fields.get("consumerGroup", "") for r in list(client.server_requests)
                if r.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED and r.ext_fields.get("consumerGroup") == ns_group]

    def unregister(self, conn: str, group: str) -> None:
        self._call(RequestCode.UNREGISTER_CLIENT, {
            "clientID": self._n(self._client_of_conn.get(conn, "")), "producerGroup": "",
            "consumerGroup": self._n(group),
        }, client=self._conn(conn))

    def close_conn(self, conn: str) -> None:
        """Close ``conn``'s TCP connection, as a consumer process that exits does (capability remoting_wire):
        the broker sees its channel close."""
        with self._lock:
            client = self._conns.pop(conn, None)
        if client is not None:
            client.close()
        self._client_of_conn.pop(conn, None)

    def consumer_ids(self, group: str) -> list[str]:
        r = self._main.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": self._n(group)},
                              timeout_s=REQUEST_TIMEOUT_S)
        if r.code != ResponseCode.SUCCESS or not r.body:
            return []  # Java answers an error ("no consumer") for a group without members
        ids = loads_body(r.body).get("consumerIdList") or []
        return sorted(self._strip(str(c)) for c in ids)

    def group_info(self, group: str) -> GroupInfo | None:
        """GET_CONSUMER_CONNECTION_LIST (mqadmin consumerConnection): CONSUMER_NOT_ONLINE when the broker keeps no
        such group, else its connections and stored subscriptions (ConsumerConnection)."""
        r = self._call(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": self._n(group)},
                       ok=(ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE))
        if r.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return None
        try:
            doc = loads_body(r.body)
            ids = sorted(self._strip(str(c["clientId"])) for c in doc.get("connectionSet") or [])
            subs = {self._strip(str(topic)): (str(sub["subString"]), int(sub.get("subVersion", 0)))
                    for topic, sub in (doc.get("subscriptionTable") or {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MalformedAnswer(f"GET_CONSUMER_CONNECTION_LIST {group}: {exc!r} in {r.body[:200]!r}") from None
        return GroupInfo(tuple(ids), subs)

    def notifications(self, conn: str) -> list[str]:
        """The groups of the NOTIFY frames this connection received, after a read-only round trip on it.

        The round trip is a barrier: a notification caused by a request on *another* connection was written
        to this one before that request's response, so it arrives here before the barrier's response.
        """
        client = self._conn(conn)
        client.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": self._n("barrier")},
                      timeout_s=REQUEST_TIMEOUT_S)
        return [self._strip(r.ext_fields.get("consumerGroup", "")) for r in list(client.server_requests)
                if r.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]

    def min_max(self, topic: str, queue_id: int) -> tuple[int, int]:
        ext = {"topic": self._n(topic), "queueId": queue_id}
        lo = self._call(RequestCode.GET_MIN_OFFSET, ext)
        hi = self._call(RequestCode.GET_MAX_OFFSET, ext)
        return ext_int(lo.ext_fields, "offset"), ext_int(hi.ext_fields, "offset")

    def advance(self, ms: int) -> None:
        """Simulated time moves when the runner offers clock control (``mqtck broker --sim-clock``); otherwise
        the protocol has none and real time passes."""
        if self._sim is not None:
            self._sim.advance(ms)
        else:
            time.sleep(ms / 1000.0)

    def clock_now_ms(self) -> int:
        if self._sim is None:
            raise RuntimeError(f"{self.name} lacks capability clock_control: its runner is on real time")
        return self._sim.now_ms

    def close(self) -> None:
        for client in [self._main, *self._conns.values()]:
            client.close()

    # -- pop (RocketMQ 5: capability "pop" when the broker serves POP_MESSAGE) -----------------
    def pop(self, group, topic, queue_id=-1, max_nums=32, invisible_ms=60_000, poll_ms=0,
            client_id="conformance", expression="*", order=False):  # type: ignore[no-untyped-def]
        """POP_MESSAGE as a Java 5 client sends it; the handles are built from the answer as its
        ``processPopResponse`` builds them (RocketMQ's ExtraInfoUtil layout)."""
        ext: dict[str, Any] = {
            "consumerGroup": self._n(group), "topic": self._n(topic), "queueId": queue_id, "maxMsgNums": max_nums,
            "invisibleTime": str(invisible_ms), "pollTime": str(poll_ms), "bornTime": str(int(time.time() * 1000)),
            "initMode": INIT_MODE_MIN, "expType": "TAG", "exp": expression,
        }
        if order:
            ext["order"] = "true"
        # Answered at once, a refusal surfaces here; a held pop's surfaces at result(), so that a thousand held
        # pops (POP-7) need no wait each.
        return self._held(RequestCode.POP_MESSAGE, ext, lambda r, held_ms: self._pop_reply(r, topic, held_ms),
                          poll_ms, settle=poll_ms <= 0)

    def pop_orderly(self, group, topic, queue_id=-1, max_nums=32, invisible_ms=60_000, poll_ms=0):  # type: ignore[no-untyped-def]
        """An ordered POP_MESSAGE (the header's ``order``), as the Java 5 client's popOrderly sends it."""
        return self.pop(group, topic, queue_id, max_nums, invisible_ms, poll_ms, order=True)

    def delete_topic(self, topic: str) -> None:
        """DELETE_TOPIC_IN_BROKER, as ``mqadmin deleteTopic`` sends it to each broker."""
        self._call(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": self._n(topic)})

    def create_group(self, group: str) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with default settings, as ``mqadmin updateSubGroup`` sends it."""
        self._call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                   json.dumps({"groupName": self._n(group), "consumeEnable": True}).encode("utf-8"))

    def delete_group(self, group: str) -> None:
        """DELETE_SUBSCRIPTIONGROUP (207), as ``mqadmin deleteSubGroup`` sends it: the offsets stay."""
        self._call(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": self._n(group), "cleanOffset": "false"})

    def _pop_reply(self, response: RemotingCommand, topic: str, held_ms: int) -> PopReply:
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.POLLING_FULL, ResponseCode.POLLING_TIMEOUT,
                                 ResponseCode.PULL_NOT_FOUND):
            raise target_error(response)
        ext = response.ext_fields
        rest = ext_int(ext, "restNum")
        if response.code != ResponseCode.SUCCESS:
            return PopReply(code_name(response.code), (), rest, held_ms)
        try:
            records = decode_records(response.body)
        except CodecError as exc:
            raise MalformedAnswer(f"POP_MESSAGE body does not decode: {exc}") from None
        messages = []
        for r, (handle, mark) in zip(records, pop_handles(ext, records, self.broker_name), strict=True):
            messages.append(PoppedRecord(
                topic=topic, queue_id=r.queue_id, queue_offset=r.queue_offset, body=r.body, tags=r.tags,
                msg_id=r.msg_id, handle=handle, reconsume_times=r.reconsume_times, retry=mark != NORMAL_MARK,
                properties=dict(r.properties),
            ))
        return PopReply("SUCCESS", tuple(messages), rest, held_ms, queue_order_counts(ext.get("orderCountInfo")))

    def _handle_header(self, group: str, topic: str, handle: str) -> dict[str, Any]:
        """The header of an ack or change of invisible time, as the Java client fills it from the handle: the
        topic it was read from (the retry topic for a retried message), its queue id and offset. A handle
        that is not one is sent as it is (queue and offset 0): the broker judges it."""
        parts = handle.split(" ")
        queue_id, offset, mark = 0, 0, NORMAL_MARK
        if len(parts) == 8 and parts[6].isdigit() and parts[7].isdigit():
            queue_id, offset, mark = int(parts[6]), int(parts[7]), parts[4]
        real_topic = self._n(topic)
        if mark == RETRY_MARK:
            real_topic = pop_retry_topic(self._n(group), self._n(topic))
        elif mark == RETRY_V2_MARK:
            real_topic = pop_retry_topic_v2(self._n(group), self._n(topic))
        return {"consumerGroup": self._n(group), "topic": real_topic, "queueId": queue_id, "offset": str(offset),
                "extraInfo": handle}

    def ack(self, group: str, topic: str, handle: str) -> None:
        response = self._invoke(self._main, RequestCode.ACK_MESSAGE, self._handle_header(group, topic, handle))
        if response.code != ResponseCode.SUCCESS:
            raise handle_error(response)

    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str:
        ext = self._handle_header(group, topic, handle)
        ext["invisibleTime"] = str(invisible_ms)
        response = self._invoke(self._main, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ext)
        if response.code != ResponseCode.SUCCESS:
            raise handle_error(response)
        r = response.ext_fields
        mark = handle.split(" ")[4]
        # As the Java client's changeInvisibleTimeAsync: the new checkpoint starts at the message's offset.
        return (f"{ext['offset']} {r.get('popTime', '0')} {r.get('invisibleTime', '0')} {r.get('reviveQid', '0')} "
                f"{mark} {self.broker_name} {ext['queueId']} {ext['offset']}")

    def query_assignment(self, group, topic, client_id, strategy="AllocateMessageQueueAveragely",
                         pop_share_queue_num=-1, model="CLUSTERING", mode="POP"):  # type: ignore[no-untyped-def]
        """SET_MESSAGE_REQUEST_MODE (``mode`` POP with ``pop_share_queue_num``, or PULL), as an operator's
        ``mqadmin setConsumeMode`` would, then QUERY_ASSIGNMENT. RocketMQ answers a query it cannot allocate (no
        consumer, unknown topic or strategy) with SUCCESS and no assignment set ("skip this round"): that is a
        refusal here."""
        request_mode = {"topic": self._n(topic), "consumerGroup": self._n(group), "mode": mode,
                        "popShareQueueNum": pop_share_queue_num}
        self._call(RequestCode.SET_MESSAGE_REQUEST_MODE, {}, json.dumps(request_mode).encode("utf-8"))
        body = {"topic": self._n(topic), "consumerGroup": self._n(group), "clientId": self._n(client_id),
                "strategyName": wire_strategy_name(strategy), "messageModel": model}
        r = self._call(RequestCode.QUERY_ASSIGNMENT, {}, json.dumps(body).encode("utf-8"))
        assignments = loads_body(r.body).get("messageQueueAssignments") if r.body else None
        if assignments is None:
            raise TargetError("NO_ASSIGNMENT", "", "the broker answered no assignment set (nothing to allocate)")
        queues = {(self._strip(str(a["messageQueue"]["topic"])), str(a["messageQueue"]["brokerName"]),
                   int(a["messageQueue"]["queueId"])) for a in assignments}
        return sorted(queues, key=lambda q: (q[0], q[1], q[2]))

    # -- through the runner's control channel --------------------------------------------------
    def _controlled(self, capability: str) -> ControlClient:
        if self._control is None or capability not in self.capabilities:
            raise RuntimeError(f"{self.name} lacks capability {capability}: its runner offers no control for it")
        return self._control

    def restart(self, kill: bool = False) -> None:
        """The runner restarts the broker (``kill``: as after SIGKILL); then every connection is made again.
        Held pulls of before are failed; consumers must heartbeat again, as after any broker restart."""
        control = self._controlled("kill_restart" if kill else "restart")
        self._reconnect_after(lambda: control.restart(kill))

    def restart_torn(self, commit_log_offset: int) -> None:
        """The runner kills the broker, tears the record at ``commit_log_offset`` and starts it again."""
        control = self._controlled("torn_restart")
        self._reconnect_after(lambda: control.tear_and_restart(commit_log_offset))

    def restart_fresh(self) -> None:
        """The runner kills the broker and starts it again on an empty store."""
        control = self._controlled("fresh_store")
        self._reconnect_after(control.fresh_restart)

    def record_at(self, commit_log_offset: int) -> CommitLogRecord | None:
        """VIEW_MESSAGE_BY_ID: SUCCESS carries the stored record, SYSTEM_ERROR says none starts there."""
        response = self._call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": commit_log_offset},
                              ok=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR))
        if response.code != ResponseCode.SUCCESS:
            return None
        try:
            [record] = decode_records(response.body)
        except (CodecError, ValueError) as exc:
            raise MalformedAnswer(f"VIEW_MESSAGE_BY_ID body is not one record: {exc}") from None
        return CommitLogRecord(record.commit_log_offset, record.topic, record.msg_id, record.store_timestamp)

    def _reconnect_after(self, restart: Callable[[], None]) -> None:
        for client in [self._main, *self._conns.values()]:
            client.close()
        with self._lock:
            self._conns.clear()
        self._client_of_conn.clear()
        try:
            restart()
        finally:  # a refused restart leaves the broker serving: connect again either way
            self.broker_addr, self.broker_name = discover_route(self.namesrv)
            self._main = self._connect()

    def expire_retention(self) -> int:
        """The runner expires every commit-log segment but the one being written and runs the clean service."""
        return self._controlled("retention_expire").expire()

    def store_layout(self) -> StoreLayout:
        self._controlled("store_layout")
        offer = self._offer
        assert offer is not None and offer.commitlog_segment_bytes and offer.consumequeue_segment_units
        extra = {"clean_interval_ms": offer.clean_interval_ms} if offer.clean_interval_ms else {}
        return StoreLayout(offer.commitlog_segment_bytes, offer.consumequeue_segment_units,
                           disk_used_ratio=offer.disk_used_ratio, **extra)

    def channel_expiry(self) -> tuple[int, int] | None:
        """(channelExpiredTimeout, the housekeeping scan's interval) in ms, when the runner says them."""
        offer = self._offer
        if offer is None or offer.channel_expired_timeout_ms is None or offer.channel_scan_interval_ms is None:
            return None
        return offer.channel_expired_timeout_ms, offer.channel_scan_interval_ms

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The runner changes broker settings (RocketMQ's names) and says what they were."""
        return self._controlled("broker_config").configure(settings)

    def request_manual_delete(self) -> None:
        self._controlled("manual_delete").manual_delete()

    def run_retention(self) -> None:
        """A manual clean run now, on messages as old as they are (the runner's ``retention_control``)."""
        self._controlled("retention_control").run_retention()

    def trace_rows(self) -> list[dict[str, Any]]:
        """This target's rows of the runner's trace since it was opened: those naming one of its topics or groups,
        with the namespace taken off the names (a retry topic's included), so tests see the names they chose."""
        rows, _ = self._controlled("trace").trace(self._trace_from)
        mine = []
        for row in rows:
            if not any(self._ns in str(row.get(k) or "") for k in NAMESPACED_COLUMNS):
                continue
            mine.append({k: v.replace(self._ns, "") if k in NAMESPACED_COLUMNS and isinstance(v, str) else v
                         for k, v in row.items()})
        return mine


#: Asks the trace for nothing but its next row number.
TRACE_END = 1 << 62
#: Trace columns that carry this target's namespaced names (a POP row's retry topic is in its detail).
NAMESPACED_COLUMNS = ("topic", "group", "client_id", "detail")


def pop_handles(ext: dict[str, str], records: list[DecodedRecord], broker_name: str) -> list[tuple[str, str]]:
    """The receipt handle and topic mark of each message of a POP_MESSAGE answer (header ``ext``), as the Java
    client's ``processPopResponse`` builds them (RocketMQ's ExtraInfoUtil layout)."""
    starts = _offset_info(ext.get("startOffsetInfo", ""))
    prefix = " ".join((ext.get("popTime", "0"), ext.get("invisibleTime", "0"), ext.get("reviveQid", "0")))
    out = []
    for r in records:
        # A retried message comes with its topic set back to the one popped and its handle in POP_CK
        # (RocketMQ 5's default, popResponseReturnActualRetryTopic=false); otherwise the handle is built.
        handle = r.properties.get(PROPERTY_POP_CK, "")
        if handle.count(" ") == 7:
            mark = handle.split(" ")[4]
        else:
            mark = retry_mark(r.topic)
            start = starts.get((mark, r.queue_id), [r.queue_offset])[0]
            handle = f"{start} {prefix} {mark} {broker_name} {r.queue_id} {r.queue_offset}"
        out.append((handle, mark))
    return out


def wire_strategy_name(name: str) -> str:
    """The strategyName a Java 5 client sends: the strategy's getName() ("AVG" for AllocateMessageQueueAveragely);
    a name the reference does not know is sent as it is, for the broker to refuse."""
    try:
        return str(getattr(strategy_class(name), "name", name))
    except KeyError:
        return name


def retry_mark(record_topic: str) -> str:
    """ExtraInfoUtil.getRetry: where a popped record was read (v2 retry topics join group and topic by '+')."""
    if not is_retry_topic(record_topic):
        return NORMAL_MARK
    return RETRY_V2_MARK if POP_RETRY_SEPARATOR_V2 in record_topic else RETRY_MARK


def _offset_info(text: str) -> dict[tuple[str, int], list[int]]:
    """``startOffsetInfo`` / ``msgOffsetInfo``: entries ``mark queueId offset[,offset...]`` joined by ';'."""
    out: dict[tuple[str, int], list[int]] = {}
    for entry in filter(None, text.split(";")):
        parts = entry.split(" ")
        if len(parts) == 3 and parts[1].lstrip("-").isdigit():
            out[(parts[0], int(parts[1]))] = [int(x) for x in parts[2].split(",") if x.lstrip("-").isdigit()]
    return out


def handle_error(response: RemotingCommand) -> TargetError:
    """A refused ack or change of invisible time: a handle naming no in-flight message is INVALID_RECEIPT_HANDLE
    (RocketMQ 5's NO_MESSAGE; the reference names the field receiptHandle)."""
    error = target_error(response)
    if error.code in HANDLE_REFUSALS or error.field == "receiptHandle":
        return TargetError("INVALID_RECEIPT_HANDLE", "receiptHandle", error.rule)
    return error


@functools.lru_cache(maxsize=64)
def wire_capabilities(broker_addr: str, namesrv: str = "") -> frozenset[str]:
    """What the broker's protocol offers: :data:`CAPABILITIES`, ``pop`` (with ``pop_order`` and ``topic_admin``) when
    it serves POP, ``group_info`` when it serves GET_CONSUMER_CONNECTION_LIST and ``group_admin`` when it serves
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG (a read: the create and delete of the same table are not probed).

    Asked once per broker address in a process: what a broker's protocol serves does not change during a run (nor
    across its restarts), and asking at every test's target was three requests per test, one of which lists every
    group the run made so far: under CI load it once took over 10 s and failed a gate test's setup. The name server
    is part of the key (not of the question): a process that runs one broker after another (a test module) would
    need both ports drawn again to take a stopped broker's answer for a new one's."""
    # A POP broker (RocketMQ 5) also serves the ordered pop and DELETE_TOPIC_IN_BROKER; the latter is not probed, as
    # a probe would delete something on a broker that may not be a test's.
    offered = {"pop", "pop_order", "topic_admin"} if supports_pop(broker_addr) else set()
    if serves(broker_addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "mqtck-probe"}):
        offered.add("group_info")
    if serves(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {}):
        offered.add("group_admin")
    return CAPABILITIES | offered


def queue_order_counts(info: object) -> dict[tuple[bool, int], int]:
    """The per-queue entries of an orderCountInfo header ("{mark} {queueId} {count}", ';'-separated; RocketMQ 5 also
    writes per-message "{mark} qo{queueId}%{offset} {count}" entries, skipped here): (retry, queue id) -> count."""
    out: dict[tuple[bool, int], int] = {}
    for entry in str(info or "").split(";"):
        parts = entry.split(" ")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].lstrip("-").isdigit():
            out[(parts[0] != NORMAL_MARK, int(parts[1]))] = int(parts[2])
    return out


def serves(broker_addr: str, code: int, ext: dict[str, Any]) -> bool:
    """Whether the broker knows request ``code`` (anything but REQUEST_CODE_NOT_SUPPORTED to ``ext``)."""
    client = RemotingClient(broker_addr)
    try:
        return client.invoke(code, ext, timeout_s=10.0).code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        client.close()


def supports_pop(broker_addr: str) -> bool:
    """Whether the broker serves POP_MESSAGE: asked with a pop of a topic that does not exist, which a
    RocketMQ 5 broker refuses (TOPIC_NOT_EXIST) and a 4.x broker does not know (REQUEST_CODE_NOT_SUPPORTED)."""
    return serves(broker_addr, RequestCode.POP_MESSAGE, {
        "consumerGroup": "mqtck-probe", "topic": f"mqtck-probe-{uuid.uuid4().hex[:8]}", "queueId": -1,
        "maxMsgNums": 1, "invisibleTime": "60000", "pollTime": "0", "bornTime": str(int(time.time() * 1000)),
        "initMode": INIT_MODE_MIN, "expType": "TAG", "exp": "*",
    })


def describe_control(address: str) -> ControlDescription:
    """What the control channel at ``address`` offers (UnreachableTarget if it cannot say)."""
    try:
        return ControlClient(address).describe()
    except ControlError as exc:
        raise UnreachableTarget(str(exc)) from None


def offered_capabilities(offer: ControlDescription) -> frozenset[str]:
    """The target capabilities a control channel's offer adds: its own names, and ``kill_restart`` with
    ``restart`` (the contract's restart covers both a clean and a kill -9 restart)."""
    return offer.capabilities | ({"kill_restart"} if "restart" in offer.capabilities else frozenset())


def control_capabilities(address: str) -> frozenset[str]:
    """The capabilities the control channel at ``address`` adds to a remoting target."""
    return offered_capabilities(describe_control(address))


def commit_log_offset_of(msg_id: str) -> int | None:
    """The commit-log offset in a send response's offset msgId (the first of a batch's): its last 16 hex
    digits, after the store host (protocols/rocketmq-remoting.md §6.4); None when it is not that shape."""
    first = msg_id.split(",", 1)[0].strip()
    if len(first) not in (32, 56):  # an IPv4 or IPv6 store host, its port, the offset
        return None
    try:
        return int(first[-16:], 16)
    except ValueError:
        return None


def subscription_data(topic: str, expression: str, sub_version: int) -> dict[str, Any]:
    """One heartbeat subscription as a Java client builds it (FilterAPI.buildSubscriptionData): the broker
    filters a pull without the SUBSCRIPTION flag by the ``codeSet`` it stored, and never recomputes it from
    ``subString``, so a heartbeat without tags and codes would match nothing. Lenient on purpose: a malformed
    expression is sent as it is, for the broker to judge."""
    tags = [] if expression.strip() in ("", "*") else [p.strip() for p in expression.split("||") if p.strip()]
    return {
        "topic": topic, "subString": expression.strip() or "*", "subVersion": sub_version, "classFilterMode": False,
        "expressionType": "TAG", "tagsSet": tags, "codeSet": [tags_hash_code(t) for t in tags],
    }


def discover_broker(namesrv: str) -> str:
    """The master broker address in the name server's route of ``TBW102`` (UnreachableTarget otherwise)."""
    return discover_route(namesrv)[0]


def discover_route(namesrv: str) -> tuple[str, str]:
    """(address, broker name) of the master broker in the name server's route of ``TBW102``
    (UnreachableTarget otherwise). The name is what receipt handles carry."""
    try:
        split_address(namesrv)
    except ValueError as exc:
        raise UnreachableTarget(str(exc)) from None
    try:
        ns = RemotingClient(namesrv)
    except OSError as exc:
        raise UnreachableTarget(f"name server {namesrv}: {exc.__class__.__name__}: {exc}") from None
    try:
        r = ns.invoke(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": DEFAULT_TOPIC}, timeout_s=5.0)
    except (OSError, FutureTimeout) as exc:
        raise UnreachableTarget(f"name server {namesrv} did not answer a route lookup: {exc}") from None
    finally:
        ns.close()
    if r.code != ResponseCode.SUCCESS:
        raise UnreachableTarget(f"name server {namesrv} has no route for {DEFAULT_TOPIC} (code {r.code}: {r.remark})")
    try:
        route = loads_body(r.body)
        for broker in route["brokerDatas"]:
            addr = broker["brokerAddrs"].get(MASTER_ID)
            if addr:
                return str(addr), str(broker.get("brokerName", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    raise UnreachableTarget(f"name server {namesrv}: the route of {DEFAULT_TOPIC} names no master broker")
