"""Who consumed what: the OK outcomes of each message per consumer, the basis of *lost*, *unsafe commit*
and the duplicates.

A message counts as consumed by a group when a client of the group recorded CONSUME with status OK.
A failed message that the client gave up on for good also settles it (ALO-1, ALO-2): a CONSUME whose
``detail`` says ``dead_letter`` (sent to %DLQ% after the last retry) or ``discarded`` (broadcasting drops
failures). Only OK outcomes count as consumptions for the duplicates.
POP groups are often recorded by the broker alone: for a group that has no CONSUME rows in a run, a
successful ACK of the message stands for its consumption (the broker only accepts the ack after the
client processed the message). The consumer is the group in clustering mode (``owner`` = '') and each
client in broadcasting mode (``owner`` = the client id), where every client must see every message.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import RUN, TraceFrames, key_of

#: CONSUME statuses of a failed consumption: the message is sent back to %RETRY%{group} (seed 001 §5,
#: RECONSUME_LATER; a listener exception counts as one), unless its detail says ``"retry": "local"``
#: (sending back failed, the message stays in the ProcessQueue: CONSUME-4).
RETRY_STATUSES = ("LATER", "ERROR")
OUTCOME_COLUMNS = (RUN, "group", "client_id", "msg_id", "ts", "seq", "source", "status", "event",
                   "topic", "broker", "queue_id", "offset", "detail")
#: Keys of a CONSUME's detail that mark a final outcome other than OK.
FINAL_DETAIL_KEYS = ("dead_letter", "discarded")


def outcomes(frames: TraceFrames) -> DataFrame:
    """CONSUME rows (the client's view) plus the OK ACKs of groups without CONSUME rows, with ``owner`` and
    ``msg_key`` (:func:`message_key`, what both the consumption table and the duplicates key on)."""
    consume = frames.view("CONSUME", "client").select(*OUTCOME_COLUMNS)
    acks = frames.event("ACK").filter((F.col("status") == "OK") & ~frames.group_has("CONSUME"))
    acks = acks.select(*[F.col(c) if c in acks.columns and c not in ("topic", "broker", "queue_id", "offset", "detail")
                         else F.lit(None).alias(c) for c in OUTCOME_COLUMNS])
    return frames.with_owner(consume.unionByName(acks)).withColumn("msg_key", message_key())


def message_key() -> Column:
    """One 64-bit key per (run, group, owner, msg_id): what consumption is joined on."""
    return key_of(RUN, "group", "owner", "msg_id")


def consumed(outcome_rows: DataFrame, retry_settles: bool, partitions: int) -> DataFrame:
    """Per message key: when it was first done with (OK, or a final failure), when it was first settled
    for commit purposes (also a retry hand-off when ``retry_settles``), and how many OK outcomes it has
    (``ok_n``: two or more make it a duplicate, :mod:`conformance.audit.duplicates`, which so needs no
    shuffle of its own over all the outcomes)."""
    ok = F.col("status") == "OK"
    final = ok
    for name in FINAL_DETAIL_KEYS:
        final = final | F.coalesce(F.get_json_object("detail", f"$.{name}").isNotNull(), F.lit(False))
    handed_over = F.col("status").isin(*RETRY_STATUSES) & (
        F.coalesce(F.get_json_object("detail", "$.retry"), F.lit("")) != "local")
    settles = final | handed_over if retry_settles else final
    # Partitioned like the queue pass's messages (``partitions`` by message key), which it is joined with.
    return outcome_rows.repartition(partitions, "msg_key").groupBy("msg_key").agg(
        F.min(F.when(final, F.col("ts"))).alias("done_ts"),
        F.min(F.when(settles, F.col("ts"))).alias("settled_ts"),
        F.count(F.when(ok, 1)).alias("ok_n"),
    )
