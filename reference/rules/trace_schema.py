"""Trace schema v1: the one record format every component writes and the auditor reads.

This module owns the schema (``docs/trace-schema.md`` is its prose form): the column list with
types, the event kinds and the columns each requires. ``fixtures/trace-schema-v1.json`` (JSON Schema)
and ``fixtures/trace-schema-v1.arrow.json`` (the Parquet/Spark schema) are rendered from these
tables and a test keeps them equal, so an implementer in another language can validate a trace
without Python. Writing traces (sinks, recorders) is :mod:`reference.trace`'s job.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SCHEMA_VERSION = 1

#: (column, arrow type, JSON Schema type). Order is the Parquet column order.
COLUMNS: tuple[tuple[str, pa.DataType, str], ...] = (
    ("schema_version", pa.int32(), "integer"),
    ("run", pa.string(), "string"),
    ("ts", pa.int64(), "integer"),
    ("source", pa.string(), "string"),
    ("seq", pa.int64(), "integer"),
    ("event", pa.string(), "string"),
    ("group", pa.string(), "string"),
    ("client_id", pa.string(), "string"),
    ("topic", pa.string(), "string"),
    ("broker", pa.string(), "string"),
    ("queue_id", pa.int32(), "integer"),
    ("offset", pa.int64(), "integer"),
    ("msg_id", pa.string(), "string"),
    ("tags", pa.string(), "string"),
    ("expression", pa.string(), "string"),
    ("model", pa.string(), "string"),
    ("status", pa.string(), "string"),
    ("next_offset", pa.int64(), "integer"),
    ("min_offset", pa.int64(), "integer"),
    ("max_offset", pa.int64(), "integer"),
    ("count", pa.int32(), "integer"),
    ("max_nums", pa.int32(), "integer"),
    ("suspend_ms", pa.int64(), "integer"),
    ("held_ms", pa.int64(), "integer"),
    ("handle", pa.string(), "string"),
    ("invisible_ms", pa.int64(), "integer"),
    ("reconsume_times", pa.int32(), "integer"),
    ("epoch", pa.int64(), "integer"),
    ("detail", pa.string(), "string"),
)
COLUMN_NAMES = tuple(c[0] for c in COLUMNS)
BASE_COLUMNS = ("schema_version", "run", "ts", "source", "seq", "event")

_Q = ("topic", "broker", "queue_id")
#: Event kind -> columns it requires beyond the base five (trace-schema.md, "Event kinds").
EVENT_REQUIRED: dict[str, tuple[str, ...]] = {
    "SEND": (*_Q, "offset", "msg_id", "tags"),
    "RETENTION": (*_Q, "min_offset"),
    "SUBSCRIBE": ("group", "client_id", "topic", "expression", "model"),
    "UNSUBSCRIBE": ("group", "client_id"),
    "ASSIGN": ("group", "client_id", *_Q, "offset", "epoch"),
    "REVOKE": ("group", "client_id", *_Q, "epoch"),
    "PULL_REQ": ("group", "client_id", *_Q, "offset", "max_nums", "suspend_ms"),
    "PULL_RESP": (
        "group", "client_id", *_Q, "offset", "status", "next_offset", "min_offset", "max_offset",
        "count", "held_ms",
    ),
    "DELIVER": ("group", "client_id", *_Q, "offset", "msg_id", "reconsume_times"),
    "CONSUME": ("group", "client_id", "msg_id", "status", *_Q, "offset"),
    "COMMIT": ("group", "client_id", *_Q, "offset"),
    "POP": ("group", "client_id", *_Q, "offset", "msg_id", "handle", "invisible_ms", "reconsume_times"),
    "ACK": ("group", "client_id", "handle", "status", "msg_id"),
    "CHANGE_INVISIBLE": ("group", "client_id", "handle", "invisible_ms", "msg_id"),
    "REVIVE": ("group", "msg_id", "reconsume_times"),
    "FLOW": ("group", "client_id", "topic", "count"),
    "DISPATCH": ("group", "client_id", "topic", "msg_id", "offset"),
    "CRASH": (),
    "RESTART": (),
    "END": (),
}

ARROW_SCHEMA = pa.schema(
    [pa.field(name, typ, nullable=name not in BASE_COLUMNS) for name, typ, _ in COLUMNS],
    metadata={"schema_version": str(SCHEMA_VERSION)},
)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one trace row, rendered from the tables above."""
    props: dict[str, Any] = {}
    for name, _, jtype in COLUMNS:
        props[name] = {"type": [jtype, "null"]} if name not in BASE_COLUMNS else {"type": jtype}
    props["schema_version"] = {"const": SCHEMA_VERSION}
    props["event"] = {"enum": sorted(EVENT_REQUIRED)}
    all_of = []
    for event, required in sorted(EVENT_REQUIRED.items()):
        if not required:
            continue
        all_of.append(
            {
                "if": {"properties": {"event": {"const": event}}},
                "then": {
                    "required": list(required),
                    "properties": {c: {"not": {"type": "null"}} for c in required},
                },
            }
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://mqtck.invalid/trace-schema-v1.json",
        "title": "mqtck trace row, schema v1",
        "type": "object",
        "required": list(BASE_COLUMNS),
        "properties": props,
        "additionalProperties": False,
        "allOf": all_of,
    }


def arrow_schema_json() -> dict[str, Any]:
    """The Parquet/Spark column list as JSON: name, Arrow type, Spark type, nullable."""
    spark = {"int32": "integer", "int64": "long", "string": "string"}
    return {
        "schema_version": SCHEMA_VERSION,
        "fields": [
            {"name": f.name, "arrow": str(f.type), "spark": spark[str(f.type)], "nullable": f.nullable}
            for f in ARROW_SCHEMA
        ],
    }


def missing_columns(row: dict[str, Any]) -> list[str]:
    """Columns the row's event requires but lacks (empty for a well-formed row)."""
    need = BASE_COLUMNS + EVENT_REQUIRED.get(row.get("event", ""), ())
    return [c for c in need if row.get(c) is None]
