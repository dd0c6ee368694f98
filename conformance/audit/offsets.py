"""*bad offset correction*: a PULL_RESP whose status or next_offset disagrees with the offset-correction
table for its (offset, min_offset, max_offset).

The rule has one owner, :data:`reference.rules.status.CORRECTION_TABLE` (evaluated by
:func:`~reference.rules.status.check_offset`). Its conditions compare the requested offset with the
queue's min and max and with 0, and its next offsets are one of those values; so the table's answer
is constant on each *order class* of (0, min, max, offset), that is, on each way the four can compare
(0 <= min <= max; the offset anywhere). :func:`expected_correction` evaluates ``check_offset`` on one
representative of each of the 16 classes and turns the answers into one Spark CASE expression, naming
the next offset symbolically (``0``, ``min``, ``max`` or ``offset``, whichever equals the answer on the
representative: within a class equal symbols are equal everywhere). Nothing here restates the table;
``tests/audit`` checks the expression against ``check_offset`` on a grid.

In the legal range (the table answers None) the store reads the consume queue: FOUND and NO_MATCHED_MESSAGE
must advance past what was scanned (``offset < next <= max``; FOUND returns at least one message and no more
than it scanned, NO_MATCHED_MESSAGE none); MESSAGE_WAS_REMOVING and OFFSET_FOUND_NULL skip forward (``next >
offset``). Past the max of a queue whose min is 0 (OFFSET-4) either answer conforms: the seed's 0, or the
max that Apache RocketMQ gives since 4.9.4 (:func:`~reference.rules.status.overflow_to_max`), so a real
broker's trace is not flagged for it. Statuses that are not GetMessageStatus names (a client recording its
own PullStatus) and NO_MATCHED_LOGIC_QUEUE (no queue at all) are not judged.
"""

from __future__ import annotations

from itertools import combinations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import TraceFrames
from conformance.audit.schema import findings, witness
from reference.rules.status import CORRECTION_TABLE, CorrectionRow, GetMessageStatus, check_offset, overflow_to_max

#: The spec statement of each table row, by the row's condition (tests check every row is named).
ROW_REQUIREMENT = {
    "max == 0": "OFFSET-1",
    "offset < min": "OFFSET-2",
    "offset == max": "OFFSET-3",
    "offset > max and min == 0": "OFFSET-4",
    "offset > max and min > 0": "OFFSET-5",
    "offset > max": "OFFSET-4",  # the row of overflow_to_max, Apache RocketMQ's answer since 4.9.4
}
READ_REQUIREMENT = {
    GetMessageStatus.FOUND: "OFFSET-6",
    GetMessageStatus.NO_MATCHED_MESSAGE: "OFFSET-6",
    GetMessageStatus.MESSAGE_WAS_REMOVING: "OFFSET-7",
    GetMessageStatus.OFFSET_FOUND_NULL: "OFFSET-8",
}
_SYMBOLS = ("zero", "min", "max", "offset")


def representatives() -> list[tuple[int, int, int]]:
    """One (offset, min, max) per order class of (0, min, max, offset) with 0 <= min <= max, offset >= 0."""
    reps = []
    for lo, hi in ((0, 0), (0, 10), (10, 10), (10, 20)):
        points = sorted({0, lo, hi})
        offsets = set(points) | {(a + b) // 2 for a, b in zip(points, points[1:], strict=False)} | {points[-1] + 5}
        reps += [(offset, lo, hi) for offset in sorted(offsets)]
    return reps


def _symbols(offset: Column, lo: Column, hi: Column) -> dict[str, Column]:
    return {"zero": F.lit(0).cast("long"), "min": lo, "max": hi, "offset": offset}


def _class_condition(rep: tuple[int, int, int], cols: dict[str, Column]) -> Column:
    values = dict(zip(("offset", "min", "max"), rep, strict=True), zero=0)
    cond = F.lit(True)
    for a, b in combinations(_SYMBOLS, 2):
        if values[a] < values[b]:
            cond = cond & (cols[a] < cols[b])
        elif values[a] == values[b]:
            cond = cond & (cols[a] == cols[b])
        else:
            cond = cond & (cols[a] > cols[b])
    return cond


def expected_correction(offset: Column, lo: Column, hi: Column,
                        table: tuple[CorrectionRow, ...] = CORRECTION_TABLE) -> Column:
    """A struct (status, next_offset, requirement) from the correction table, or null in the legal range."""
    cols = _symbols(offset, lo, hi)
    expr = None
    for rep in representatives():
        status, next_offset = check_offset(*rep, table=table)
        if status is None:
            continue
        values = dict(zip(("offset", "min", "max"), rep, strict=True), zero=0)
        symbol = next(s for s in _SYMBOLS if values[s] == next_offset)
        row = next(r for r in table if r.applies(*rep))
        value = F.struct(F.lit(status.name).alias("status"), cols[symbol].alias("next_offset"),
                         F.lit(ROW_REQUIREMENT[row.condition]).alias("requirement"))
        cond = _class_condition(rep, cols)
        expr = F.when(cond, value) if expr is None else expr.when(cond, value)
    return expr  # no otherwise: null in the legal range


def find(frames: TraceFrames) -> DataFrame:
    p = frames.params
    rows = frames.view("PULL_RESP", "broker")
    judged = [s.name for s in GetMessageStatus if s is not GetMessageStatus.NO_MATCHED_LOGIC_QUEUE]
    rows = rows.filter(F.col("status").isin(*judged))
    want = expected_correction(F.col("offset"), F.col("min_offset"), F.col("max_offset"))
    # OFFSET-4 allows either answer past the max of a queue whose min is 0: the seed's 0, or Apache
    # RocketMQ's max (4.9.4 and later); the other rows have one answer, the same in both tables.
    upstream = expected_correction(F.col("offset"), F.col("min_offset"), F.col("max_offset"),
                                   overflow_to_max(CORRECTION_TABLE))
    rows = rows.withColumns({"want": want, "upstream_next": upstream.getField("next_offset")})
    status, nxt, off, hi, count = (F.col(c) for c in ("status", "next_offset", "offset", "max_offset", "count"))
    table_wrong = F.col("want").isNotNull() & (
        (status != F.col("want.status"))
        | ((nxt != F.col("want.next_offset")) & (nxt != F.col("upstream_next"))))
    advances = (nxt > off) & (nxt <= hi)
    # A FOUND answer's maxOffset may be read before messages it returns were dispatched (Apache RocketMQ 4.9.7
    # answered offset 890, two messages, next 892, maxOffset 891: mqtck bench e2e); the messages show the queue
    # reached offset + count.
    found_advances = (nxt > off) & (nxt <= F.greatest(hi, off + count))
    read_wrong = F.col("want").isNull() & (
        ~status.isin(*[s.name for s in READ_REQUIREMENT])
        | ((status == "FOUND") & (~found_advances | (count <= 0) | (nxt - off < count)))
        | ((status == "NO_MATCHED_MESSAGE") & (~advances | (count != 0)))
        | (status.isin("MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL") & (nxt <= off))
    )
    rows = rows.filter(table_wrong | read_wrong)
    read_req = F.lit("OFFSET-6")
    for s, rid in READ_REQUIREMENT.items():
        read_req = F.when(status == s.name, F.lit(rid)).otherwise(read_req)
    requirement = F.when(F.col("want").isNotNull(), F.col("want.requirement")).otherwise(read_req)
    detail = F.to_json(F.struct(
        F.coalesce(F.col("want.status"), F.lit("a read status (legal offset)")).alias("expected_status"),
        F.col("want.next_offset").alias("expected_next_offset"),
        status.alias("status"), nxt.alias("next_offset"),
    ))
    return findings(
        rows, "bad-offset-correction", requirement, p.max_witnesses, detail=detail,
        witnesses=F.array(witness("group", "client_id", "topic", "broker", "queue_id", "offset", "status",
                                  "next_offset", "min_offset", "max_offset", "count", "held_ms")),
    )
