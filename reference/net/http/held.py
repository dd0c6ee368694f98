"""Long polling over HTTP: a pull or a pop the broker holds becomes a response whose body follows its late answer.

The status line and headers (200) are sent at once and the JSON body when the broker answers (``deliver_pull`` /
``deliver_pop`` resolve the future the handler registered), so a client learns at once that the request was
accepted and held; a client that just reads the whole response sees an ordinary long request. A held request
dropped by a broker restart ends with an empty body, as a remoting client sees its connection close.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel

from reference.broker.pop.protocol import PopMessageRequest, PopResponse
from reference.broker.protocol import PullMessageRequest, PullResponse


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
