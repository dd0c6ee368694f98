"""Routes of the HTTP front: decode a request, call the broker, encode the answer. No semantics here.

Everything runs on the asyncio loop (every handler is ``async``), because the broker is single-threaded
and its timers run on the same loop (:class:`~reference.clock.RealClock`) or only when a test advances
the simulated clock (``--sim-clock``: time moves only through ``POST /admin/clock/advance``, so a
conformance run over HTTP is as deterministic as the in-process one).

A pull that finds nothing with a suspend timeout is held by the broker; the handler awaits a future
that the broker's ``deliver_pull`` resolves, so long polling is a long HTTP request.

Errors: a rule broken by the input is a 400 (404 for an unknown topic) with
``{"error": {"code", "field", "rule"}}``, never a 500.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import FastAPI, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from reference.allocation.message_queue import MessageQueue
from reference.allocation.registry import strategy_class
from reference.broker.broker import Broker
from reference.broker.consumer_manager import ConsumerData
from reference.broker.protocol import PullMessageRequest, PullResponse, PullSysFlag
from reference.clock import SimClock
from reference.errors import InvalidRequest, TopicNotFound
from reference.net.http import models as m
from reference.store.filter import SubscriptionData
from reference.store.message import Message

TopicPath = Annotated[str, Path(pattern=m.NAME_PATTERN, examples=["TopicA"])]
GroupPath = Annotated[str, Path(pattern=m.NAME_PATTERN, examples=["GroupA"])]
QueuePath = Annotated[int, Path(ge=0, le=m.INT32_MAX, examples=[0])]
ConnPath = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$", examples=["conn-1"])]

#: Capabilities every instance of the front offers; ``clock_control`` only with a simulated clock.
BASE_CAPABILITIES = (
    "pull", "long_poll", "query_offset", "commit_offset", "consumer_registry", "retention_control", "allocation",
)

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": m.ErrorResponse, "description": "a field broke a rule; the body names the field and the rule"},
    404: {"model": m.ErrorResponse, "description": "the topic, or the queue of the topic, does not exist"},
    409: {"model": m.ErrorResponse, "description": "the broker's state refuses it (e.g. no subscription)"},
}


class QueueNotFound(InvalidRequest):
    """A queue id the topic does not have: the resource /topics/T/queues/Q does not exist (404)."""

    def __init__(self, topic: str, queue_id: int, nums: int) -> None:
        super().__init__("queueId", f"must be in [0, {nums}) for topic {topic!r}", "QUEUE_NOT_EXIST")


NOT_FOUND = (TopicNotFound, QueueNotFound)
#: Refusals caused by the broker's state rather than the request's shape: 409 Conflict.
CONFLICT_CODES = frozenset({"SUBSCRIPTION_NOT_EXIST", "SUBSCRIPTION_NOT_LATEST"})


def status_for(exc: InvalidRequest) -> int:
    if isinstance(exc, NOT_FOUND):
        return 404
    return 409 if exc.code in CONFLICT_CODES else 400


class PullChannel:
    """The channel all HTTP pulls share: resolves the waiting handler's future when a held pull is answered."""

    key = "http-pull"

    def __init__(self) -> None:
        self.waiters: dict[int, asyncio.Future[PullResponse]] = {}

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:
        future = self.waiters.pop(id(request), None)
        if future is not None and not future.done():
            future.set_result(response)

    def notify_consumer_ids_changed(self, group: str) -> None:  # pragma: no cover - pulls never register
        pass


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


def _pull_result(r: PullResponse) -> m.PullResult:
    return m.PullResult(
        code=r.code.name, status=r.status.name if r.status else None, nextBeginOffset=r.next_begin_offset,
        minOffset=r.min_offset, maxOffset=r.max_offset, heldMs=r.held_ms,
        messages=[
            m.PulledMessage(
                queueOffset=x.queue_offset, msgId=x.unique_id, tags=x.tags,
                body=x.body.decode("utf-8", errors="replace"), bodyBase64=base64.b64encode(x.body).decode("ascii"),
            )
            for x in r.messages
        ],
    )


def create_app(broker: Broker, name: str = "reference") -> FastAPI:
    """The FastAPI application serving ``broker`` (started and shut down with the app's lifespan)."""
    sim = isinstance(broker.clock, SimClock)
    pulls = PullChannel()
    connections: dict[str, ConnectionChannel] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        broker.start()
        try:
            yield
        finally:
            for future in pulls.waiters.values():
                future.cancel()
            broker.shutdown()

    app = FastAPI(
        title="mqtck reference broker",
        version="1",
        summary="The RocketMQ-family broker of the mqtck reference implementation, over HTTP.",
        description=(
            "Serve this API and `mqtck conform --target http://host:port` gates your broker against the "
            "mqtck requirements. Bodies are JSON; errors are `{\"error\": {\"code\", \"field\", \"rule\"}}`."
        ),
        lifespan=lifespan,
    )

    def connection(key: str) -> ConnectionChannel:
        return connections.setdefault(key, ConnectionChannel(key))

    def check_topic(topic: str, queue_id: int | None = None) -> None:
        nums = broker.store.queue_nums(topic)
        if queue_id is not None and not queue_id < nums:
            raise QueueNotFound(topic, queue_id, nums)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        rule = str(first.get("msg", "is invalid"))
        return _error(400, InvalidRequest(_validation_field(first), rule))

    @app.exception_handler(InvalidRequest)
    async def _refused(_: Request, exc: InvalidRequest) -> JSONResponse:
        return _error(status_for(exc), exc)

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
        caps = [*BASE_CAPABILITIES, *(("clock_control",) if sim else ())]
        return m.Capabilities(name=name, clock="sim" if sim else "real", capabilities=sorted(caps))

    @app.post(
        "/topics", operation_id="createTopic", status_code=201, response_model=m.TopicCreated, responses=ERRORS,
        tags=["admin"],
        openapi_extra={"responses": {"201": {"links": {
            "SendToQueue0": {"operationId": "sendMessage",
                             "parameters": {"topic": "$response.body#/topic", "queueId": 0}},
            "QueueOffsets": {"operationId": "queueOffsets",
                             "parameters": {"topic": "$response.body#/topic", "queueId": 0}},
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
        }}}},
    )
    async def send(topic: TopicPath, queueId: QueuePath, body: m.SendBody) -> m.SendReceipt:  # noqa: N803
        check_topic(topic, queueId)
        r = broker.send(Message(topic, body.body.encode("utf-8"), queueId, tags=body.tags))
        return m.SendReceipt(topic=topic, queueId=r.queue_id, queueOffset=r.queue_offset, msgId=r.unique_id)

    @app.post("/topics/{topic}/queues/{queueId}/pull", operation_id="pullMessages", response_model=m.PullResult,
              responses=ERRORS, tags=["messages"])
    async def pull(topic: TopicPath, queueId: QueuePath, body: m.PullBody) -> m.PullResult:  # noqa: N803
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
        future: asyncio.Future[PullResponse] = asyncio.get_running_loop().create_future()
        pulls.waiters[id(request)] = future
        try:
            response = broker.pull(request, pulls)
            if response is None:
                response = await future
        finally:
            pulls.waiters.pop(id(request), None)
        return _pull_result(response)

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

    @app.post("/admin/retention", operation_id="runRetention", response_model=m.Done, tags=["admin"])
    async def run_retention() -> m.Done:
        broker.run_retention(manual=True)
        return m.Done()

    @app.get("/admin/clock", operation_id="clock", response_model=m.ClockState, tags=["admin"])
    async def clock() -> m.ClockState:
        return m.ClockState(clock="sim" if sim else "real", nowMs=broker.clock.now_ms())

    @app.post("/admin/clock/advance", operation_id="advanceClock", response_model=m.ClockState,
              responses=ERRORS,
              tags=["admin"])
    async def advance(body: m.AdvanceClock) -> m.ClockState | JSONResponse:
        if not isinstance(broker.clock, SimClock):
            return _error(409, InvalidRequest("ms", "the broker runs on real time; start it with --sim-clock",
                                              "CLOCK_NOT_CONTROLLABLE"))
        broker.clock.advance(body.ms)
        return m.ClockState(clock="sim", nowMs=broker.clock.now_ms())

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
