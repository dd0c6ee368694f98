"""The HTTP front's application: one :class:`~reference.net.http.state.FrontState`, the domain routers of
:mod:`reference.net.http.routes`, the error mapping of :mod:`reference.net.http.errors`. No semantics here.

Everything runs on the asyncio loop (every handler is ``async``), because the broker is single-threaded
and its timers run on the same loop (:class:`~reference.clock.RealClock`) or only when a test advances
the simulated clock (``--sim-clock``: time moves only through ``POST /admin/clock/advance``, so a
conformance run over HTTP is as deterministic as the in-process one).

A pull that finds nothing with a suspend timeout, or a pop with a poll time, is held by the broker;
long polling is then a long HTTP request (:mod:`reference.net.http.held`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Security
from fastapi.openapi.utils import get_openapi

from reference.broker.host import BrokerHost
from reference.net.http import models as m
from reference.net.http.api_key import key_checker
from reference.net.http.errors import install_error_handlers
from reference.net.http.routes import ROUTERS
from reference.net.http.state import FrontState


def create_app(host: BrokerHost, name: str = "reference", api_keys: frozenset[str] = frozenset()) -> FastAPI:
    """The FastAPI application serving the broker ``host`` runs: opened and closed with the app's lifespan (on
    the serving loop, where a real clock's timers run). ``POST /admin/restart`` restarts it on the host and
    serves the new broker. With ``api_keys`` every request but ``/health`` must carry one of them
    (:mod:`reference.net.http.api_key`)."""
    front = FrontState(host, name)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        front.open()
        try:
            yield
        finally:
            front.close()

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
    app.state.front = front
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
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
