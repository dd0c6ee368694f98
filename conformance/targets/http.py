"""A target behind the HTTP front (``reference/net/http``): the reference's own server, or any
implementation that serves the same OpenAPI document.

Isolation: one server serves the whole run, so every name a test uses (topics, groups, client ids,
connections) is prefixed with a namespace unique to the target instance and the prefix is removed
from what comes back. Empty names are sent as they are (they must be refused), except where the API
puts a name in the URL path, where an empty name cannot be expressed: there the target refuses it
itself, naming the same field.

Time: with ``clock_control`` (a server started with ``--sim-clock``) ``advance`` moves the server's
simulated clock; otherwise it sleeps. A held pull runs in a worker thread; ``done()`` waits up to
:data:`SETTLE_S` for an answer already on its way, the one tolerance that real sockets add.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import httpx

from . import PulledMessage, PullReply, SendReceipt, TargetError

#: How long ``done()`` waits for a response already answered by the server to cross loopback.
SETTLE_S = 0.25
#: Client-side timeout of one request (a held pull may last its suspend time plus one check).
REQUEST_TIMEOUT_S = 120.0
#: HTTP front field names -> the neutral names the suite and the reference's errors use.
FIELD_NAMES = {
    "offset": "commitOffset",
    "clientId": "clientID",
    "subscription": "expression",
    "group": "consumerGroup",
    "messageModel": "consumerData.messageModel",
}
_namespaces = itertools.count()


class UnreachableTarget(Exception):
    """The server did not answer; ``mqtck conform`` turns this into exit 2."""


def probe(url: str) -> dict[str, Any]:
    """``GET /capabilities``: what the server says it can do (UnreachableTarget if it cannot say)."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/capabilities", timeout=5.0)
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


class _PendingHttpPull:
    def __init__(self, target: HttpTarget, future: Future[PullReply], suspend_ms: int) -> None:
        self._target = target
        self._future = future
        self._suspend_ms = suspend_ms

    def done(self) -> bool:
        try:
            self._future.result(timeout=SETTLE_S)
        except FutureTimeout:
            return False
        except TargetError:
            return True
        return True

    def result(self) -> PullReply:
        """The answer; with clock control, simulated time is advanced until the server answers."""
        if "clock_control" in self._target.capabilities:
            waited, limit = 0, self._suspend_ms + 60_000
            while not self._future.done():
                if waited > limit:
                    raise AssertionError(f"held pull not answered within {limit} ms of simulated time")
                self._target.advance(500)
                waited += 500
                try:
                    return self._future.result(timeout=0.05)
                except FutureTimeout:
                    continue
        return self._future.result(timeout=REQUEST_TIMEOUT_S)


class HttpTarget:
    def __init__(self, url: str, capabilities: frozenset[str] | None = None, name: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.name = name or self.url
        self.capabilities = capabilities if capabilities is not None else frozenset(probe(self.url)["capabilities"])
        self._ns = f"n{os.getpid()}x{next(_namespaces)}-"
        self._http = httpx.Client(base_url=self.url, timeout=REQUEST_TIMEOUT_S)
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="http-pull")

    # -- plumbing ------------------------------------------------------------------------------
    def _n(self, name: str) -> str:
        return f"{self._ns}{name}" if name else name

    def _strip(self, name: str) -> str:
        return name[len(self._ns):] if name.startswith(self._ns) else name

    def _path_name(self, name: str, field: str) -> str:
        if not name:
            raise TargetError("INVALID_ARGUMENT", field, "must be a non-empty name (not expressible in a URL path)")
        return self._n(name)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._http.request(method, path, json=body)
        if response.status_code >= 400:
            try:
                err = response.json()["error"]
                raise TargetError(str(err["code"]), _neutral_field(str(err["field"])), str(err["rule"]))
            except (ValueError, KeyError, TypeError):
                raise AssertionError(
                    f"{method} {path} -> {response.status_code} without an error body: {response.text[:200]}"
                ) from None
        return response.json()

    # -- Target --------------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int) -> None:
        self._request("POST", "/topics", {"topic": self._n(topic), "queues": queues})

    def send(self, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> SendReceipt:
        payload: dict[str, Any] = {"body": body.decode("utf-8")}
        if tags is not None:
            payload["tags"] = tags
        r = self._request("POST", f"/topics/{self._path_name(topic, 'topic')}/queues/{queue_id}/messages", payload)
        return SendReceipt(r["queueId"], r["queueOffset"], r["msgId"])

    def start_pull(self, group, topic, queue_id, offset, *, max_nums=32, expression="*", suspend_ms=0,
                   commit_offset=None, client_id="conformance"):  # type: ignore[no-untyped-def]
        body: dict[str, Any] = {
            "consumerGroup": self._n(group), "queueOffset": offset, "maxMsgNums": max_nums,
            "subscription": expression, "suspendTimeoutMs": suspend_ms, "clientId": self._n(client_id),
        }
        if commit_offset is not None:
            body["commitOffset"] = commit_offset
        path = f"/topics/{self._path_name(topic, 'topic')}/queues/{queue_id}/pull"
        if suspend_ms == 0:
            return _PendingHttpPull(self, _done(self._pull(path, body)), 0)
        future = self._pool.submit(self._pull, path, body)
        # A refusal comes back at once; surface it here, as the in-process target does.
        with contextlib.suppress(FutureTimeout):
            future.result(timeout=SETTLE_S)
        return _PendingHttpPull(self, future, suspend_ms)

    def _pull(self, path: str, body: dict[str, Any]) -> PullReply:
        r = self._request("POST", path, body)
        return PullReply(
            code=r["code"], status=r["status"], next_begin_offset=r["nextBeginOffset"], min_offset=r["minOffset"],
            max_offset=r["maxOffset"], held_ms=r["heldMs"],
            messages=tuple(
                PulledMessage(x["queueOffset"], x["body"].encode("utf-8"), x["tags"], x["msgId"])
                for x in r["messages"]
            ),
        )

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

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()


def _done(value: PullReply) -> Future[PullReply]:
    future: Future[PullReply] = Future()
    future.set_result(value)
    return future
