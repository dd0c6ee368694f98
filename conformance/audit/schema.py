"""Trace schema v1 as Spark types, the findings schema, and small column helpers shared by the derivations.

The trace columns come from :mod:`reference.rules.trace_schema` (the schema's one owner); nothing here restates
them. Times in a trace are microseconds (``ts``) while durations are milliseconds (``suspend_ms``,
``invisible_ms``, the auditor's parameters), so :func:`ms` converts at the point of use.
"""

from __future__ import annotations

import re

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from reference.rules.filter import SUB_ALL, TAG_SEPARATOR
from reference.rules.trace_schema import COLUMNS, EVENT_REQUIRED

_SPARK_TYPES = {"int32": T.IntegerType(), "int64": T.LongType(), "string": T.StringType()}

#: The trace row as Spark sees it (every column nullable: validation decides what is missing).
TRACE_SCHEMA = T.StructType([T.StructField(name, _SPARK_TYPES[str(typ)], True) for name, typ, _ in COLUMNS])
TRACE_TYPES: dict[str, T.DataType] = {f.name: f.dataType for f in TRACE_SCHEMA.fields}
EVENTS: tuple[str, ...] = tuple(sorted(EVENT_REQUIRED))

#: A timestamp later than any trace's: stands for "never" in min/max arithmetic.
NEVER = 2**62

#: One row per finding (``findings/`` Parquet and the examples in summary.json).
FINDING_SCHEMA = T.StructType(
    [
        T.StructField("run", T.StringType()),
        T.StructField("category", T.StringType()),
        T.StructField("requirement", T.StringType()),
        T.StructField("ts", T.LongType()),
        T.StructField("group", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("broker", T.StringType()),
        T.StructField("queue_id", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("msg_id", T.StringType()),
        #: The finding's measure in milliseconds where it has one (overlap duration, answer time,
        #: wake latency, freeze duration), else null.
        T.StructField("value_ms", T.DoubleType()),
        T.StructField("detail", T.StringType()),
        T.StructField("witnesses", T.ArrayType(T.StringType())),
    ]
)


def ms(value: int | Column) -> Column:
    """Milliseconds as trace microseconds."""
    return (value if isinstance(value, Column) else F.lit(value)) * F.lit(1000)


def source_kind() -> Column:
    """``broker`` / ``client`` / ``producer`` / … : the part of ``source`` before the colon."""
    return F.substring_index(F.col("source"), ":", 1)


def own_client_source() -> Column:
    """True for a row recorded by the client it names (``source == 'client:' + client_id``)."""
    return F.col("source") == F.concat(F.lit("client:"), F.col("client_id"))


def tag_matches(expression: Column, tags: Column) -> Column:
    """RocketMQ's TAG filter (reference.rules.filter.SubscriptionData.parse): ``*``/blank matches all;
    otherwise the message's tag must equal one of the ``||``-separated, trimmed pieces."""
    pieces = F.filter(F.transform(F.split(expression, re.escape(TAG_SEPARATOR)), F.trim), lambda p: p != "")
    return F.when(F.trim(expression).isin("", SUB_ALL), F.lit(True)).otherwise(
        F.coalesce(F.array_contains(pieces, tags), F.lit(False))
    )


def witness(*columns: str, event: str | None = None) -> Column:
    """One witness event as compact JSON: ``event`` (the row's, or the one given), ``source``, ``seq``,
    ``ts`` and ``columns``; null fields are omitted."""
    base = ["event", "source", "seq", "ts"]
    fields = []
    for name in (*base, *columns):
        if name == "event" and event is not None:
            fields.append(F.lit(event).alias("event"))
        else:
            fields.append(F.col(name).alias(name))
    return F.to_json(F.struct(*fields))


def findings(df, category: str | Column, requirement: str | Column, max_witnesses: int, **columns: Column):
    """Project ``df`` onto the findings schema. ``columns`` maps finding columns to expressions;
    ``witnesses`` is an array column, cut to ``max_witnesses``; missing columns are null."""
    out = []
    for field in FINDING_SCHEMA.fields:
        name = field.name
        if name == "category":
            expr = category if isinstance(category, Column) else F.lit(category)
        elif name == "requirement":
            expr = requirement if isinstance(requirement, Column) else F.lit(requirement)
        elif name in columns:
            expr = columns[name]
            if name == "witnesses":
                expr = F.slice(F.filter(expr, lambda w: w.isNotNull()), 1, max_witnesses)
        elif name in ("run", "group", "client_id", "topic", "broker", "queue_id", "offset", "msg_id", "ts") \
                and name in df.columns:
            expr = F.col(name)
        else:
            expr = F.lit(None)
        out.append(expr.cast(field.dataType).alias(name))
    return df.select(*out)
