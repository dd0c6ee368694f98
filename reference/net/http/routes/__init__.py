"""The HTTP front's routes, one router per domain, in the order the OpenAPI document lists them.

Each router's handlers decode a request, call the broker their :class:`~reference.net.http.state.FrontState`
serves and encode its answer; they raise :class:`~reference.rules.errors.InvalidRequest` and leave the status code
to :mod:`reference.net.http.errors`. The split mirrors the remoting front's request tables.
"""

from __future__ import annotations

from fastapi import APIRouter

from reference.net.http.routes import admin, consumers, messages, permits, pop, service

ROUTERS: tuple[APIRouter, ...] = (
    service.router, messages.router, consumers.router, pop.router, permits.router, admin.router,
)
