"""The queue pass: one shuffle that brings together, per group and queue, the messages the group's
consumers must see, the queue's retention, the commits, pulls and ownership changes, ordered by queue
offset or time.

Why one pass
------------
*lost*, *unsafe commit*, *long-poll wake-up* and the *drop* checks all ask questions about one
consumer's view of one queue, answered by running aggregates:

* a message is *expired* once a RETENTION raised the min offset above it: scanning offsets downwards,
  the earliest RETENTION seen so far is the one that expired it (retention rows sort at
  ``min_offset - 1``, the highest offset they remove);
* a held pull at offset *o* is woken by the first matching message at or above *o*: the same
  downward scan, keeping the lowest message seen;
* a COMMIT of *o* is unsafe when some expected message below *o* was settled (consumed OK, or
  expired) only after the commit: scanning upwards, keep the message with the latest settle time;
* a client pulls or commits after a drop when its latest ASSIGN/REVOKE of the queue before the
  request is a REVOKE: scanning in time order per client.

So the rows are shuffled once by (run, group, topic, broker, queue) and window scans over finer keys
answer everything without another shuffle; the derivation modules read their rows from the result.
Each scan sorts only the row kinds it needs (a window costs per row it sorts, whatever the row kind):
pull pairing reads requests and answers, the drop check ownership changes, requests and commits, the
downward scan messages, retention and paired answers, the upward scan expected messages and commits.
They form two chains (pairing, downwards, upwards; and the drop check) so that no scan's output is read
twice, which in Spark would run that scan twice.

The consumer (``owner``) is the group for clustering and the client for broadcasting
(:mod:`conformance.audit.consumption`). The messages a consumer *expects* are the SENDs that its
group's subscription to the topic accepts, at or above the start offset (the first ASSIGN of the
queue to the group, or to the client when broadcasting). SENDs to consumers with no start (no ASSIGN
recorded) and to groups with no SUBSCRIBE (assumed ``*``) still take part in the wake-up scan, but
are never expected; nor are they for a broadcasting client that is not alive at the end (ALO-2: it
left or crashed for good, its last word on the queue is a REVOKE or a CRASH). Each consumer's view of
the messages is joined with what it consumed (keyed by message id, which is stable across retries)
before the queue shuffle.

Narrow rows
-----------
Window scans cost in proportion to row width and key complexity, and these scan most of a trace. So
the rows carry only numbers, message ids and statuses; names become 64-bit keys (:func:`key_of`): the
consumer's queue (``lane_key``), the client and the recorder. The derivations get names back for the
few rows that are findings (:meth:`QueuePass.named`).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from conformance.audit import consumption
from conformance.audit.frames import RUN, TraceFrames, key_of
from conformance.audit.lineage import cut
from conformance.audit.schema import NEVER

QUEUE = ("topic", "broker", "queue_id")
#: A consumer's queue: the group (and the client, broadcasting) and the queue.
LANE = (RUN, "group", "owner", *QUEUE)
#: Row kinds, in the order rows with the same position sort (upwards scan).
COMMIT, RET, MSG, REQ, RESP, ASSIGN, REVOKE = 0, 1, 2, 3, 4, 5, 6


def lane_key() -> Column:
    return key_of(*LANE)


def _lanes(frames: TraceFrames) -> DataFrame:
    """Every (consumer, queue) with a start or with pulls, the tags it accepts, whether it subscribed,
    and (broadcasting) whether the client still owns the queue at the end."""
    changes = frames.with_owner(frames.views("client", "ASSIGN", "REVOKE"))
    first = F.min_by(F.struct("offset", "ts", "seq", "source", "client_id", "epoch"),
                     F.when(F.col("event") == "ASSIGN", F.struct("ts", "seq")))
    last = F.max_by(F.struct("event", "ts"), F.struct("ts", "seq"))
    starts = changes.groupBy(*LANE).agg(first.alias("start"), last.alias("last_change")).filter(
        F.col("start").isNotNull())
    crashes = frames.event("CRASH").groupBy(RUN, "source").agg(F.max("ts").alias("crashed_at"))
    starts = starts.withColumn("source", F.concat(F.lit("client:"), F.col("owner"))).join(
        F.broadcast(crashes), [RUN, "source"], "left").drop("source")
    # ALO-2: a broadcasting client must see the messages only if it is alive at the end: its last word
    # on the queue is an ASSIGN, not followed by a crash (a crashed client that came back re-ASSIGNs).
    alive = (F.col("owner") == "") | ((F.col("last_change.event") == "ASSIGN") & (
        F.col("crashed_at").isNull() | (F.col("crashed_at") < F.col("last_change.ts"))))
    starts = starts.withColumn("alive", alive).drop("last_change", "crashed_at")
    pulled = frames.with_owner(frames.event("PULL_REQ")).select(*LANE).distinct()
    lanes = starts.join(pulled, list(LANE), "full")
    accepted = frames.accepted_tags().withColumn("subscribed", F.lit(True))
    lanes = lanes.join(F.broadcast(accepted), [RUN, "group", "topic"], "left")
    return lanes.select(*LANE, lane_key().alias("lane_key"), "start",
                        F.coalesce("subscribed", F.lit(False)).alias("subscribed"), F.col("tags").alias("accepts"),
                        F.coalesce("alive", F.lit(True)).alias("alive"))


def _common(kind: int | Column, pos: Column) -> list[Column]:
    kind_col = kind if isinstance(kind, Column) else F.lit(kind)
    return [lane_key().alias("lane_key"), kind_col.cast("int").alias("kind"), pos.cast("long").alias("pos"),
            "ts", "seq", key_of(RUN, "source").alias("src")]


def _messages(frames: TraceFrames, lanes: DataFrame, consumed: DataFrame) -> DataFrame:
    """Accepted SENDs per consumer, with when the consumer consumed (or settled) them."""
    sends = frames.sends().select(RUN, *QUEUE, "offset", "msg_id", "tags", "ts", "seq", "source")
    # A SEND names no group: one copy per consumer of its queue (a broadcast join with the small lane table).
    matched = sends.join(F.broadcast(lanes.drop("lane_key")), [RUN, *QUEUE]).filter(
        F.col("accepts").isNull() | F.array_contains(F.col("accepts"), F.col("tags"))
    )
    expected = F.col("subscribed") & F.col("alive") & F.col("start").isNotNull() & (
        F.col("offset") >= F.col("start.offset"))
    narrow = matched.select(*_common(MSG, F.col("offset")), "offset", expected.alias("expected"),
                            consumption.message_key().alias("msg_key")).repartition(frames.wide_partitions, "msg_key")
    # Both sides arrive partitioned by message key, so the join adds no shuffle. (A shuffled hash join
    # saved about 1 s at 10M events, but its hash table cannot spill, and a 100M audit with one in the
    # plan ran out of execution memory.)
    return narrow.join(consumed, "msg_key", "left").drop("msg_key")


def _retention(frames: TraceFrames, lanes: DataFrame) -> DataFrame:
    ret = frames.event("RETENTION").drop("group").join(F.broadcast(lanes.select(*LANE)), [RUN, *QUEUE])
    return ret.select(*_common(RET, F.col("min_offset") - 1), "min_offset")


def _requests_and_commits(frames: TraceFrames) -> DataFrame:
    """PULL_REQ and COMMIT rows in either view, flagged: the broker's view of requests feeds the long-poll
    pairing, the client's view of requests and commits the drop checks, the client's view of commits the
    unsafe-commit check."""
    is_req = F.col("event") == "PULL_REQ"
    rows = frames.events("PULL_REQ", "COMMIT").withColumns({
        "in_broker_view": is_req & frames.in_view("PULL_REQ", "broker"),
        "in_client_view": F.when(is_req, frames.in_view("PULL_REQ", "client")).otherwise(
            frames.in_view("COMMIT", "client")),
    })
    rows = frames.with_owner(rows.filter(F.col("in_broker_view") | F.col("in_client_view")))
    kind = F.when(F.col("event") == "COMMIT", COMMIT).otherwise(REQ)
    return rows.select(*_common(kind, F.col("offset")), key_of(RUN, "client_id").alias("client"), "offset",
                       "max_nums", "suspend_ms", "in_broker_view", "in_client_view")


def _responses(frames: TraceFrames) -> DataFrame:
    rows = frames.with_owner(frames.view("PULL_RESP", "broker"))
    return rows.select(*_common(RESP, F.col("offset")), key_of(RUN, "client_id").alias("client"), "offset",
                       "status", "next_offset", "min_offset", "max_offset", "count", "held_ms")


def _ownership(frames: TraceFrames) -> DataFrame:
    rows = frames.with_owner(frames.views("client", "ASSIGN", "REVOKE"))
    kind = F.when(F.col("event") == "ASSIGN", ASSIGN).otherwise(REVOKE)
    return rows.select(*_common(kind, F.col("offset")), key_of(RUN, "client_id").alias("client"), "offset", "epoch")


class QueuePass:
    """Builds the queue pass and reduces it in the same scan to what the rest of the job reads:

    * :attr:`candidates`: the few rows some derivation may report (each module says which with its
      ``candidate`` condition), with all their columns;
    * :attr:`metrics`: per lane, metric name and bucket, the count, sum and max of the values each row
      contributes (``metric_items`` says what a row contributes, see :mod:`conformance.audit.metrics`).

    Both come out of one aggregation over the scanned rows, keyed so that candidates stay single rows and
    contributions merge, and partitioned like the scan (no further shuffle); the small result is kept in
    memory. Caching the scanned rows instead would cost more than the scans: building Spark's columnar
    cache of millions of wide rows is several times slower than the window scans themselves."""

    def __init__(self, frames: TraceFrames, consumed: DataFrame, candidates: list[Column],
                 metric_items: Callable[[QueuePass], Column]) -> None:
        self.frames = frames
        self.lanes = cut(_lanes(frames))
        parts = [_messages(frames, self.lanes, consumed), _retention(frames, self.lanes),
                 _requests_and_commits(frames), _responses(frames), _ownership(frames)]
        union = parts[0]
        for part in parts[1:]:
            union = union.unionByName(part, allowMissingColumns=True)
        # One shuffle; each scan reads the row kinds it needs from it (Spark reuses the exchange), and
        # the scans form chains so that no scan's output is read twice (that would run it twice).
        base = union.repartition(frames.wide_partitions, "lane_key")
        rows = _upwards(base, _downwards(base, _pairs(base))).unionByName(_drops(base), allowMissingColumns=True)
        wanted = candidates[0]
        for c in candidates[1:]:
            wanted = wanted | c
        payload_type = T.StructType(rows.schema.fields)
        entry = T.StructType([
            T.StructField("kind", T.IntegerType()), T.StructField("src", T.LongType()),
            T.StructField("seq", T.LongType()), T.StructField("name", T.StringType()),
            T.StructField("b", T.LongType()), T.StructField("v", T.DoubleType()),
            T.StructField("payload", payload_type),
        ])
        as_candidate = F.when(wanted, F.struct(
            F.col("kind").alias("kind"), F.col("src").alias("src"), F.col("seq").alias("seq"),
            F.lit(None).cast("string").alias("name"), F.lit(None).cast("long").alias("b"),
            F.lit(None).cast("double").alias("v"), F.struct(*[F.col(c) for c in rows.columns]).alias("payload"),
        )).cast(entry)
        # The lane's run, for the metric items' time buckets (the run's span), from the small lane table: a
        # broadcast join keeps the scan's partitioning and costs a hash lookup per row.
        rows = rows.join(F.broadcast(self.lanes.select("lane_key", RUN)), "lane_key", "left")
        as_metrics = F.transform(metric_items(self), lambda m: F.struct(
            F.lit(None).cast("int").alias("kind"), F.lit(None).cast("long").alias("src"),
            F.lit(None).cast("long").alias("seq"), m["name"].alias("name"), m["b"].alias("b"), m["v"].alias("v"),
            F.lit(None).cast(payload_type).alias("payload")).cast(entry))
        entries = F.filter(F.concat(F.array(as_candidate), as_metrics), lambda e: e.isNotNull())
        # The payload is part of the key (null for metric items, unique for a candidate): the buffers are
        # then numbers only and Spark aggregates in its generated hash map; collect_list or first() over a
        # struct would fall back to the interpreted object aggregation, slower than the scans themselves.
        reduced = rows.select("lane_key", F.explode(entries).alias("e")).groupBy(
            "lane_key", "e.kind", "e.src", "e.seq", "e.name", "e.b", "e.payload"
        ).agg(F.count("*").alias("n"), F.sum("e.v").alias("total"),
              F.max("e.v").alias("top"))
        reduced = cut(reduced)
        self.candidates = reduced.filter(F.col("kind").isNotNull()).select("payload.*")
        self._msg_ids = _message_ids(frames, self.candidates)
        self.metrics = reduced.filter(F.col("name").isNotNull()).select("lane_key", "name", "b", "n", "total", "top")

    def named(self, rows: DataFrame) -> DataFrame:
        """``rows`` (a few findings) with their consumer's queue, start, client and recorder named."""
        lanes = F.broadcast(self.lanes.select("lane_key", *LANE, "start"))
        out = rows.join(lanes, "lane_key", "left")
        out = out.withColumn("source", self.frames.name_of("source", F.col("src")))
        if "client" in rows.columns:
            out = out.withColumn("client_id", self.frames.name_of("client_id", F.col("client")))
        return out

    def source(self, key: Column) -> Column:
        return self.frames.name_of("source", key)

    def with_msg_id(self, rows: DataFrame, src: str, seq: str, out: str) -> DataFrame:
        """``rows`` (a few named candidates) with ``out``: the msg_id of the SEND that recorder key ``src``
        wrote as ``seq`` in the row's run (null when ``src`` is)."""
        # The same broadcast for every caller: Spark then builds it once for the whole job.
        match = (F.col(RUN) == F.col("k_run")) & (F.col(src) == F.col("k_src")) & (F.col(seq) == F.col("k_seq"))
        return rows.join(F.broadcast(self._msg_ids), match, "left").drop("k_run", "k_src", "k_seq").withColumnRenamed(
            "k_msg_id", out)


def _message_ids(frames: TraceFrames, candidates: DataFrame) -> DataFrame:
    """(k_run, k_src, k_seq, k_msg_id) of the SENDs the candidates refer to: a message (its own src and seq),
    the message that woke a pull (wake_), the message blocking a commit (blocking_). The scans carry
    these (recorder key, seq) pairs instead of the message ids, strings that would widen every sorted
    row; the few candidates get them back here by one broadcast join with the SEND rows (one recorder
    per run, so each (run, source, seq) names one SEND; docs/audit.md on hash keys)."""
    kind = F.col("kind")
    keys = candidates.select(
        F.explode(F.array(
            F.when(kind == MSG, F.struct(F.col("src").alias("k_src"), F.col("seq").alias("k_seq"))),
            F.when(kind == RESP, F.struct(F.col("wake_src").alias("k_src"), F.col("wake_seq").alias("k_seq"))),
            F.when(kind == COMMIT, F.struct(F.col("blocking_src").alias("k_src"),
                                            F.col("blocking_seq").alias("k_seq"))),
        )).alias("k")).select("k.*").filter(F.col("k_src").isNotNull()).distinct()
    sends = frames.sends().select(F.col(RUN).alias("k_run"), key_of(RUN, "source").alias("k_src"),
                                  F.col("seq").alias("k_seq"), F.col("msg_id").alias("k_msg_id"))
    return sends.join(F.broadcast(keys), ["k_src", "k_seq"])


def _pairs(base: DataFrame) -> DataFrame:
    """PULL_RESP rows paired with the latest PULL_REQ (broker view) before them from the same recorder,
    client and offset (a client has one pull of a queue in flight); only answers to requests that asked
    to suspend go on, the rest matter to no derivation of the pass."""
    kind = F.col("kind")
    rows = base.filter(((kind == REQ) & F.col("in_broker_view")) | (kind == RESP))
    pair = Window.partitionBy("lane_key", "src", "client", "offset").orderBy("ts", "seq").rowsBetween(
        Window.unboundedPreceding, -1
    )
    rows = _spread(rows, req=F.last(row_when(kind == REQ, "ts", "seq", "suspend_ms", "max_nums"), True)
                   .over(pair))
    paired = (kind == RESP) & F.col("req_ts").isNotNull() & (F.col("req_suspend_ms") > 0)
    return rows.filter(paired).drop("max_nums", "suspend_ms", "in_broker_view", "in_client_view")


def _drops(base: DataFrame) -> DataFrame:
    """The client's view of requests and commits, each with the latest ASSIGN/REVOKE of the queue by the
    same client before it (ties: ASSIGN, then requests, then REVOKE); only those after a REVOKE go on."""
    kind = F.col("kind")
    change = kind.isin(ASSIGN, REVOKE)
    rows = base.filter(change | (kind.isin(REQ, COMMIT) & F.col("in_client_view")))
    rank = F.when(kind == ASSIGN, 0).when(kind == REVOKE, 2).otherwise(1)
    before = Window.partitionBy("lane_key", "client").orderBy("ts", rank, "seq").rowsBetween(
        Window.unboundedPreceding, -1
    )
    owned = F.last(row_when(change, "kind", "ts", "seq", "src", "epoch"), True).over(before)
    rows = _spread(rows, owned=F.when(~change, owned))
    return rows.filter(~change & (F.col("owned_kind") == REVOKE)).drop("epoch")


def _downwards(base: DataFrame, paired: DataFrame) -> DataFrame:
    """Messages, retention and paired answers scanned by queue offset downwards: the retention that expired
    each message (the earliest that rose above it) and the first message at or above each pull."""
    kind = F.col("kind")
    rows = base.filter(kind.isin(MSG, RET)).unionByName(paired, allowMissingColumns=True)
    down = Window.partitionBy("lane_key").orderBy(F.col("pos").desc(), kind.asc()).rowsBetween(
        Window.unboundedPreceding, Window.currentRow
    )
    is_msg, is_ret, is_resp = kind == MSG, kind == RET, kind == RESP
    expire = F.min_by(row_when(is_ret, "ts", "min_offset", "src", "seq"), F.when(is_ret, F.col("ts")))
    wake = F.min_by(row_when(is_msg, "offset", "ts", "src", "seq"), F.when(is_msg, F.col("offset")))
    # Both in one window operator: two in a row (one column each) would each pass over the sorted rows again.
    rows = _spread(rows, expire=F.when(is_msg, expire.over(down)), wake=F.when(is_resp, wake.over(down)))
    # Retention rows and messages no consumer expects have done their part.
    return rows.filter(is_resp | (is_msg & F.col("expected")))


def _upwards(base: DataFrame, down: DataFrame) -> DataFrame:
    """Expected messages and the client's view of commits scanned upwards: the latest-settled expected
    message (consumed OK, handed over, or expired) strictly below each commit (commits sort first at
    their own offset). Answers pass through untouched (one chain of scans reads each row once)."""
    kind = F.col("kind")
    commits = base.filter((kind == COMMIT) & F.col("in_client_view")).drop("max_nums", "suspend_ms", "in_broker_view")
    rows = down.unionByName(commits, allowMissingColumns=True)
    up = Window.partitionBy("lane_key").orderBy(F.col("pos").asc(), kind.asc()).rowsBetween(
        Window.unboundedPreceding, Window.currentRow
    )
    settle = F.least(F.coalesce("settled_ts", F.lit(NEVER)), F.coalesce("expire_ts", F.lit(NEVER)))
    rows = rows.withColumn("settle_ts", F.when(kind == MSG, settle))
    blocking = F.max_by(F.struct("settle_ts", "offset", "ts", "src", "seq"), F.col("settle_ts"))
    return _spread(rows, blocking=F.when(kind == COMMIT, blocking.over(up)))


def row_when(when: Column, *names: str) -> Column:
    """The struct of ``names`` on the rows where ``when`` holds (null elsewhere), for a window function to pick.
    Every field is nullable, as the CASE makes it: Spark keeps a non-null column's field non-nullable inside the
    struct, and the native window aggregates of the comet engine (DataFusion's) return every field nullable and
    refuse to hand a struct back under the narrower type ("Cannot cast nullable struct field")."""
    return F.when(when, F.struct(*[F.when(when, F.col(name)).alias(name) for name in names]))


def _spread(rows: DataFrame, **picked: Column) -> DataFrame:
    """``rows`` with ``<prefix>_<field>`` for each field of each ``prefix=row``: a struct that one window function
    picks (the fields of one row, in one aggregation instead of one per field: window scans cost per function as
    well as per row). Window functions given together, over one window, run in one window operator."""
    tmp = {f"_{prefix}": row for prefix, row in picked.items()}
    rows = rows.withColumns(tmp)
    fields = {f"{prefix}_{n}": F.col(f"_{prefix}.{n}")
              for prefix in picked for n in rows.schema[f"_{prefix}"].dataType.fieldNames()}
    return rows.withColumns(fields).drop(*tmp)


def consumed_table(frames: TraceFrames) -> tuple[DataFrame, DataFrame]:
    """(outcome rows, per-consumer consumption), both reused by the duplicate derivation."""
    rows = consumption.outcomes(frames)
    # Read twice: by the duplicates (the keys of messages consumed more than once, a broadcast computed in
    # a job of its own) and by the queue pass. Kept once instead of scanning, shuffling and aggregating
    # every outcome again (measured: one such pass took 5 s of the 10M audit).
    consumed = consumption.consumed(rows, frames.params.retry_settles_commit, frames.wide_partitions)
    return rows, cut(consumed)
