"""Routes of the HTTP front: decode a request, call the broker, encode the answer. No semantics here.

Everything runs on the asyncio loop (every handler is ``async``), because the broker is single-threaded
and its timers run on the same loop (:class:`~reference.clock.RealClock`) or only when a test advances
the simulated clock (``--sim-clock``: time moves only through ``POST /admin/clock/advance``, so a
conformance run over HTTP is as deterministic as the in-process one).

A pull that finds nothing with a suspend timeout, or a pop with a poll time, is held by the broker;
long polling is then a long HTTP request. Its status line and headers (200) are sent at once and its
JSON body when the broker answers (``deliver_pull`` / ``deliver_pop`` resolve the future the handler
registered), so a client learns at once that the request was accepted and held; a client that just
reads the whole response sees an ordinary long request. A held request dropped by a broker restart
ends with an empty body, as a remoting client sees its connection close.

Errors: a rule broken by the input is a 400; an unknown topic, queue, group or consumer a 404; a
refusal caused by the broker's state (no subscription, a receipt handle that names no pending
delivery, a busy exclusive subscription) a 409; always ``{"error": {"code", "field", "rule"}}``,
never a 500.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Path, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from reference.allocation.message_queue import MessageQueue
from reference.allocation.registry import strategy_class
from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.broker.permits.batch import encode_batch
from reference.broker.permits.protocol import DispatchedMessage, InitialPosition, Position, RecordingPermitChannel
from reference.broker.permits.service import CONSUMER_BUSY, CONSUMER_NOT_FOUND, INVALID_PERMITS, SUBSCRIPTION_MISMATCH
from reference.broker.pop.ack import SUBSCRIPTION_GROUP_NOT_EXIST
from reference.broker.pop.assignment import CONSUMER_NOT_ONLINE, DEFAULT_STRATEGY
from reference.broker.pop.protocol import PopMessageRequest, PopResponse
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse, PullSysFlag
from reference.clock import SimClock
from reference.net.http import models as m
from reference.net.http.api_key import API_KEY_HEADER, UNAUTHORIZED, key_checker
from reference.rules.errors import InvalidRequest, TopicNotFound
from reference.rules.filter import SubscriptionData
from reference.rules.topics import pop_retry_topic
from reference.store.message import Message
from reference.store.names import MAX_NAME_LENGTH
from reference.store.store import StoreClosed

TopicPath = Annotated[str, Path(pattern=m.NAME_PATTERN, examples=["TopicA"])]
GroupPath = Annotated[str, Path(pattern=m.NAME_PATTERN, examples=["GroupA"])]
QueuePath = Annotated[int, Path(ge=0, le=m.INT32_MAX, examples=[0])]
ConnPath = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$", examples=["conn-1"])]
ClientPath = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$", examples=["c1"])]

#: Capabilities every instance of the front offers; ``long_poll`` only with long polling on,
#: ``clock_control`` only with a simulated clock.
BASE_CAPABILITIES = (
    "pull", "query_offset", "commit_offset", "consumer_registry", "retention_control", "allocation",
    "pop", "flow_permits", "restart", "store_layout",
)

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": m.ErrorResponse, "description": "a field broke a rule; the body names the field and the rule"},
    404: {"model": m.ErrorResponse, "description": "the topic, queue, group or consumer named does not exist"},
    409: {"model": m.ErrorResponse, "description": "the broker's state refuses it (e.g. no subscription)"},
    503: {"model": m.ErrorResponse,
          "description": "the broker cannot take writes now (its disk is full, or it is restarting); try again later"},
}
#: The code of a refusal the broker's state makes temporary (RocketMQ's SERVICE_NOT_AVAILABLE): 503.
SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"


class QueueNotFound(InvalidRequest):
    """A queue id the topic does not have: the resource /topics/T/queues/Q does not exist (404)."""

    def __init__(self, topic: str, queue_id: int, nums: int) -> None:
        super().__init__("queueId", f"must be in [0, {nums}) for topic {topic!r}", "QUEUE_NOT_EXIST")


NOT_FOUND = (TopicNotFound, QueueNotFound)
#: Refusals naming something that does not exist (a group with no POP consumption of the topic, a
#: permit consumer that is not subscribed): 404 Not Found.
NOT_FOUND_CODES = frozenset({SUBSCRIPTION_GROUP_NOT_EXIST, CONSUMER_NOT_FOUND})
#: Refusals caused by the broker's state rather than the request's shape: 409 Conflict. A receipt
#: handle whose shape the schema accepts but that names no pending delivery (acknowledged, replaced,
#: revived) is one of them.
CONFLICT_CODES = frozenset({
    "SUBSCRIPTION_NOT_EXIST", "SUBSCRIPTION_NOT_LATEST", INVALID_RECEIPT_HANDLE, CONSUMER_NOT_ONLINE,
    CONSUMER_BUSY, SUBSCRIPTION_MISMATCH, "RETRY_TOPIC_NAME_TOO_LONG",
})
#: Fields whose refusal by the schema carries the broker's own code, so that a client sees one code
#: whichever layer said no (the conformance suite checks these codes).
VALIDATION_CODES = {"messagePermits": INVALID_PERMITS, "receiptHandle": INVALID_RECEIPT_HANDLE}


def status_for(exc: InvalidRequest) -> int:
    if isinstance(exc, NOT_FOUND) or exc.code in NOT_FOUND_CODES:
        return 404
    if exc.code == SERVICE_NOT_AVAILABLE:
        return 503
    if exc.code == UNAUTHORIZED:
        return 401
    return 409 if exc.code in CONFLICT_CODES else 400


class HeldRequestDropped(Exception):
    """The broker that held the request was shut down (restart or server exit) before answering it."""


class HeldRequests:
    """The channel every HTTP pull and pop uses: the late answer of a held request resolves the future
    its handler registered (keyed by the request object's identity, which lives while it is held)."""

    key = "http-held"

    def __init__(self) -> None:
        self.waiters: dict[int, asyncio.Future[Any]] = {}

    def register(self, request: object) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiters[id(request)] = future
        return future

    def forget(self, request: object) -> None:
        self.waiters.pop(id(request), None)

    def _answer(self, request: object, response: object) -> None:
        future = self.waiters.pop(id(request), None)
        if future is not None and not future.done():
            future.set_result(response)

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:
        self._answer(request, response)

    def deliver_pop(self, request: PopMessageRequest, response: PopResponse) -> None:
        self._answer(request, response)

    def notify_consumer_ids_changed(self, group: str) -> None:  # pragma: no cover - pulls never register
        pass

    def drop_all(self) -> None:
        """End every held request (its broker is going away and will never answer it)."""
        for future in self.waiters.values():
            if not future.done():
                future.set_exception(HeldRequestDropped())
        self.waiters.clear()


R = TypeVar("R")


def answer_or_hold(
    held: HeldRequests, request: object, call: Callable[[], R | None], encode: Callable[[R], BaseModel]
) -> BaseModel | Response:
    """Run ``call`` (a pull or a pop); its answer now, or a response whose body follows the late answer."""
    future = held.register(request)
    try:
        answer = call()
    except BaseException:
        held.forget(request)
        raise
    if answer is not None:
        held.forget(request)
        return encode(answer)
    if future.done():  # answered while being held (the hold service looks again after holding, #7358)
        return encode(future.result())
    return StreamingResponse(_when_answered(held, request, future, encode), media_type="application/json")


async def _when_answered(
    held: HeldRequests, request: object, future: asyncio.Future[Any], encode: Callable[[Any], BaseModel]
) -> AsyncIterator[bytes]:
    try:
        answer = await future
    except HeldRequestDropped:
        return
    finally:
        held.forget(request)
    yield encode(answer).model_dump_json().encode("utf-8")


class ConnectionChannel:
    """A consumer's logical connection: keeps the ids-changed notifications it received, in order."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.notifications: list[str] = []

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:  # pragma: no cover
        pass

    def notify_consumer_ids_changed(self, group: str) -> None:
        self.notifications.append(group)


def _error(status: int, exc: InvalidRequest) -> JSONResponse:
    return JSONResponse({"error": exc.as_dict()}, status_code=status)


def _validation_field(error: dict[str, Any]) -> str:
    if error.get("type") == "json_invalid":
        return "body"
    loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "path", "query")]
    return ".".join(loc) or "body"


def _text(body: bytes) -> tuple[str, str]:
    """A body as UTF-8 text (invalid bytes replaced) and as exact base64."""
    return body.decode("utf-8", errors="replace"), base64.b64encode(body).decode("ascii")


def _pull_result(r: PullResponse) -> m.PullResult:
    return m.PullResult(
        code=r.code.name, status=r.status.name if r.status else None, nextBeginOffset=r.next_begin_offset,
        minOffset=r.min_offset, maxOffset=r.max_offset, heldMs=r.held_ms,
        messages=[
            m.PulledMessage(queueOffset=x.queue_offset, msgId=x.unique_id, tags=x.tags, body=text, bodyBase64=b64)
            for x in r.messages for text, b64 in [_text(x.body)]
        ],
    )


def _pop_result(r: PopResponse) -> m.PopResult:
    return m.PopResult(
        code=r.code.name, status=r.status, restNum=r.rest_num, popTime=r.pop_time,  # type: ignore[arg-type]
        invisibleTimeMs=r.invisible_time_ms, heldMs=r.held_ms,
        messages=[
            m.PoppedMessage(
                topic=x.topic, queueId=x.queue_id, queueOffset=x.queue_offset, msgId=x.msg_id, tags=x.tags,
                keys=x.keys, body=text, bodyBase64=b64, receiptHandle=x.handle, reconsumeTimes=x.reconsume_times,
                retry=x.retry, properties=dict(x.properties), storeTimestamp=x.store_timestamp,
                bornTimestamp=x.born_timestamp,
            )
            for x in r.messages for text, b64 in [_text(x.body)]
        ],
    )


def _dispatched(x: DispatchedMessage) -> m.DispatchedMessage:
    text, b64 = _text(x.body)
    return m.DispatchedMessage(
        msgId=x.msg_id, offset=x.position.offset, batchIndex=x.position.batch_index, batchSize=x.batch_size,
        tags=x.tags, body=text, bodyBase64=b64, redeliveryCount=x.redelivery_count,
    )


def _positions(positions: list[m.PositionRef]) -> list[Position]:
    """The request's message positions (ack, redeliver) as the permit service's."""
    return [Position(x.offset, x.batchIndex) for x in positions]


def create_app(host: BrokerHost, name: str = "reference", api_keys: frozenset[str] = frozenset()) -> FastAPI:
    """The FastAPI application serving the broker ``host`` runs: opened and closed with the app's lifespan (on
    the serving loop, where a real clock's timers run). ``POST /admin/restart`` restarts it on the host and
    serves the new broker. With ``api_keys`` every request but ``/health`` must carry one of them
    (:mod:`reference.net.http.api_key`)."""
    broker: Broker = host.broker  # type: ignore[assignment]  # None until the lifespan opens it
    host_clock = host.clock
    sim = isinstance(host_clock, SimClock)
    held = HeldRequests()
    connections: dict[str, ConnectionChannel] = {}
    #: Permit consumers' channels by (subscription, client id, topic): what was dispatched to each.
    permit_channels: dict[tuple[str, str, str], RecordingPermitChannel] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        nonlocal broker
        broker = host.broker if host.broker is not None else host.open()
        try:
            yield
        finally:
            held.drop_all()
            host.close()

    app = FastAPI(
        title="mqtck reference broker",
        version="1",
        summary="The RocketMQ-family broker of the mqtck reference implementation, over HTTP.",
        description=(
            "Serve this API and `mqtck conform --target http://host:port` gates your broker against the "
            "mqtck requirements. Bodies are JSON; errors are `{\"error\": {\"code\", \"field\", \"rule\"}}`."
        ),
        lifespan=lifespan,
        dependencies=[Security(key_checker(api_keys))] if api_keys else None,
        responses={401: {"model": m.ErrorResponse, "description": "no API key, or one this broker does not accept"}}
        if api_keys else None,
    )

    def connection(key: str) -> ConnectionChannel:
        return connections.setdefault(key, ConnectionChannel(key))

    def check_topic(topic: str, queue_id: int | None = None) -> None:
        nums = broker.store.queue_nums(topic)
        if queue_id is not None and not queue_id < nums:
            raise QueueNotFound(topic, queue_id, nums)

    def check_retry_topic(group: str, topic: str) -> None:
        """Both names are valid alone, but the POP retry topic they make may be too long: a conflict
        between two existing names rather than a bad field (so 409, not 400)."""
        name = pop_retry_topic(group, topic)
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidRequest(
                "consumerGroup", f"with topic {topic!r} makes the retry topic {name!r}, longer than "
                f"{MAX_NAME_LENGTH} characters", "RETRY_TOPIC_NAME_TOO_LONG",
            )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        rule = str(first.get("msg", "is invalid"))
        field = _validation_field(first)
        code = VALIDATION_CODES.get(field.rsplit(".", 1)[-1], "INVALID_ARGUMENT")
        return _error(400, InvalidRequest(field, rule, code))

    @app.exception_handler(InvalidRequest)
    async def _refused(_: Request, exc: InvalidRequest) -> JSONResponse:
        response = _error(status_for(exc), exc)
        if response.status_code == 401:  # RFC 9110: a 401 names the scheme that would be accepted
            response.headers["WWW-Authenticate"] = f'APIKey header="{API_KEY_HEADER}"'
        return response

    @app.exception_handler(StoreClosed)
    async def _closed(_: Request, exc: StoreClosed) -> JSONResponse:
        """A request that reached the broker while its store was shut (a restart in progress): try again."""
        return _error(503, InvalidRequest("broker", str(exc), SERVICE_NOT_AVAILABLE))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Starlette's own refusals (unknown path, wrong method, unreadable body) in the same error shape."""
        field = {404: "path", 405: "method"}.get(exc.status_code, "body")
        response = _error(exc.status_code, InvalidRequest(field, str(exc.detail), f"HTTP_{exc.status_code}"))
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(allowed_methods(request.url.path))
        return response

    def allowed_methods(path: str) -> list[str]:
        """Every method some route serves on ``path`` (Starlette's 405 names only the first route's)."""
        methods: set[str] = set()
        for route in app.routes:
            regex = getattr(route, "path_regex", None)
            if regex is not None and regex.match(path):
                methods |= set(getattr(route, "methods", ()) or ())
        return sorted(methods)

    @app.get("/health", operation_id="health", response_model=m.Done, tags=["admin"])
    async def health() -> m.Done:
        return m.Done()

    @app.get("/capabilities", operation_id="capabilities", response_model=m.Capabilities, tags=["admin"])
    async def capabilities() -> m.Capabilities:
        caps = [
            *BASE_CAPABILITIES, *(("clock_control",) if sim else ()),
            *(("long_poll",) if broker.config.long_polling_enable else ()),
        ]
        return m.Capabilities(name=name, clock="sim" if sim else "real", capabilities=sorted(caps))

    @app.post(
        "/topics", operation_id="createTopic", status_code=201, response_model=m.TopicCreated, responses=ERRORS,
        tags=["admin"],
        openapi_extra={"responses": {"201": {"links": {
            "SendToQueue0": {"operationId": "sendMessage",
                             "parameters": {"topic": "$response.body#/topic", "queueId": 0}},
            "QueueOffsets": {"operationId": "queueOffsets",
                             "parameters": {"topic": "$response.body#/topic", "queueId": 0}},
            "SubscribePermits": {"operationId": "subscribePermits", "parameters": {"topic": "$response.body#/topic"}},
        }}}},
    )
    async def create_topic(body: m.CreateTopic) -> m.TopicCreated:
        broker.create_topic(body.topic, body.queues)
        return m.TopicCreated(topic=body.topic, queues=broker.store.queue_nums(body.topic))

    @app.get("/topics/{topic}/queues/{queueId}/offsets", operation_id="queueOffsets",
             response_model=m.QueueOffsets, responses=ERRORS, tags=["messages"])
    async def queue_offsets(topic: TopicPath, queueId: QueuePath) -> m.QueueOffsets:  # noqa: N803
        check_topic(topic, queueId)
        store = broker.store
        return m.QueueOffsets(
            topic=topic, queueId=queueId, minOffset=store.get_min_offset_in_queue(topic, queueId),
            maxOffset=store.get_max_offset_in_queue(topic, queueId),
        )

    @app.post(
        "/topics/{topic}/queues/{queueId}/messages", operation_id="sendMessage", status_code=201,
        response_model=m.SendReceipt, responses=ERRORS, tags=["messages"],
        openapi_extra={"responses": {"201": {"links": {
            "PullIt": {"operationId": "pullMessages",
                       "parameters": {"topic": "$response.body#/topic", "queueId": "$response.body#/queueId"}},
            "QueueOffsets": {"operationId": "queueOffsets",
                             "parameters": {"topic": "$response.body#/topic", "queueId": "$response.body#/queueId"}},
            "PopIt": {"operationId": "popMessages", "parameters": {"topic": "$response.body#/topic"}},
        }}}},
    )
    async def send(topic: TopicPath, queueId: QueuePath, body: m.SendBody) -> m.SendReceipt:  # noqa: N803
        check_topic(topic, queueId)
        r = broker.send(Message(topic, body.body.encode("utf-8"), queueId, tags=body.tags))
        return m.SendReceipt(topic=topic, queueId=r.queue_id, queueOffset=r.queue_offset, msgId=r.unique_id,
                             commitLogOffset=r.commit_log_offset)

    @app.post("/topics/{topic}/queues/{queueId}/batches", operation_id="sendBatch", status_code=201,
              response_model=m.SendReceipt, responses=ERRORS, tags=["messages"],
              description="One batch entry holding several messages (a Pulsar producer's batch): stored as one "
                          "entry, dispatched and counted message by message by the permit dispatchers.")
    async def send_batch(topic: TopicPath, queueId: QueuePath, body: m.SendBatchBody) -> m.SendReceipt:  # noqa: N803
        check_topic(topic, queueId)
        payload, properties = encode_batch([b.encode("utf-8") for b in body.bodies])
        r = broker.send(Message(topic, payload, queueId, properties=properties))
        return m.SendReceipt(topic=topic, queueId=r.queue_id, queueOffset=r.queue_offset, msgId=r.unique_id,
                             commitLogOffset=r.commit_log_offset)

    @app.post("/topics/{topic}/queues/{queueId}/pull", operation_id="pullMessages", response_model=m.PullResult,
              responses=ERRORS, tags=["messages"],
              description="With `suspendTimeoutMs` and nothing to read, the broker holds the pull (long polling): "
                          "the status line comes at once, the body when a matching message arrives or the hold "
                          "time ends.")
    async def pull(topic: TopicPath, queueId: QueuePath, body: m.PullBody) -> Any:  # noqa: N803
        check_topic(topic, queueId)
        flag = PullSysFlag(0)
        if body.suspendTimeoutMs > 0:
            flag |= PullSysFlag.SUSPEND
        if body.subscription is not None:
            flag |= PullSysFlag.SUBSCRIPTION
        if body.commitOffset is not None:
            flag |= PullSysFlag.COMMIT_OFFSET
        request = PullMessageRequest(
            body.consumerGroup, topic, queueId, body.queueOffset, max_msg_nums=body.maxMsgNums, sys_flag=int(flag),
            commit_offset=body.commitOffset or 0, suspend_timeout_ms=body.suspendTimeoutMs,
            subscription=body.subscription, client_id=body.clientId or "",
        )
        return answer_or_hold(held, request, lambda: broker.pull(request, held), _pull_result)

    @app.get("/groups/{group}/offsets/{topic}/{queueId}", operation_id="queryConsumerOffset",
             response_model=m.ConsumerOffset, responses=ERRORS, tags=["offsets"])
    async def query_offset(group: GroupPath, topic: TopicPath, queueId: QueuePath) -> m.ConsumerOffset:  # noqa: N803
        check_topic(topic, queueId)
        r = broker.query_consumer_offset(group, topic, queueId)
        return m.ConsumerOffset(code=r.code.name, offset=r.offset)

    @app.put("/groups/{group}/offsets/{topic}/{queueId}", operation_id="updateConsumerOffset",
             response_model=m.Done, responses=ERRORS, tags=["offsets"])
    async def commit_offset(group: GroupPath, topic: TopicPath, queueId: QueuePath,  # noqa: N803
                            body: m.CommitOffset) -> m.Done:
        check_topic(topic, queueId)
        broker.update_consumer_offset(group, topic, queueId, body.offset, body.clientId or "")
        return m.Done()

    @app.post("/consumers/heartbeat", operation_id="heartbeat", response_model=m.HeartbeatResult,
              responses=ERRORS, tags=["consumers"])
    async def heartbeat(body: m.Heartbeat) -> m.HeartbeatResult:
        consumers = [
            ConsumerData(
                group,
                tuple(
                    SubscriptionData.parse(topic, s.expression, s.subVersion)
                    for topic, s in sorted(g.subscriptions.items())
                ),
                g.messageModel,
            )
            for group, g in sorted(body.consumers.items())
        ]
        return m.HeartbeatResult(changed=broker.heartbeat(connection(body.connection), body.clientId, consumers))

    @app.post("/consumers/unregister", operation_id="unregister", response_model=m.Done, responses=ERRORS,
              tags=["consumers"])
    async def unregister(body: m.Unregister) -> m.Done:
        broker.unregister_client(connection(body.connection), body.consumerGroup)
        return m.Done()

    @app.get("/groups/{group}/consumers", operation_id="consumerList", response_model=m.ConsumerList,
             responses=ERRORS, tags=["consumers"])
    async def consumer_list(group: GroupPath) -> m.ConsumerList:
        return m.ConsumerList(consumerGroup=group, clientIds=broker.consumer_ids(group))

    @app.get("/connections/{connection}/notifications", operation_id="notifications",
             response_model=m.Notifications, responses=ERRORS, tags=["consumers"])
    async def notifications(connection: ConnPath) -> m.Notifications:
        channel = connections.get(connection)
        return m.Notifications(connection=connection, groups=list(channel.notifications) if channel else [])

    @app.post("/allocation", operation_id="allocate", response_model=m.Allocation, responses=ERRORS,
              tags=["consumers"])
    async def allocate(body: m.Allocate) -> m.Allocation:
        """The share of ``currentCID`` under a named strategy (the client-side rebalance's rule, served so
        that a broker-side implementation, e.g. for POP, can be checked the same way). As in RocketMQ, a
        currentCID that is not in cidAll gets an empty share, not an error."""
        queues = [MessageQueue(q.topic, q.brokerName, q.queueId) for q in body.mqAll]
        share = strategy_class(body.strategy)().allocate(body.consumerGroup, body.currentCID, queues, body.cidAll)
        return m.Allocation(result=[m.QueueRef(topic=q.topic, brokerName=q.broker_name, queueId=q.queue_id)
                                    for q in share])

    # -- POP ---------------------------------------------------------------------------------------
    handle_links = {
        "AckFirst": {"operationId": "ackMessage",
                     "parameters": {"group": "$request.path.group", "topic": "$request.path.topic"},
                     "requestBody": {"receiptHandle": "$response.body#/messages/0/receiptHandle"}},
        "ChangeInvisibleTimeOfFirst": {
            "operationId": "changeInvisibleTime",
            "parameters": {"group": "$request.path.group", "topic": "$request.path.topic"},
            "requestBody": {"receiptHandle": "$response.body#/messages/0/receiptHandle", "invisibleTimeMs": 1_000}},
    }

    @app.post(
        "/groups/{group}/topics/{topic}/pop", operation_id="popMessages", response_model=m.PopResult,
        responses=ERRORS, tags=["pop"], openapi_extra={"responses": {"200": {"links": handle_links}}},
        description="Pop a batch: each message becomes invisible to the group for `invisibleTimeMs` unless "
                    "acknowledged. With `pollTimeMs` and nothing to pop the broker holds the pop: the status line "
                    "comes at once, the body when a matching message arrives or the poll time ends.",
    )
    async def pop(group: GroupPath, topic: TopicPath, body: m.PopBody) -> Any:
        check_topic(topic, body.queueId if body.queueId >= 0 else None)
        check_retry_topic(group, topic)
        request = PopMessageRequest(
            group, topic, body.queueId, body.maxMsgNums, body.invisibleTimeMs, body.pollTimeMs, body.expression,
            body.clientId or "",
        )
        return answer_or_hold(held, request, lambda: broker.pop(request, held), _pop_result)

    @app.post("/groups/{group}/topics/{topic}/ack", operation_id="ackMessage", response_model=m.Acked,
              responses=ERRORS, tags=["pop"])
    async def ack(group: GroupPath, topic: TopicPath, body: m.AckBody) -> m.Acked:
        check_topic(topic)
        return m.Acked(msgId=broker.ack(group, topic, body.receiptHandle, body.clientId or "").msg_id)

    @app.post(
        "/groups/{group}/topics/{topic}/invisible-time", operation_id="changeInvisibleTime",
        response_model=m.InvisibleTimeChanged, responses=ERRORS, tags=["pop"],
        openapi_extra={"responses": {"200": {"links": {
            "AckWithNewHandle": {"operationId": "ackMessage",
                                 "parameters": {"group": "$request.path.group", "topic": "$request.path.topic"},
                                 "requestBody": {"receiptHandle": "$response.body#/receiptHandle"}},
        }}}},
    )
    async def change_invisible_time(group: GroupPath, topic: TopicPath,
                                    body: m.ChangeInvisibleBody) -> m.InvisibleTimeChanged:
        check_topic(topic)
        r = broker.change_invisible_time(group, topic, body.receiptHandle, body.invisibleTimeMs, body.clientId or "")
        return m.InvisibleTimeChanged(msgId=r.msg_id, receiptHandle=r.handle, popTime=r.pop_time,
                                      invisibleTimeMs=r.invisible_time_ms)

    @app.get("/groups/{group}/topics/{topic}/assignment", operation_id="queryAssignment",
             response_model=m.Assignment, responses=ERRORS, tags=["pop"],
             description="The queues a POP consumer of the group should pop (the broker runs the allocation).")
    async def query_assignment(
        group: GroupPath, topic: TopicPath,
        clientId: Annotated[str, Query(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$")],  # noqa: N803
        strategy: Annotated[m.PopStrategy, Query()] = DEFAULT_STRATEGY,
        popShareQueueNum: Annotated[int, Query(ge=-1, le=m.INT32_MAX)] = -1,  # noqa: N803
        messageModel: Annotated[m.MessageModel, Query()] = "CLUSTERING",  # noqa: N803
        mode: Annotated[m.RequestMode, Query(description="POP (allocate4Pop) or PULL (the strategy's own)")] = "POP",
    ) -> m.Assignment:
        check_topic(topic)
        queues = broker.query_assignment(topic, group, clientId, strategy, messageModel, popShareQueueNum, mode)
        return m.Assignment(consumerGroup=group, clientId=clientId, queues=[
            m.AssignedQueue(topic=q.topic, brokerName=q.broker_name, queueId=q.queue_id) for q in queues
        ])

    # -- permits -----------------------------------------------------------------------------------
    consumer_path = "/groups/{group}/topics/{topic}/permit-consumers/{clientId}"
    consumer_params = {"group": "$request.path.group", "topic": "$request.path.topic",
                       "clientId": "$response.body#/clientId"}

    @app.post(
        "/groups/{group}/topics/{topic}/permit-consumers", operation_id="subscribePermits", status_code=201,
        response_model=m.PermitConsumer, responses=ERRORS, tags=["permits"],
        description="Attach a consumer to the subscription `group` (created on first use) with 0 permits.",
        openapi_extra={"responses": {"201": {"links": {
            "Flow": {"operationId": "flowPermits", "parameters": consumer_params,
                     "requestBody": {"messagePermits": 10}},
            "Permits": {"operationId": "permitConsumer", "parameters": consumer_params},
            "Dispatched": {"operationId": "dispatchedMessages", "parameters": consumer_params},
            "Ack": {"operationId": "ackPermitMessages", "parameters": consumer_params},
            "Redeliver": {"operationId": "redeliverUnacknowledged", "parameters": consumer_params},
            "Close": {"operationId": "closePermitConsumer", "parameters": consumer_params},
        }}}},
    )
    async def subscribe_permits(group: GroupPath, topic: TopicPath, body: m.PermitSubscribe) -> m.PermitConsumer:
        check_topic(topic, body.queueId)
        channel = RecordingPermitChannel(f"permits-{body.clientId}")
        broker.subscribe_permits(group, topic, body.clientId, channel, body.subType, body.queueId,
                                 InitialPosition(body.initialPosition))
        permit_channels[(group, body.clientId, topic)] = channel
        return permit_consumer(group, topic, body.clientId)

    def permit_consumer(group: str, topic: str, client_id: str) -> m.PermitConsumer:
        permits = broker.permits.consumer(group, client_id, topic).permits
        return m.PermitConsumer(subscription=group, topic=topic, clientId=client_id, permits=permits)

    @app.get(consumer_path, operation_id="permitConsumer", response_model=m.PermitConsumer, responses=ERRORS,
             tags=["permits"])
    async def get_permit_consumer(group: GroupPath, topic: TopicPath, clientId: ClientPath) -> m.PermitConsumer:  # noqa: N803
        return permit_consumer(group, topic, clientId)

    @app.post(f"{consumer_path}/flow", operation_id="flowPermits", response_model=m.PermitConsumer,
              responses=ERRORS, tags=["permits"], description="FLOW: add `messagePermits` to the consumer's credit.")
    async def flow(group: GroupPath, topic: TopicPath, clientId: ClientPath, body: m.Flow) -> m.PermitConsumer:  # noqa: N803
        broker.flow(group, clientId, topic, body.messagePermits)
        return permit_consumer(group, topic, clientId)

    @app.get(f"{consumer_path}/messages", operation_id="dispatchedMessages", response_model=m.Dispatched,
             responses=ERRORS, tags=["permits"])
    async def dispatched(group: GroupPath, topic: TopicPath, clientId: ClientPath) -> m.Dispatched:  # noqa: N803
        channel = permit_channels.get((group, clientId, topic))
        if channel is None:  # never subscribed here (or not since a restart)
            broker.permits.consumer(group, clientId, topic)  # raises CONSUMER_NOT_FOUND
        return m.Dispatched(clientId=clientId, messages=[_dispatched(x) for x in (channel.messages if channel else [])])

    @app.post(f"{consumer_path}/ack", operation_id="ackPermitMessages", response_model=m.PermitAcked,
              responses=ERRORS, tags=["permits"])
    async def ack_permits(group: GroupPath, topic: TopicPath, clientId: ClientPath,  # noqa: N803
                          body: m.PermitAck) -> m.PermitAcked:
        return m.PermitAcked(acknowledged=broker.ack_permits(group, clientId, topic, _positions(body.positions)))

    @app.post(f"{consumer_path}/redeliver", operation_id="redeliverUnacknowledged", response_model=m.Done,
              responses=ERRORS, tags=["permits"])
    async def redeliver(group: GroupPath, topic: TopicPath, clientId: ClientPath,  # noqa: N803
                        body: m.Redeliver) -> m.Done:
        positions = None if body.positions is None else _positions(body.positions)
        broker.redeliver_unacknowledged(group, clientId, topic, positions)
        return m.Done()

    @app.delete(consumer_path, operation_id="closePermitConsumer", response_model=m.Done, responses=ERRORS,
                tags=["permits"], description="The consumer leaves; its unacknowledged messages are redelivered.")
    async def close_permit_consumer(group: GroupPath, topic: TopicPath, clientId: ClientPath) -> m.Done:  # noqa: N803
        broker.close_permit_consumer(group, clientId, topic)
        return m.Done()

    @app.post("/admin/retention", operation_id="runRetention", response_model=m.Done, tags=["admin"])
    async def run_retention() -> m.Done:
        broker.run_retention(manual=True)
        return m.Done()

    @app.get("/admin/store-layout", operation_id="storeLayout", response_model=m.StoreLayout, tags=["admin"],
             description="The store's segment sizes: a conformance test sizes its data from them, so that a broker "
                         "started with its default (large) segments is judged as it runs, or told not applicable.")
    async def store_layout() -> m.StoreLayout:
        config = broker.store.config
        return m.StoreLayout(commitLogSegmentBytes=config.commit_log_segment_bytes,
                             consumeQueueSegmentUnits=config.consume_queue_units_per_segment,
                             cleanIntervalMs=config.clean_resource_interval_ms)

    @app.get("/admin/clock", operation_id="clock", response_model=m.ClockState, tags=["admin"])
    async def clock() -> m.ClockState:
        return m.ClockState(clock="sim" if sim else "real", nowMs=host_clock.now_ms())

    @app.post("/admin/clock/advance", operation_id="advanceClock", response_model=m.ClockState,
              responses=ERRORS,
              tags=["admin"])
    async def advance(body: m.AdvanceClock) -> m.ClockState | JSONResponse:
        if not isinstance(host_clock, SimClock):
            return _error(409, InvalidRequest("ms", "the broker runs on real time; start it with --sim-clock",
                                              "CLOCK_NOT_CONTROLLABLE"))
        host_clock.advance(body.ms)
        return m.ClockState(clock="sim", nowMs=host_clock.now_ms())

    @app.post("/admin/restart", operation_id="restartBroker", response_model=m.Done, tags=["admin"],
              description="Shut the broker down cleanly and open it again on the same data directory. Held "
                          "requests end with an empty body and consumers must register and subscribe again.")
    async def restart() -> m.Done:
        nonlocal broker
        held.drop_all()
        permit_channels.clear()
        broker = host.restart()
        return m.Done()

    def openapi() -> dict[str, Any]:
        """FastAPI's document without its 422 answers: this front reports every refusal as 400."""
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, summary=app.summary,
                              description=app.description, routes=app.routes)
            for path in doc.get("paths", {}).values():
                for op in path.values():
                    op.get("responses", {}).pop("422", None)
            for schema in ("HTTPValidationError", "ValidationError"):
                doc.get("components", {}).get("schemas", {}).pop(schema, None)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
