"""Spark SQL text for the audit's static expressions: literal maps and lists, and the schema checks.

Why text: in PySpark every node of a Column expression is a py4j round trip (a literal map of 200 names is
400 calls), and a small audit's plan phase is bounded by the driver's one planning thread. An expression
written as SQL text is parsed by the JVM in one call (``F.expr``), to the same expression tree. Only
expressions built from constants and column names are written this way; the derivations' logic stays in
the DataFrame API, where it reads best.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

Literal = str | int | bool | None


def name(column: str) -> str:
    """A column reference (backquoted: ``offset``, ``group`` and ``event`` are SQL keywords)."""
    return "`" + column.replace("`", "``") + "`"


def text(value: str) -> str:
    """A SQL string literal. Spark reads backslash escapes in string literals, so backslashes, quotes and
    control characters (the audit's key separator is NUL) are escaped."""
    out = []
    for ch in value:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def literal(value: Literal) -> str:
    """A literal as Spark types it from Python (:func:`pyspark.sql.functions.lit`): an int that fits 32 bits
    is INT, a larger one BIGINT, as the SQL parser types an integer literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # -2147483648 is INT for lit() but the parser reads it as minus a BIGINT.
        return "CAST(-2147483648 AS INT)" if value == -(2**31) else str(value)
    return text(value)


def literal_map(pairs: Mapping[Literal, Literal]) -> Column:
    """``F.create_map(lit(k1), lit(v1), ...)`` in one call."""
    return F.expr("map(" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in pairs.items()) + ")")


def one_of(column_sql: str, values: Iterable[Literal]) -> str:
    """``column IN (v1, ...)`` (``Column.isin``) as text."""
    return f"{column_sql} IN ({', '.join(map(literal, values))})"


def when(condition: str, value: str) -> str:
    """``F.when(condition, value)`` without ``otherwise``: null where the condition is not true."""
    return f"CASE WHEN {condition} THEN {value} END"


def coalesce(*parts: str) -> str:
    return f"coalesce({', '.join(parts)})"
