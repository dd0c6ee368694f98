"""Reading a trace: Parquet (a file or a directory, optionally partitioned by ``run``) or JSON Lines
(``.jsonl`` / ``.jsonl.gz``, a file or a directory of them), into one frame of typed schema-v1 columns.

Every loaded frame has the 29 columns of schema v1 with their v1 types, plus ``_bad_reason`` (what is
wrong with the row at the format level, or null) and ``_raw`` (the row as text, for bad rows only).

* **Parquet** is read with the schema merged over all files. A v1 column stored with another type is
  not cast: its non-null values make their rows bad ("wrong type"), so a file that breaks the schema is
  reported, not silently reinterpreted. Columns v1 does not have make a row bad where they are
  non-null. A ``run=`` directory partition supplies the ``run`` column.
* **JSON Lines** is parsed with Spark's VARIANT type (no Python on the rows): each value's JSON type is
  checked against the column's (integers must be numbers with an integral value — ``5.0`` is the
  integer 5, as in JSON Schema, ``5.5`` is refused — and, for int32 columns, in range; strings must be
  strings). The typed rows are staged once as Parquet under the report directory, so the
  derivations scan columnar data instead of re-parsing text for every pass.

An input that cannot be read at all (no such path, no trace files, a corrupt file) raises
:class:`UnreadableTrace` with a one-line reason (the CLI exits 2).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from conformance.audit.inputs import UnreadableTrace, detect, one_line
from conformance.audit.schema import TRACE_SCHEMA, TRACE_TYPES
from conformance.audit.validate import BAD_REASON, RAW, problem

_JSON_TYPE = {T.IntegerType(): "integer", T.LongType(): "integer", T.StringType(): "string"}


@dataclass
class LoadedTrace:
    rows: DataFrame
    format: str
    path: str
    #: Dataset-level observations (mistyped or unknown Parquet columns), for the report.
    notes: list[str] = field(default_factory=list)
    staged: Path | None = None

    def cleanup(self) -> None:
        if self.staged is not None:
            shutil.rmtree(self.staged, ignore_errors=True)


def load_trace(spark: SparkSession, path: str | Path, staging_dir: Path) -> LoadedTrace:
    path = Path(path)
    fmt, paths = detect(path)
    try:
        if fmt == "parquet":
            rows, notes = _load_parquet(spark, paths)
            return LoadedTrace(rows, fmt, str(path), notes)
        staged = staging_dir / "_staged-jsonl"
        shutil.rmtree(staged, ignore_errors=True)
        _stage_jsonl(spark, paths, staged)
        rows, notes = _load_parquet(spark, [str(staged)], staged_columns=True)
        return LoadedTrace(rows, fmt, str(path), notes, staged)
    except UnreadableTrace:
        raise
    except Exception as exc:  # Spark's analysis and execution errors: corrupt or incompatible files
        raise UnreadableTrace(f"{path}: {one_line(exc)}") from exc


def _load_parquet(spark: SparkSession, paths: list[str], staged_columns: bool = False) -> tuple[DataFrame, list[str]]:
    df = spark.read.option("mergeSchema", "true").option("pathGlobFilter", "*.parquet").parquet(*paths)
    present = {f.name: f.dataType for f in df.schema.fields}
    internal = {BAD_REASON, RAW} if staged_columns else set()
    notes: list[str] = []
    columns: list[Column] = []
    problems: list[Column] = []
    for name, typ in TRACE_TYPES.items():
        actual = present.get(name)
        if actual is None:
            columns.append(F.lit(None).cast(typ).alias(name))
        elif actual == typ:
            columns.append(F.col(name))
        else:
            rule = f"wrong type: {name} is {actual.simpleString()}, schema v1 says {typ.simpleString()}"
            notes.append(rule)
            problems.append(F.when(F.col(name).isNotNull(), F.lit(rule)))
            columns.append(F.lit(None).cast(typ).alias(name))
    unknown = [n for n in present if n not in TRACE_TYPES and n not in internal]
    for name in unknown:
        notes.append(f"column {name!r} is not in schema v1: rows where it is set are bad")
        problems.append(F.when(F.col(name).isNotNull(), F.lit(f"unknown column: {name}")))
    if staged_columns:
        problems.insert(0, F.col(BAD_REASON))
    reason = F.coalesce(*problems) if problems else F.lit(None).cast("string")
    raw_source = F.col(RAW) if staged_columns else F.to_json(F.struct(*[F.col(n) for n in present]))
    columns.append(reason.alias(BAD_REASON))
    columns.append(raw_source.alias(RAW))
    return df.select(*columns), notes


#: JSON numbers as Spark's VARIANT parser types them: integers as BIGINT, or DECIMAL(p,s) beyond its range
#: or with a fraction (``5.0`` is DECIMAL(1,0)), exponents as DOUBLE.
_NUMBER_KINDS = ("BIGINT", "DOUBLE", "FLOAT")
#: Wide enough for every int64 and a fraction: the exact value a JSON number is compared with.
_EXACT = "decimal(38,18)"


def _json_field(name: str, typ: T.DataType) -> tuple[Column, Column]:
    """(typed value, problem) for one column of a parsed JSON row ``v``.

    An integer column takes any JSON number whose value is an integer in the column's range, whatever
    its spelling: JSON has one number type and JSON Schema's ``integer`` (the schema's machine-readable
    form, fixtures/) is "a number with a zero fractional part", so ``5``, ``5.0`` and ``5e0`` are the
    same integer while ``5.5`` is not one (rejected naming the column)."""
    kind = F.expr(f"schema_of_variant(variant_get(v, '$.{name}'))")
    sql_type = typ.simpleString()
    typed = F.expr(f"try_variant_get(v, '$.{name}', '{sql_type}')")
    absent = kind.isNull() | (kind == "VOID")
    if _JSON_TYPE[typ] == "string":
        ok = kind == "STRING"
    else:
        number = kind.isin(*_NUMBER_KINDS) | kind.startswith("DECIMAL")
        # The cast to the column type truncates a fraction (5.5 -> 5) and is null out of range: the value
        # is an integer of the column exactly when the cast loses nothing.
        exact = F.expr(f"try_variant_get(v, '$.{name}', '{_EXACT}')")
        ok = number & typed.isNotNull() & F.coalesce(exact == typed.cast(_EXACT), F.lit(False))
    problem = F.when(~absent & ~ok, F.lit(f"wrong type: {name} must be {'an ' + _JSON_TYPE[typ]}"
                                          f"{' (int32)' if typ == T.IntegerType() else ''}"))
    return F.when(~absent & ok, typed).cast(typ).alias(name), problem


def _stage_jsonl(spark: SparkSession, paths: list[str], out: Path) -> None:
    lines = spark.read.text(paths).filter(F.trim(F.col("value")) != "")
    parsed = lines.select(F.col("value"), F.expr("try_parse_json(value)").alias("v"),
                          F.expr("json_object_keys(value)").alias("keys"))
    known = F.array(*[F.lit(n) for n in TRACE_TYPES])
    unknown = F.array_except(F.col("keys"), known)
    values, problems = zip(*(_json_field(f.name, f.dataType) for f in TRACE_SCHEMA.fields), strict=True)
    reason = F.coalesce(
        F.when(F.col("v").isNull() | F.col("keys").isNull(), F.lit("not a JSON object")),
        F.when(F.size(unknown) > 0, F.concat(F.lit("unknown column: "), F.array_join(unknown, ", "))),
        *problems,
    )
    typed = parsed.select(*values, reason.alias(BAD_REASON), F.col("value").alias("_line"))
    # Keep the line of every bad row (format-level or schema-level) as its witness.
    typed = typed.withColumn(RAW, F.when(problem().isNotNull(), F.col("_line"))).drop("_line")
    typed.write.mode("overwrite").parquet(str(out))
