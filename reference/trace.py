"""Recording traces: sinks (memory, JSON Lines, Parquet, a bounded ring) and the recorders components hold.

The rows follow trace schema v1, whose tables live in :mod:`reference.rules.trace_schema` (the auditor
reads only those, never this module).

Recording is cheap when off: components hold a :class:`SourceRecorder` and call ``record``; with the
:class:`NullSink` that is one attribute check.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from reference.clock import Clock
from reference.rules.trace_schema import ARROW_SCHEMA, COLUMN_NAMES, COLUMNS, SCHEMA_VERSION


class TraceSink(Protocol):
    def write(self, row: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


class NullSink:
    """Discards everything; recording costs one attribute check."""

    enabled = False

    def write(self, row: dict[str, Any]) -> None:  # pragma: no cover - never called when disabled
        pass

    def close(self) -> None:
        pass


class MemorySink:
    """Keeps rows in a list, for tests and the simulator."""

    enabled = True

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def close(self) -> None:
        pass

    def of(self, event: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["event"] == event]


class JsonlSink:
    """One JSON object per line; ``.gz`` paths are gzip-compressed. Null columns are omitted."""

    enabled = True

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = (
            gzip.open(self.path, "wt", encoding="utf-8")  # noqa: SIM115 - closed in close()
            if self.path.suffix == ".gz"
            else open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        )

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps({k: v for k, v in row.items() if v is not None}, separators=(",", ":")))
        self._fh.write("\n")

    def close(self) -> None:
        self._fh.close()


class ParquetSink:
    """Buffers rows and writes Parquet files (``part-NNNNN.parquet``) of ``rows_per_file`` rows."""

    enabled = True

    def __init__(self, directory: str | os.PathLike[str], rows_per_file: int = 100_000) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.rows_per_file = rows_per_file
        self._buffer: list[dict[str, Any]] = []
        self._part = 0

    def write(self, row: dict[str, Any]) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= self.rows_per_file:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        table = rows_to_table(self._buffer)
        pq.write_table(table, self.directory / f"part-{self._part:05d}.parquet")
        self._part += 1
        self._buffer = []

    def close(self) -> None:
        self._flush()


#: Rows a :class:`RingSink` keeps by default: about 30 MB of row dicts, far more than a conformance test reads
#: between its operations and the rows it checks.
RING_ROWS = 50_000


class RingSink:
    """Keeps the newest ``capacity`` rows in memory, numbered from 0 in the order written, and passes every
    row on to ``inner`` (a file, or nothing). A broker's runner reads it to serve its trace on the control
    channel (``GET /trace?from=N``) while the recording goes on; the bound keeps a long-lived runner's memory
    flat (a reader that falls more than ``capacity`` rows behind is told how many it missed)."""

    enabled = True

    def __init__(self, inner: TraceSink | None = None, capacity: int = RING_ROWS) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity: must be > 0, got {capacity!r}")
        self.inner = inner if inner is not None and getattr(inner, "enabled", True) else None
        self._rows: deque[dict[str, Any]] = deque(maxlen=capacity)
        #: The number of the next row written (rows ``[next - len(rows), next)`` are held).
        self.next = 0

    def write(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        self.next += 1
        if self.inner is not None:
            self.inner.write(row)

    def since(self, start: int) -> tuple[list[dict[str, Any]], int, int]:
        """(the rows numbered ``start`` on that are still held, the number of the first of them, ``next``)."""
        first = self.next - len(self._rows)
        begin = max(start, first)
        rows = list(itertools.islice(self._rows, begin - first, None))
        return rows, min(begin, self.next), self.next

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def rows_to_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    rows = list(rows)
    arrays = [pa.array([r.get(name) for r in rows], type=typ) for name, typ, _ in COLUMNS]
    return pa.Table.from_arrays(arrays, schema=ARROW_SCHEMA)


def sink_for(path: str | os.PathLike[str]) -> TraceSink:
    """Pick a sink by path: ``*.jsonl`` / ``*.jsonl.gz`` → JSON Lines, anything else → Parquet dir."""
    p = str(path)
    if p.endswith(".jsonl") or p.endswith(".jsonl.gz"):
        return JsonlSink(p)
    return ParquetSink(p)


class Trace:
    """One run's recording: hands out a :class:`SourceRecorder` per source, all into one sink."""

    def __init__(self, sink: TraceSink | None = None, run: str = "run-0", clock: Clock | None = None) -> None:
        self.sink = sink if sink is not None else NullSink()
        self.run = run
        self.clock = clock
        self._sources: dict[str, SourceRecorder] = {}

    @property
    def enabled(self) -> bool:
        return bool(getattr(self.sink, "enabled", True))

    def source(self, name: str, clock: Clock | None = None) -> SourceRecorder:
        rec = self._sources.get(name)
        if rec is None:
            rec = SourceRecorder(self, name, clock or self.clock)
            self._sources[name] = rec
        return rec

    def end(self) -> None:
        """Record END for every source (the horizon) and close the sink."""
        for rec in self._sources.values():
            rec.record("END")
        self.sink.close()


class SourceRecorder:
    """Records rows for one ``source`` with its own strictly increasing ``seq``."""

    __slots__ = ("_trace", "name", "clock", "_seq", "enabled")

    def __init__(self, trace: Trace, name: str, clock: Clock | None) -> None:
        self._trace = trace
        self.name = name
        self.clock = clock
        self._seq = 0
        self.enabled = trace.enabled

    def record(self, event: str, ts_ms: int | None = None, **columns: Any) -> None:
        if not self.enabled:
            return
        if ts_ms is None:
            if self.clock is None:
                raise RuntimeError(f"source {self.name!r} has no clock and no ts was given")
            ts_ms = self.clock.now_ms()
        self._seq += 1
        row: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run": self._trace.run,
            "ts": ts_ms * 1000,
            "source": self.name,
            "seq": self._seq,
            "event": event,
        }
        detail = columns.pop("detail", None)
        for key, value in columns.items():
            if key not in _COLUMN_SET:
                raise KeyError(f"unknown trace column {key!r}")
            row[key] = value
        if detail is not None:
            row["detail"] = detail if isinstance(detail, str) else json.dumps(detail, sort_keys=True)
        self._trace.sink.write(row)


_COLUMN_SET = frozenset(COLUMN_NAMES)

#: A recorder that records nothing, for components built without a trace.
NULL_TRACE = Trace(NullSink())
