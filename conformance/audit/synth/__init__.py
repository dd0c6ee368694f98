"""``mqtck trace synth``: large, realistic, valid traces (schema v1) with exactly the injected faults.

The workload (:mod:`.layout`) is a small cluster: two brokers, four topics, push consumers in
clustering mode with rebalances and crashes, a broadcasting group, a POP group and a permit
subscription, with retention raising min offsets as it goes. It is generated with numpy in chunks of
rounds (vectorised over queues, rounds and bursts; no Python loop per event) and written as Parquet
partitioned by run (``run=<name>/part-NNNNN.parquet``), each file sorted by event so a reader that
filters on ``event`` skips most row groups. The base workload audits clean; ``--inject KIND=COUNT``
adds faults (:mod:`.faults`), each producing exactly one finding of its category, and
``manifest.json`` records what was injected and what the auditor must therefore report.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from conformance.audit.categories import CATEGORIES
from conformance.audit.synth.faults import parse_inject, plan_faults
from conformance.audit.synth.layout import GROUPS, ROUND_MS, TAGS, Layout
from conformance.audit.synth.permits import PermitGroup
from conformance.audit.synth.pop import PopGroup
from conformance.audit.synth.pulls import PullGroup
from conformance.audit.synth.rows import Rows, Vocab, concat, take, to_table
from conformance.audit.synth.tracks import pull_tracks

__all__ = ["synthesize", "parse_inject"]

#: Rows per chunk: bounds the generator's memory (about 1 KB per row of the chunk being built, sorted and
#: converted) and is also the size of each Parquet file.
CHUNK_ROWS = 500_000
#: Rows per Parquet row group. Each file is sorted by event, so a reader that filters on one event kind
#: skips the row groups whose min/max event excludes it; small groups make that precise (a 10M-row
#: audit read with 16K-row groups: 8 % less CPU than with 128K, docs/audit.md).
ROW_GROUP_ROWS = 16 * 1024
MANIFEST = "manifest.json"
#: The last seconds before the horizon: injected pending messages arrive here.
PENDING_BEFORE_END_MS = 10_000


class Synthesizer:
    def __init__(self, events: int, seed: int, inject: dict[str, int]) -> None:
        self.layout = layout = Layout(events, seed)
        self.vocab = Vocab()
        self.plan, self.tracks = plan_faults(layout, inject, seed, lambda forced: pull_tracks(layout, forced))
        self.pulls = [PullGroup(layout, self.vocab, self.plan, tr) for tr in self.tracks]
        self.pop = PopGroup(layout, self.vocab, self.plan, next(s for s in GROUPS if s.kind == "pop"))
        self.permits = PermitGroup(layout, self.vocab, self.plan, next(s for s in GROUPS if s.kind == "permits"))
        self.lane_prefix = [lane.prefix for lane in layout.lanes]

    def _base(self, rows: Rows, r0: int, r1: int) -> None:
        L, v = self.layout, self.vocab
        lanes = np.arange(len(L.lanes))
        topic = v.codes([lane.topic for lane in L.lanes])
        broker = v.codes([lane.broker for lane in L.lanes])
        source = v.codes([f"broker:{lane.broker}" for lane in L.lanes])
        qid = np.array([lane.queue_id for lane in L.lanes])
        tags = v.codes(list(TAGS))
        lane, r, k, i = (a.ravel() for a in np.meshgrid(lanes, np.arange(r0, r1), np.arange(L.bursts), np.arange(4),
                                                        indexing="ij"))
        keep = i < L.sizes[lane, r, k]
        lane, r, k, i = lane[keep], r[keep], k[keep], i[keep]
        offset = L.burst_end(lane, r, k) - L.sizes[lane, r, k] + i
        rows.add("SEND", L.burst_ms(lane, r, k) * 1000, source[lane], order=-1, topic=topic[lane], broker=broker[lane],
                 queue_id=qid[lane], offset=offset, msg_lane=lane, msg_off=offset,
                 tags=tags[L.tag_codes(lane, offset, i == 0)])
        for rr in range(r0, r1):
            if rr % 4 == 3 and rr >= 2:
                rows.add("RETENTION", np.full(len(lanes), (rr * ROUND_MS + 45_000) * 1000), source, topic=topic,
                         broker=broker, queue_id=qid, min_offset=L.round_start[lanes, rr - 2])
        if r0 == 0:
            for spec in GROUPS:
                for c in range(spec.clients):
                    rows.add("SUBSCRIBE", np.array([0]), "broker:broker-a", group=spec.name, client_id=spec.client(c),
                             topic=spec.topic, expression=spec.expression, model=spec.model)
            self._bad_rows(rows)
        if r1 == L.rounds:
            self._tail(rows, topic, broker, source, qid, tags)

    def _bad_rows(self, rows: Rows) -> None:
        """bad-row faults: rows a schema-v1 reader must reject (unknown event; SEND without msg_id)."""
        for n in range(self.plan.counts.get("bad-row", 0)):
            ts = np.array([(2_000 + n) * 1000])
            if n % 2 == 0:
                rows.add("END", ts, "producer:broken", order=99)  # turned into an unknown event below
                rows.parts[-1]["event"][:] = -2
            else:
                rows.add("SEND", ts, "producer:broken", topic="OrderTopic", broker="broker-a", queue_id=0, offset=0,
                         tags="TagA")

    def _tail(self, rows: Rows, topic, broker, source, qid, tags) -> None:
        L = self.layout
        horizon_us = L.horizon_ms * 1000
        for lane in self.plan.expired_lanes:
            rows.add("RETENTION", np.array([horizon_us - 60_000_000]), int(source[lane]), topic=int(topic[lane]),
                     broker=int(broker[lane]), queue_id=int(qid[lane]), min_offset=int(L.round_start[lane, L.rounds]))
        for lane in self.plan.pending_lanes:
            off = int(L.round_start[lane, L.rounds])
            rows.add("SEND", np.array([horizon_us - PENDING_BEFORE_END_MS * 1000]), int(source[lane]),
                     topic=int(topic[lane]), broker=int(broker[lane]), queue_id=int(qid[lane]), offset=off,
                     msg_lane=lane, msg_off=off, tags=int(tags[2]))

    def chunks(self):
        """Yield Arrow tables, chunk by chunk, in time order."""
        L = self.layout
        per_round = max(1, int(len(L.lanes) * L.bursts * 20))
        step = max(1, CHUNK_ROWS // per_round)
        counters: dict[int, int] = {}
        deferred: dict[str, np.ndarray] = {}
        for r0 in range(0, L.rounds, step):
            r1 = min(L.rounds, r0 + step)
            rows = Rows(self.vocab)
            self._base(rows, r0, r1)
            for gen in (*self.pulls, self.pop, self.permits):
                gen.emit(rows, r0, r1)
            if r1 == L.rounds:
                self._ends(rows)
            block = concat([deferred, rows.block()] if deferred else [rows.block()])
            if r1 < L.rounds:
                later = block["ts"] >= r1 * ROUND_MS * 1000
                deferred = take(block, np.flatnonzero(later))
                block = take(block, np.flatnonzero(~later))
            yield to_table(block, self.vocab, self.lane_prefix, self.run, counters, unknown_event="BOGUS_EVENT")

    def _ends(self, rows: Rows) -> None:
        sources = {f"broker:{lane.broker}" for lane in self.layout.lanes}
        sources |= {f"client:{s.client(c)}" for s in GROUPS for c in range(s.clients)}
        ts = np.array([self.layout.horizon_ms * 1000])
        for source in sorted(sources):
            rows.add("END", ts, source, order=100)

    run = "run-0"


def synthesize(out: str | os.PathLike[str], events: int, seed: int = 0, inject: dict[str, int] | None = None,
               run: str = "run-0") -> dict[str, Any]:
    """Write one run of about ``events`` rows under ``out/run=<run>/`` and (re)write ``out/manifest.json``."""
    if events <= 0:
        raise ValueError("events must be > 0")
    started = time.perf_counter()
    inject = dict(inject or {})
    synth = Synthesizer(events, seed, inject)
    synth.run = run
    out = Path(out)
    run_dir = out / f"run={run}"
    run_dir.mkdir(parents=True, exist_ok=True)
    for old in run_dir.glob("part-*.parquet"):
        old.unlink()
    total = 0
    for n, table in enumerate(synth.chunks()):
        pq.write_table(table, run_dir / f"part-{n:05d}.parquet", row_group_size=ROW_GROUP_ROWS)
        total += table.num_rows
    manifest_path = out / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"runs": {}}
    L = synth.layout
    manifest["generator"] = "mqtck trace synth"
    manifest["trace_schema_version"] = 1
    manifest["runs"][run] = {
        "events": total,
        "events_requested": events,
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 3),
        "injected": {k: v for k, v in sorted(inject.items()) if v},
        "expected": {c.name: inject.get(c.name, 0) for c in CATEGORIES},
        "workload": {
            "rounds": L.rounds, "round_ms": ROUND_MS, "bursts_per_round": L.bursts, "horizon_ms": L.horizon_ms,
            "lanes": len(L.lanes), "queues_per_topic_and_broker": sorted({lane.queue_id for lane in L.lanes})[-1] + 1,
            "groups": [{"name": s.name, "topic": s.topic, "expression": s.expression, "model": s.model,
                        "kind": s.kind, "clients": s.clients} for s in GROUPS],
            "crashes": int(sum((tr.crash >= 0).sum() for tr in synth.tracks)),
        },
    }
    manifest["events"] = sum(r["events"] for r in manifest["runs"].values())
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest

