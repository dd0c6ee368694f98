"""An API key on the HTTP front: without one, any client that can reach the port may read and write every topic.

The keys are read from a file (one per line; blank lines and ``#`` comments skipped), not from the command line,
where ``ps`` would show them. A request carries its key in the ``X-API-Key`` header (OpenAPI's apiKey scheme, so
the served schema says so and generated clients send it). A missing or wrong key is a 401 in the front's error
shape naming the header, and says nothing of which keys exist; keys are compared in constant time. ``/health``
stays open, as a liveness probe needs and it tells nothing.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from fastapi import Request, Security
from fastapi.security import APIKeyHeader

from reference.rules.errors import InvalidRequest

#: The header a key travels in.
API_KEY_HEADER = "X-API-Key"
#: The refusal's code (HTTP 401).
UNAUTHORIZED = "UNAUTHORIZED"
#: Paths served without a key.
OPEN_PATHS = frozenset({"/health"})
#: A key shorter than this is refused when the file is read: it could be guessed.
MIN_KEY_LENGTH = 16


class Unauthorized(InvalidRequest):
    def __init__(self, rule: str) -> None:
        super().__init__(API_KEY_HEADER, rule, UNAUTHORIZED)


def read_api_keys(path: Path) -> frozenset[str]:
    """The keys in ``path``; ValueError naming the line for a key too short, or for a file holding none."""
    keys: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        key = line.strip()
        if not key or key.startswith("#"):
            continue
        if len(key) < MIN_KEY_LENGTH or any(c.isspace() for c in key):
            raise ValueError(f"{path}:{number}: a key must be at least {MIN_KEY_LENGTH} characters without spaces")
        keys.add(key)
    if not keys:
        raise ValueError(f"{path}: holds no key")
    return frozenset(keys)


def key_checker(keys: frozenset[str]):  # type: ignore[no-untyped-def]  # a FastAPI dependency
    """The dependency every route of an app served with ``keys`` runs first."""
    scheme = APIKeyHeader(name=API_KEY_HEADER, auto_error=False,
                          description="one of the keys in the file the broker was started with (--api-key-file)")
    encoded = [key.encode("utf-8") for key in keys]

    async def check(request: Request, key: str | None = Security(scheme)) -> None:
        if request.url.path in OPEN_PATHS:
            return
        if key is None:
            raise Unauthorized("is required: this broker serves only clients that send an API key")
        given = key.encode("utf-8", "replace")
        # Every key is compared, whichever matches, so the time taken does not tell which one was close.
        if not any([hmac.compare_digest(given, known) for known in encoded]):
            raise Unauthorized("is not a key this broker accepts")

    return check
