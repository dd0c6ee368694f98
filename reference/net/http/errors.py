"""Every refusal of the HTTP front mapped to its status code, in one place.

A rule broken by the input is a 400; an unknown topic, queue, group or consumer a 404; a refusal caused by the
broker's state (no subscription, a receipt handle that names no pending delivery, a busy exclusive subscription,
a clock that cannot be moved) a 409; a broker that cannot take writes now a 503; always
``{"error": {"code", "field", "rule"}}``, never a 500. Routes only raise
:class:`~reference.rules.errors.InvalidRequest`; the exception handlers installed here write the answer.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from reference.broker.permits.service import CONSUMER_BUSY, CONSUMER_NOT_FOUND, INVALID_PERMITS, SUBSCRIPTION_MISMATCH
from reference.broker.pop.ack import SUBSCRIPTION_GROUP_NOT_EXIST
from reference.broker.pop.assignment import CONSUMER_NOT_ONLINE
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE
from reference.net.http import models as m
from reference.net.http.api_key import API_KEY_HEADER, UNAUTHORIZED
from reference.rules.errors import InvalidRequest, TopicNotFound
from reference.store.store import StoreClosed

#: The error answers a route that reaches the broker documents.
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": m.ErrorResponse, "description": "a field broke a rule; the body names the field and the rule"},
    404: {"model": m.ErrorResponse, "description": "the topic, queue, group or consumer named does not exist"},
    409: {"model": m.ErrorResponse, "description": "the broker's state refuses it (e.g. no subscription)"},
    503: {"model": m.ErrorResponse,
          "description": "the broker cannot take writes now (its disk is full, or it is restarting); try again later"},
}
#: The code of a refusal the broker's state makes temporary (RocketMQ's SERVICE_NOT_AVAILABLE): 503.
SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
#: The methods a 405's Allow header may name, in its order.
HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
#: ``POST /admin/clock/advance`` on a broker running on real time: 409.
CLOCK_NOT_CONTROLLABLE = "CLOCK_NOT_CONTROLLABLE"


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
    CONSUMER_BUSY, SUBSCRIPTION_MISMATCH, "RETRY_TOPIC_NAME_TOO_LONG", CLOCK_NOT_CONTROLLABLE,
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


def _error(status: int, exc: InvalidRequest) -> JSONResponse:
    return JSONResponse({"error": exc.as_dict()}, status_code=status)


def _validation_field(error: dict[str, Any]) -> str:
    if error.get("type") == "json_invalid":
        return "body"
    loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "path", "query")]
    return ".".join(loc) or "body"


async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
    """The schema's refusal (FastAPI's 422) as a 400 naming the first field it refused."""
    first = exc.errors()[0] if exc.errors() else {}
    rule = str(first.get("msg", "is invalid"))
    field = _validation_field(first)
    code = VALIDATION_CODES.get(field.rsplit(".", 1)[-1], "INVALID_ARGUMENT")
    return _error(400, InvalidRequest(field, rule, code))


async def _refused(_: Request, exc: InvalidRequest) -> JSONResponse:
    """The broker's (or the API key check's) refusal, with the status its code or its kind maps to."""
    response = _error(status_for(exc), exc)
    if response.status_code == 401:  # RFC 9110: a 401 names the scheme that would be accepted
        response.headers["WWW-Authenticate"] = f'APIKey header="{API_KEY_HEADER}"'
    return response


async def _closed(_: Request, exc: StoreClosed) -> JSONResponse:
    """A request that reached the broker while its store was shut (a restart in progress): try again."""
    return _error(503, InvalidRequest("broker", str(exc), SERVICE_NOT_AVAILABLE))


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Starlette's own refusals (unknown path, wrong method, unreadable body) in the same error shape."""
    field = {404: "path", 405: "method"}.get(exc.status_code, "body")
    response = _error(exc.status_code, InvalidRequest(field, str(exc.detail), f"HTTP_{exc.status_code}"))
    if exc.status_code == 405:
        response.headers["Allow"] = ", ".join(_allowed_methods(request))
    return response


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves on the request's path (Starlette's 405 names only the first route's).

    Asked of the routes themselves, one method at a time, so that routes inside included routers are counted."""
    return [
        method for method in HTTP_METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in request.app.routes)
    ]


def install_error_handlers(app: FastAPI) -> None:
    """Answer every refusal ``app`` meets in the front's error shape, with its status code."""
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(InvalidRequest)(_refused)
    app.exception_handler(StoreClosed)(_closed)
    app.exception_handler(StarletteHTTPException)(_http)
