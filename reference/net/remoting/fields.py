"""Reading a remoting request: header fields and JSON bodies, each refusal naming the field.

The C++ client writes every extFields value as a string and Java clients write numbers as JSON numbers (§2);
both arrive here as strings (:class:`~reference.net.remoting.command.RemotingCommand`). A missing or
malformed field is an :class:`~reference.rules.errors.InvalidRequest` naming it, which the request table turns into
an error response carrying the rule as its remark.
"""

from __future__ import annotations

import json
from typing import Any

from reference.net.remoting.command import RemotingCommand
from reference.rules.errors import InvalidRequest, require


def field_str(cmd: RemotingCommand, name: str, default: str | None = None) -> str:
    value = cmd.ext_fields.get(name, default)
    if value is None:
        raise InvalidRequest(name, "is required")
    return value


def field_int(cmd: RemotingCommand, name: str, default: int | None = None) -> int:
    """An integer header field, whether the client wrote it as a JSON number or a string (§2)."""
    value = cmd.ext_fields.get(name)
    if value is None:
        if default is None:
            raise InvalidRequest(name, "is required")
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(name, f"must be an integer, got {value!r}") from None


def json_body(cmd: RemotingCommand) -> dict[str, Any]:
    try:
        doc = json.loads(cmd.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequest("body", f"must be a JSON object: {exc}") from None
    require(isinstance(doc, dict), "body", "must be a JSON object")
    return doc


def body_str(doc: dict[str, Any], name: str) -> str:
    """A JSON body's field that must be a non-empty string."""
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(name, "must be a non-empty string")
    return value


def as_int(value: object, field: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise InvalidRequest(field, f"must be an integer, got {value!r}") from None
