"""A target behind the HTTP front (``reference/net/http``): the reference's own server, or any
implementation that serves the same OpenAPI document.

Isolation: one server serves the whole run, so every name a test uses (topics, groups, client ids,
connections) is prefixed with a namespace unique to the target instance and the prefix is removed
from what comes back. Empty names are sent as they are (they must be refused), except where the API
puts a name in the URL path, where an empty name cannot be expressed: there the target refuses it
itself, naming the same field.

Time: with ``clock_control`` (a server started with ``--sim-clock``) ``advance`` moves the server's
simulated clock; otherwise it sleeps.

Held requests (a pull with a suspend timeout, a pop with a poll time) run on one asyncio loop in a
background thread, so a test may hold a thousand of them (POP-7) without a thread each. Starting one
waits for the status line: the reference front sends it as soon as it has accepted (and held) the
request, so a refusal is raised by the call that made it, as in-process, and the request is known to be
held before the test goes on; a server that sends nothing before its answer costs :data:`SETTLE_S`
instead. ``done()`` allows an answer already on its way :data:`SETTLE_S` after the target's last
request to cross loopback (the one tolerance real sockets add), and no more, so that checking many
pending requests in a row costs that wait once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Generic, TypeVar

import httpx

from . import (
    HOLD_SLACK_MS,
    DispatchedRecord,
    PoppedRecord,
    PopReply,
    PulledMessage,
    PullReply,
    SendReceipt,
    StoreLayout,
    TargetError,
)

#: How long an answer the server already sent may take to cross loopback (and a held request's
#: status line to come back).
SETTLE_S = 0.25
#: The environment variable holding the API key to send (``mqtck broker --http … --api-key-file F`` wants one).
API_KEY_ENV = "MQTCK_API_KEY"
#: Client-side timeout of one request (a held pull may last its suspend time plus one check).
REQUEST_TIMEOUT_S = 120.0
#: Concurrent held requests one target may keep open (POP-7 holds popPollingSize + 2).
MAX_HELD_CONNECTIONS = 2_048
#: Simulated time moved per step while waiting for a held request with clock control, and how long
#: each step waits for the answer before the next.
ADVANCE_STEP_MS = 500
STEP_WAIT_S = 0.05
#: Code of a held request whose broker went away (restart) before answering: the body ended empty.
HELD_REQUEST_DROPPED = "HELD_REQUEST_DROPPED"
#: HTTP front field names -> the neutral names the suite and the reference's errors use.
FIELD_NAMES = {
    "offset": "commitOffset",
    "clientId": "clientID",
    "subscription": "expression",
    "group": "consumerGroup",
    "messageModel": "consumerData.messageModel",
    "invisibleTimeMs": "invisibleTime",
    "pollTimeMs": "pollTime",
}
_namespaces = itertools.count()

T = TypeVar("T")


class UnreachableTarget(Exception):
    """The server did not answer; ``mqtck conform`` turns this into exit 2."""


def api_key_headers() -> dict[str, str]:
    """The API key a front started with ``--api-key-file`` wants, from the environment (``MQTCK_API_KEY``): not in
    the target's URL, which reports print."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    return {"X-API-Key": key} if key else {}


def probe(url: str) -> dict[str, Any]:
    """``GET /capabilities``: what the server says it can do (UnreachableTarget if it cannot say)."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/capabilities", timeout=5.0, headers=api_key_headers())
        response.raise_for_status()
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise UnreachableTarget(f"{url}: {exc.__class__.__name__}: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("capabilities"), list):
        raise UnreachableTarget(f"{url}/capabilities did not return {{'capabilities': [...]}}")
    return body


def _neutral_field(field: str) -> str:
    parts = [p for p in field.split(".") if p]
    if len(parts) >= 2 and parts[0] == "consumers" and parts[-1] == "[key]":
        return "consumerData.groupName"
    last = parts[-1] if parts else field
    return FIELD_NAMES.get(last, last)


def _refusal(response: httpx.Response, method: str, path: str) -> Exception:
    """The TargetError an error response carries (AssertionError if it breaks the error contract)."""
    try:
        err = response.json()["error"]
        return TargetError(str(err["code"]), _neutral_field(str(err["field"])), str(err["rule"]))
    except (ValueError, KeyError, TypeError):
        return AssertionError(f"{method} {path} -> {response.status_code} without an error body: {response.text[:200]}")


def _bytes(message: dict[str, Any]) -> bytes:
    return base64.b64decode(message["bodyBase64"])


class _PendingHttp(Generic[T]):
    """A pull or a pop in flight: one implementation for both."""

    def __init__(self, target: HttpTarget, future: Future[T], hold_ms: int) -> None:
        self._target = target
        self._future = future
        self._hold_ms = hold_ms

    def done(self) -> bool:
        if not self._future.done():
            with contextlib.suppress(FutureTimeout):
                self._future.exception(timeout=max(0.0, self._target.settle_deadline - time.monotonic()))
        return self._future.done()

    def result(self) -> T:
        """The answer; with clock control, simulated time is advanced until the server answers."""
        if "clock_control" in self._target.capabilities and not self.done():
            waited, limit = 0, self._hold_ms + HOLD_SLACK_MS
            while not self._future.done():
                if waited > limit:
                    raise AssertionError(f"held request not answered within {limit} ms of simulated time")
                self._target.advance(ADVANCE_STEP_MS)
                waited += ADVANCE_STEP_MS
                with contextlib.suppress(FutureTimeout):
                    self._future.exception(timeout=STEP_WAIT_S)
        return self._future.result(timeout=REQUEST_TIMEOUT_S)


class _HeldRequests:
    """The asyncio loop (in its own thread) on which held requests wait for their answers."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="http-held", daemon=True)
        self._thread.start()
        limits = httpx.Limits(max_connections=MAX_HELD_CONNECTIONS, max_keepalive_connections=64)
        self.client = self._run(self._client(url, limits))

    @staticmethod
    async def _client(url: str, limits: httpx.Limits) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT_S, limits=limits, headers=api_key_headers())

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def start(self, path: str, body: dict[str, Any], parse: Callable[[Any], T]) -> tuple[Future[T], Future[int]]:
        """Send the request; (its answer, its status code as soon as the status line is read)."""
        status: Future[int] = Future()
        answer = asyncio.run_coroutine_threadsafe(self._send(path, body, parse, status), self.loop)
        return answer, status

    async def _send(self, path: str, body: dict[str, Any], parse: Callable[[Any], T], status: Future[int]) -> T:
        try:
            async with self.client.stream("POST", path, json=body) as response:
                status.set_result(response.status_code)
                await response.aread()
        finally:
            if not status.done():
                status.set_result(0)
        if response.status_code >= 400:
            raise _refusal(response, "POST", path)
        if not response.content:
            raise TargetError(HELD_REQUEST_DROPPED, "", "the broker ended the held request without an answer")
        return parse(response.json())

    def close(self) -> None:
        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.client.aclose()

        with contextlib.suppress(Exception):
            self._run(shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()


def _done(value: T) -> Future[T]:
    future: Future[T] = Future()
    future.set_result(value)
    return future


class HttpTarget:
    def __init__(self, url: str, capabilities: frozenset[str] | None = None, name: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.name = name or self.url
        self.capabilities = capabilities if capabilities is not None else frozenset(probe(self.url)["capabilities"])
        self._ns = f"n{os.getpid()}x{next(_namespaces)}-"
        self._http = httpx.Client(base_url=self.url, timeout=REQUEST_TIMEOUT_S, headers=api_key_headers())
        self._held: _HeldRequests | None = None
        #: Until when ``done()`` waits for an answer already on its way (SETTLE_S after the last request).
        self.settle_deadline = 0.0

    # -- plumbing ------------------------------------------------------------------------------
    def _n(self, name: str) -> str:
        return f"{self._ns}{name}" if name else name

    def _strip(self, name: str) -> str:
        return name[len(self._ns):] if name.startswith(self._ns) else name

    def _path_name(self, name: str, field: str) -> str:
        if not name:
            raise TargetError("INVALID_ARGUMENT", field, "must be a non-empty name (not expressible in a URL path)")
        return urllib.parse.quote(self._n(name), safe="")

    def _settled_after_now(self) -> None:
        self.settle_deadline = time.monotonic() + SETTLE_S

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 params: dict[str, Any] | None = None) -> Any:
        response = self._http.request(method, path, json=body, params=params)
        self._settled_after_now()
        if response.status_code >= 400:
            raise _refusal(response, method, path)
        return response.json()

    def _start(self, path: str, body: dict[str, Any], hold_ms: int, parse: Callable[[Any], T]) -> _PendingHttp[T]:
        """A request the server may hold: answered at once when ``hold_ms`` is 0, else in flight."""
        if hold_ms <= 0:
            return _PendingHttp(self, _done(parse(self._request("POST", path, body))), 0)
        if self._held is None:
            self._held = _HeldRequests(self.url)
        answer, status = self._held.start(path, body, parse)
        with contextlib.suppress(FutureTimeout):
            if status.result(timeout=SETTLE_S) >= 400:
                answer.result(timeout=REQUEST_TIMEOUT_S)  # raises the refusal, as the in-process target does
        self._settled_after_now()
        return _PendingHttp(self, answer, hold_ms)

    # -- Target --------------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int) -> None:
        self._request("POST", "/topics", {"topic": self._n(topic), "queues": queues})

    def send(self, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> SendReceipt:
        payload: dict[str, Any] = {"body": body.decode("utf-8")}
        if tags is not None:
            payload["tags"] = tags
        r = self._request("POST", f"/topics/{self._path_name(topic, 'topic')}/queues/{queue_id}/messages", payload)
        return SendReceipt(r["queueId"], r["queueOffset"], r["msgId"], r.get("commitLogOffset"))

    def send_batch(self, topic: str, queue_id: int, bodies: list[bytes]) -> SendReceipt:
        payload = {"bodies": [b.decode("utf-8") for b in bodies]}
        r = self._request("POST", f"/topics/{self._path_name(topic, 'topic')}/queues/{queue_id}/batches", payload)
        return SendReceipt(r["queueId"], r["queueOffset"], r["msgId"], r.get("commitLogOffset"))

    def start_pull(self, group, topic, queue_id, offset, *, max_nums=32, expression="*", suspend_ms=0,
                   commit_offset=None, client_id="conformance"):  # type: ignore[no-untyped-def]
        body: dict[str, Any] = {
            "consumerGroup": self._n(group), "queueOffset": offset, "maxMsgNums": max_nums,
            "subscription": expression, "suspendTimeoutMs": suspend_ms, "clientId": self._n(client_id),
        }
        if commit_offset is not None:
            body["commitOffset"] = commit_offset
        path = f"/topics/{self._path_name(topic, 'topic')}/queues/{queue_id}/pull"
        return self._start(path, body, suspend_ms, _pull_reply)

    def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[str, int]:
        g, t = self._path_name(group, "consumerGroup"), self._path_name(topic, "topic")
        r = self._request("GET", f"/groups/{g}/offsets/{t}/{queue_id}")
        return r["code"], r["offset"]

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        g, t = self._path_name(group, "consumerGroup"), self._path_name(topic, "topic")
        self._request("PUT", f"/groups/{g}/offsets/{t}/{queue_id}", {"offset": offset})

    def heartbeat(self, conn, client_id, group, subscriptions, model="CLUSTERING", sub_version=0):  # type: ignore[no-untyped-def]
        subs = {self._n(t): {"expression": e, "subVersion": sub_version} for t, e in subscriptions.items()}
        body = {
            "connection": self._n(conn), "clientId": self._n(client_id),
            "consumers": {self._n(group): {"messageModel": model, "subscriptions": subs}},
        }
        return bool(self._request("POST", "/consumers/heartbeat", body)["changed"])

    def unregister(self, conn: str, group: str) -> None:
        self._request("POST", "/consumers/unregister", {"connection": self._n(conn), "consumerGroup": self._n(group)})

    def consumer_ids(self, group: str) -> list[str]:
        r = self._request("GET", f"/groups/{self._path_name(group, 'consumerGroup')}/consumers")
        return [self._strip(c) for c in r["clientIds"]]

    def notifications(self, conn: str) -> list[str]:
        r = self._request("GET", f"/connections/{self._path_name(conn, 'connection')}/notifications")
        return [self._strip(g) for g in r["groups"]]

    def min_max(self, topic: str, queue_id: int) -> tuple[int, int]:
        r = self._request("GET", f"/topics/{self._path_name(topic, 'topic')}/queues/{queue_id}/offsets")
        return r["minOffset"], r["maxOffset"]

    def allocate(
        self, strategy: str, group: str, current_cid: str, mq_all: list[tuple[str, str, int]], cid_all: list[str]
    ) -> list[tuple[str, str, int]]:
        body = {
            "strategy": strategy, "consumerGroup": self._n(group), "currentCID": current_cid, "cidAll": cid_all,
            "mqAll": [{"topic": self._n(t), "brokerName": b, "queueId": q} for t, b, q in mq_all],
        }
        r = self._request("POST", "/allocation", body)
        return [(self._strip(x["topic"]), x["brokerName"], x["queueId"]) for x in r["result"]]

    def run_retention(self) -> None:
        self._request("POST", "/admin/retention")

    def advance(self, ms: int) -> None:
        if "clock_control" in self.capabilities:
            self._request("POST", "/admin/clock/advance", {"ms": ms})
        else:
            time.sleep(ms / 1000.0)

    def clock_now_ms(self) -> int:
        return int(self._request("GET", "/admin/clock")["nowMs"])

    def store_layout(self) -> StoreLayout:
        """``GET /admin/store-layout`` (capability ``store_layout``): the server's segment sizes."""
        body = self._request("GET", "/admin/store-layout")
        return StoreLayout(int(body["commitLogSegmentBytes"]), int(body["consumeQueueSegmentUnits"]),
                           int(body["cleanIntervalMs"]))

    def restart(self) -> None:
        self._request("POST", "/admin/restart")

    def close(self) -> None:
        if self._held is not None:
            self._held.close()
        self._http.close()

    # -- pop -----------------------------------------------------------------------------------
    def _group_topic(self, group: str, topic: str) -> str:
        return f"/groups/{self._path_name(group, 'consumerGroup')}/topics/{self._path_name(topic, 'topic')}"

    def pop(self, group, topic, queue_id=-1, max_nums=32, invisible_ms=60_000, poll_ms=0, client_id="conformance",
            expression="*"):  # type: ignore[no-untyped-def]
        body = {"queueId": queue_id, "maxMsgNums": max_nums, "invisibleTimeMs": invisible_ms, "pollTimeMs": poll_ms,
                "expression": expression, "clientId": self._n(client_id)}
        return self._start(f"{self._group_topic(group, topic)}/pop", body, poll_ms, self._pop_reply)

    def _pop_reply(self, r: dict[str, Any]) -> PopReply:
        return PopReply(
            code=r["code"], rest_num=r["restNum"], held_ms=r["heldMs"],
            messages=tuple(
                PoppedRecord(self._strip(x["topic"]), x["queueId"], x["queueOffset"], _bytes(x), x["tags"],
                             x["msgId"], x["receiptHandle"], x["reconsumeTimes"], x["retry"], dict(x["properties"]))
                for x in r["messages"]
            ),
        )

    def ack(self, group: str, topic: str, handle: str) -> None:
        self._request("POST", f"{self._group_topic(group, topic)}/ack", {"receiptHandle": handle})

    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str:
        body = {"receiptHandle": handle, "invisibleTimeMs": invisible_ms}
        return str(self._request("POST", f"{self._group_topic(group, topic)}/invisible-time", body)["receiptHandle"])

    def query_assignment(self, group, topic, client_id, strategy="AllocateMessageQueueAveragely",
                         pop_share_queue_num=-1, model="CLUSTERING", mode="POP"):  # type: ignore[no-untyped-def]
        params = {"clientId": self._n(client_id), "strategy": strategy, "popShareQueueNum": pop_share_queue_num,
                  "messageModel": model, "mode": mode}
        r = self._request("GET", f"{self._group_topic(group, topic)}/assignment", params=params)
        return [(self._strip(q["topic"]), q["brokerName"], q["queueId"]) for q in r["queues"]]

    # -- permits -------------------------------------------------------------------------------
    def _consumer(self, group: str, client_id: str, topic: str) -> str:
        return f"{self._group_topic(group, topic)}/permit-consumers/{self._path_name(client_id, 'consumerName')}"

    def subscribe_permits(self, group: str, topic: str, client_id: str, sub_type: str = "Exclusive") -> None:
        # Earliest: a new subscription sees what the test sent before subscribing, as the in-process target.
        body = {"clientId": self._n(client_id), "subType": sub_type, "queueId": 0, "initialPosition": "Earliest"}
        self._request("POST", f"{self._group_topic(group, topic)}/permit-consumers", body)

    def flow(self, group: str, client_id: str, topic: str, permits: int) -> None:
        self._request("POST", f"{self._consumer(group, client_id, topic)}/flow", {"messagePermits": permits})

    def permits(self, group: str, client_id: str, topic: str) -> int:
        return int(self._request("GET", self._consumer(group, client_id, topic))["permits"])

    def dispatched(self, group: str, client_id: str, topic: str) -> list[DispatchedRecord]:
        try:
            r = self._request("GET", f"{self._consumer(group, client_id, topic)}/messages")
        except TargetError as exc:
            if exc.code == "CONSUMER_NOT_FOUND":
                return []  # never subscribed: nothing was dispatched to it
            raise
        return [DispatchedRecord(x["msgId"], x["offset"], x["batchIndex"], _bytes(x), x["redeliveryCount"])
                for x in r["messages"]]

    def ack_dispatched(self, group: str, client_id: str, topic: str, records: list[DispatchedRecord]) -> None:
        self._request("POST", f"{self._consumer(group, client_id, topic)}/ack", {"positions": _positions(records)})

    def redeliver(self, group, client_id, topic, records=None):  # type: ignore[no-untyped-def]
        positions = None if records is None else _positions(records)
        self._request("POST", f"{self._consumer(group, client_id, topic)}/redeliver", {"positions": positions})

    def close_consumer(self, group: str, client_id: str, topic: str) -> None:
        self._request("DELETE", self._consumer(group, client_id, topic))


def _pull_reply(r: dict[str, Any]) -> PullReply:
    return PullReply(
        code=r["code"], status=r["status"], next_begin_offset=r["nextBeginOffset"], min_offset=r["minOffset"],
        max_offset=r["maxOffset"], held_ms=r["heldMs"],
        messages=tuple(PulledMessage(x["queueOffset"], _bytes(x), x["tags"], x["msgId"]) for x in r["messages"]),
    )


def _positions(records: list[DispatchedRecord]) -> list[dict[str, int]]:
    """Dispatched records as the front's message positions (ack, redeliver)."""
    return [{"offset": r.offset, "batchIndex": r.batch_index} for r in records]
