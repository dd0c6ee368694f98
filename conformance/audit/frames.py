"""The audited trace as the derivations see it: good rows per event kind, one *view* per event, and the
small per-run facts every derivation shares (horizon, subscriptions, message models).

Views
-----
One operation may be recorded twice: a client records the PULL_REQ it sends and the broker records
the one it receives; a producer and the broker both record a SEND. Counting both would double every
finding, and they disagree on time. So each derivation reads an event through a *view* that keeps one
recorder per (run, client): ``client`` prefers the client's own rows (``source == 'client:' +
client_id``) when that client recorded any, ``broker`` prefers rows recorded by a broker. Drop checks
use the client's view (only the client knows when it sent a request relative to its REVOKE); pull
timing and offset correction use the broker's (it holds the request and computes the answer).

Catalog
-------
Which client recorded what, the horizon of each run and the subscriptions are tiny next to the trace
(one row per client, run or subscription), so they are computed by two small aggregations, brought to
the driver once, and used as literals and local tables. This keeps the many joins against them free of
extra Spark jobs, which matters for the small traces of tests as much as for large ones.

Group copies
------------
SEND and RETENTION name no group. The derivations that need them per group (the messages a consumer must
see; a subscription's backlog) join them with their small table of consumers (the queue pass's lanes, the
permit subscriptions) by broadcast: one copy per consumer of the queue or topic, and no shuffle.

Everything is keyed by ``run``: one dataset may hold many runs, and each is audited on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from conformance.audit import seqcert
from conformance.audit.batch import collect_together
from conformance.audit.categories import CLIENT_RECORDED
from conformance.audit.inputs import UnreadableTrace
from conformance.audit.params import AuditParams
from conformance.audit.schema import NEVER, own_client_source, source_kind
from conformance.audit.sequences import checked_keys, duplicate_keys, repeated, row_key
from conformance.audit.validate import valid
from reference.rules.errors import InvalidRequest
from reference.rules.filter import SubscriptionData

RUN = "run"
#: Events recorded with a client_id by clients or brokers, whose views choose a recorder per client.
CLIENT_EVENTS = ("PULL_REQ", "PULL_RESP", "COMMIT", "ASSIGN", "REVOKE", "CONSUME")
#: Events whose groups the derivations ask about (pulling groups; groups that record CONSUME).
GROUP_EVENTS = ("PULL_REQ", "CONSUME")
_SEP = "\u0000"
CLIENT_SOURCE_PREFIX = "client:"


@dataclass
class RunFacts:
    rows: int
    first_ts: int | None
    last_ts: int | None
    end_ts: int | None
    #: The events the run has rows of, and CLIENT_RECORDED if a client recorded some: what its checks can
    #: judge (``Category.needs``).
    events: set[str] = field(default_factory=set)

    @property
    def horizon(self) -> int | None:
        return self.end_ts if self.end_ts is not None else self.last_ts


@dataclass
class Catalog:
    runs: dict[str, RunFacts] = field(default_factory=dict)
    #: (event, prefer) -> keys "run\0client_id" of clients that have rows of the preferred recorder.
    preferred: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: runs whose SENDs were (also) recorded by a broker.
    broker_sends: list[str] = field(default_factory=list)
    #: event -> keys "run\0group" of the groups with rows of that event (GROUP_EVENTS).
    groups_with: dict[str, list[str]] = field(default_factory=dict)
    #: (run, group, topic, expression, model) rows of valid SUBSCRIBE events.
    subscriptions: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    #: (run, source) and (run, client_id) pairs seen: the dimensions that narrow rows refer to by key.
    sources: set[tuple[str, str]] = field(default_factory=set)
    clients: set[tuple[str, str]] = field(default_factory=set)
    #: Row keys (:func:`conformance.audit.sequences.row_key`) of rows whose seq repeats: bad rows.
    duplicate_seq: list[int] = field(default_factory=list)
    #: "source" / "client_id" -> {64-bit key (:func:`key_of` of run and name): name}, for findings.
    names: dict[str, dict[int, str]] = field(default_factory=lambda: {"source": {}, "client_id": {}})
    #: Rows read, bad ones included (0: the trace is empty).
    total_rows: int = 0


def _add(keys: list[str], key: str) -> None:
    if key not in keys:
        keys.append(key)


def build_catalog(rows: DataFrame) -> Catalog:
    """Everything the driver needs to know before the derivations, in one Spark job (each small action
    costs a scheduling round trip and a plan of its own, the larger part of an audit's fixed cost on a
    small trace): the per-recorder statistics, with the certificates that their seqs do not repeat
    (:mod:`conformance.audit.seqcert`), and the subscriptions. Only recorders without a certificate cost a
    second job, the exact check of :mod:`conformance.audit.sequences`."""
    # Whether the group's recorder is the client it names, or a broker, depends on the group's keys only, so it
    # is computed once per group (of rows with a time) and not for each of the trace's rows: those string
    # operations were a fifth of this job at 10M events.
    timed = F.col("n") > 0
    own = F.when(timed, own_client_source().cast("int"))
    broker = F.when(timed, (source_kind() == "broker").cast("int"))
    # Rows with a null run, event or source are bad rows; they still count towards "the trace has rows".
    stats = rows.groupBy(RUN, "event", "client_id", "group", "source").agg(
        F.count("*").alias("all"), F.count("ts").alias("n"), F.min("ts").alias("first"),
        F.max("ts").alias("last"), *seqcert.aggregates(),
    ).select("*", own.alias("own"), broker.alias("broker"), key_of(RUN, "source").alias("source_key"),
             key_of(RUN, "client_id").alias("client_key"))
    # Subscriptions with their row keys: those of repeated rows are dropped on the driver.
    subs = rows.filter(valid("SUBSCRIBE")).select(RUN, "group", "topic", "expression", "model",
                                                  row_key().alias("key")).distinct()
    collected = collect_together({"stats": stats, "sub": subs})
    cat = Catalog()
    recorders: dict[tuple[str, str], seqcert.SeqSummary] = {}
    for r in collected["stats"]:
        if r[RUN] is not None and r["source"] is not None:
            recorders.setdefault((r[RUN], r["source"]), seqcert.SeqSummary()).add(
                r["seq_n"], r["seq_min"], r["seq_max"], seqcert.hash_sum(*(r[c] for c in seqcert.HALF_SUMS)))
    uncertified = sorted(k for k, summary in recorders.items() if not summary.certified())
    if uncertified:  # the exact check, on those recorders' rows only
        suspects = rows.filter(F.concat_ws(_SEP, RUN, "source").isin(*[f"{r}{_SEP}{s}" for r, s in uncertified]))
        cat.duplicate_seq = checked_keys([r["key"] for r in duplicate_keys(suspects).collect()])
    dup = set(cat.duplicate_seq)
    cat.subscriptions = sorted({(r[RUN], r["group"], r["topic"], r["expression"], r["model"])
                                for r in collected["sub"] if r["key"] not in dup})
    owners: dict[str, dict[int, tuple[str, str]]] = {"source": {}, "client_id": {}}
    for r in collected["stats"]:
        cat.total_rows += r["all"]
        run, event, client, group = r[RUN], r["event"], r["client_id"], r["group"]
        if run is None or event is None or r["source"] is None or not r["n"]:
            continue
        cat.sources.add((run, r["source"]))
        _name(owners["source"], cat.names["source"], r["source_key"], run, r["source"])
        if client is not None:
            cat.clients.add((run, client))
            _name(owners["client_id"], cat.names["client_id"], r["client_key"], run, client)
        facts = cat.runs.setdefault(run, RunFacts(0, None, None, None))
        facts.rows += r["n"]
        facts.events.add(event)
        if r["source"].startswith(CLIENT_SOURCE_PREFIX):
            facts.events.add(CLIENT_RECORDED)
        facts.first_ts = r["first"] if facts.first_ts is None else min(facts.first_ts, r["first"])
        facts.last_ts = r["last"] if facts.last_ts is None else max(facts.last_ts, r["last"])
        if event == "END":
            facts.end_ts = r["last"] if facts.end_ts is None else max(facts.end_ts, r["last"])
        if event in CLIENT_EVENTS and client is not None:
            key = f"{run}{_SEP}{client}"
            if r["own"]:
                _add(cat.preferred.setdefault((event, "client"), []), key)
            if r["broker"]:
                _add(cat.preferred.setdefault((event, "broker"), []), key)
        if event in GROUP_EVENTS and group is not None:
            _add(cat.groups_with.setdefault(event, []), f"{run}{_SEP}{group}")
        if event == "SEND" and r["broker"] and run not in cat.broker_sends:
            cat.broker_sends.append(run)
    return cat


def _name(owners: dict[int, tuple[str, str]], names: dict[int, str], key: int, run: str, name: str) -> None:
    """Record ``key`` -> ``name``. Two (run, name) pairs with one key (a 64-bit collision, about 10^-12 for a
    trace's few thousand names) would merge two recorders or clients in the scans: refused (exit 2) rather
    than audited inexactly."""
    owner = owners.setdefault(key, (run, name))
    if owner != (run, name):
        raise UnreadableTrace(f"64-bit key collision between {owner} and {(run, name)}: this trace cannot be "
                              "audited exactly")
    names[key] = name


def key_of(*columns: str | Column) -> Column:
    """A 64-bit hash standing for a tuple of columns in narrow rows (sorting and partitioning by one
    long is several times cheaper than by the strings; a collision among the few thousand keys of a
    trace has a probability of about 1e-12)."""
    return F.xxhash64(*[F.col(c) if isinstance(c, str) else c for c in columns])


class TraceFrames:
    def __init__(self, spark: SparkSession, rows: DataFrame, params: AuditParams, catalog: Catalog,
                 wide_partitions: int = 8) -> None:
        self.spark = spark
        #: Partitions for the shuffles of trace-sized data (sized from the input by the job); the rest use
        #: Spark's default, set small.
        self.wide_partitions = wide_partitions
        self.rows = rows
        self.params = params
        self.catalog = catalog
        self._events: dict[tuple[str, ...], DataFrame] = {}
        #: The plan is built on two threads (:func:`conformance.audit.derive.derive`); each frame once.
        self._lock = threading.Lock()
        self._broadcasting = sorted({f"{r}{_SEP}{g}" for r, g, _, _, m in catalog.subscriptions if m == "BROADCASTING"})

    def event(self, event: str) -> DataFrame:
        """Good rows of one event kind (valid, and not sharing their seq with another row)."""
        return self.events(event)

    def events(self, *events: str) -> DataFrame:
        """Good rows of any of ``events``, read by one scan of the trace (a scan costs about a second of
        CPU per 10M rows whatever it keeps: a derivation that unions several event kinds reads them with
        one). Built once per set of events, so derivations share the frame."""
        key = tuple(sorted(events))
        with self._lock:
            if key not in self._events:
                good = reduce(lambda a, b: a | b, [valid(e) for e in key])
                self._events[key] = self.rows.filter(good & ~repeated(self.catalog.duplicate_seq))
            return self._events[key]

    def name_of(self, kind: str, key: Column) -> Column:
        """The ``source`` or ``client_id`` whose 64-bit key (:func:`key_of` of run and name) is ``key``:
        narrow rows carry keys, findings get the names back from this small literal map (computed with the
        catalog)."""
        names = self.catalog.names[kind]
        if not names:
            return F.lit(None).cast("string")
        return F.create_map(*[x for k, v in sorted(names.items()) for x in (F.lit(k), F.lit(v))])[key]

    def in_view(self, event: str, prefer: str) -> Column:
        """True for a row of ``event`` in the ``prefer`` (``client`` or ``broker``) view: recorded by the
        preferred recorder, or by another when the preferred one recorded nothing for that client."""
        preferred = own_client_source() if prefer == "client" else source_kind() == "broker"
        having = self.catalog.preferred.get((event, prefer), [])
        key = F.concat_ws(_SEP, F.col(RUN), F.col("client_id"))
        return (preferred | ~key.isin(*having)) if having else F.lit(True)

    def view(self, event: str, prefer: str) -> DataFrame:
        """Good rows of ``event`` with one recorder per (run, client): ``prefer`` is ``client`` or ``broker``."""
        return self.views(prefer, event)

    def views(self, prefer: str, *events: str) -> DataFrame:
        """Good rows of any of ``events`` (one scan), each in its event's ``prefer`` view."""
        if len(events) == 1:
            return self.events(*events).filter(self.in_view(events[0], prefer))
        chosen = F.lit(False)
        for event in events:
            chosen = F.when(F.col("event") == event, self.in_view(event, prefer)).otherwise(chosen)
        return self.events(*events).filter(chosen)

    def accepted_tags(self) -> DataFrame:
        """(run, group, topic, tags): the tags a group's subscription to a topic accepts, null for all
        (``*``). Parsed on the driver by the reference's own filter (SubscriptionData.parse); a group that
        recorded several expressions accepts what all of them accept; a malformed one accepts nothing."""
        merged: dict[tuple[str, str, str], frozenset[str] | None] = {}
        for run, group, topic, expression, _ in self.catalog.subscriptions:
            try:
                sub = SubscriptionData.parse(topic, expression)
                tags = None if sub.subscribes_all else frozenset(sub.tags)
            except InvalidRequest:
                tags = frozenset()
            k = (run, group, topic)
            if k not in merged:
                merged[k] = tags
            elif tags is not None:
                merged[k] = tags if merged[k] is None else merged[k] & tags
        schema = T.StructType([T.StructField(RUN, T.StringType()), T.StructField("group", T.StringType()),
                               T.StructField("topic", T.StringType()),
                               T.StructField("tags", T.ArrayType(T.StringType()))])
        rows = [F.struct(F.lit(r), F.lit(g), F.lit(t), F.array(*map(F.lit, sorted(tags))) if tags is not None
                         else F.lit(None)) for (r, g, t), tags in sorted(merged.items())]
        # A plan the JVM evaluates itself: createDataFrame of a Python list has a Python worker unpickle the rows,
        # about a second of the small audit's critical path the first time (its broadcast waits for it).
        return self.spark.range(1).select(F.inline(F.array(*rows).cast(T.ArrayType(schema))))

    def sends(self) -> DataFrame:
        """SEND rows, one recorder per run: the broker's when it recorded any, else the producers'."""
        runs = self.catalog.broker_sends
        keep = (source_kind() == "broker") | ~F.col(RUN).isin(*runs) if runs else F.lit(True)
        return self.event("SEND").filter(keep)

    def broadcasting(self, group: str = "group") -> Column:
        """True for rows of a broadcasting group (its SUBSCRIBE rows say BROADCASTING)."""
        if not self._broadcasting:
            return F.lit(False)
        return F.concat_ws(_SEP, F.col(RUN), F.col(group)).isin(*self._broadcasting)

    def group_has(self, event: str) -> Column:
        """True for rows of a group that has rows of ``event`` in the run (one of GROUP_EVENTS)."""
        keys = self.catalog.groups_with.get(event, [])
        return F.concat_ws(_SEP, F.col(RUN), F.col("group")).isin(*keys) if keys else F.lit(False)

    def owner(self, client_column: str = "client_id") -> Column:
        """The consumer a row belongs to: the client for a broadcasting group (each client is its own
        consumer), '' for a clustering one (the group consumes as one)."""
        return F.when(self.broadcasting(), F.col(client_column)).otherwise(F.lit(""))

    def with_owner(self, df: DataFrame, client_column: str = "client_id") -> DataFrame:
        return df.withColumn("owner", self.owner(client_column))

    def horizon(self) -> Column:
        """The run's horizon (latest END, else latest event) in microseconds."""
        return self.run_fact(lambda f: f.horizon, NEVER)

    def run_fact(self, fact: Callable[[RunFacts], int | None], default: int) -> Column:
        """A per-run fact (first event time, horizon) of the row's run, ``default`` where it is unknown."""
        known = {r: fact(f) for r, f in self.catalog.runs.items() if fact(f) is not None}
        if not known:
            return F.lit(default)
        pairs = [x for r, v in known.items() for x in (F.lit(r), F.lit(v))]
        return F.coalesce(F.create_map(*pairs)[F.col(RUN)], F.lit(default))

    def with_horizon(self, df: DataFrame) -> DataFrame:
        return df.withColumn("horizon", self.horizon())
