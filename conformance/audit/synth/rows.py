"""Column blocks of trace rows, built with numpy and turned into Arrow tables of trace schema v1.

Generators add rows event family by event family (:meth:`Rows.add`), each column a numpy array or a
scalar; strings are codes into a shared :class:`Vocab` (so a hundred million rows hold ints, not
Python strings), and ``msg_id`` / ``handle`` are built at the end from (lane, offset, delivery) by
Arrow's string kernels. :func:`to_table` assigns ``seq`` per source in (ts, order) order, continuing the
counters of the previous chunk, and sorts the rows by (event, ts) so that each Parquet row group holds
few event kinds and a reader filtering on ``event`` skips the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reference.rules.trace_schema import ARROW_SCHEMA, COLUMNS, EVENT_REQUIRED, SCHEMA_VERSION

NULL = np.iinfo(np.int64).min
EVENTS = tuple(sorted(EVENT_REQUIRED))
EVENT_CODE = {e: i for i, e in enumerate(EVENTS)}
_STRING = {name for name, typ, _ in COLUMNS if typ == pa.string()} - {"run", "msg_id", "handle", "event"}
_INT = {name for name, typ, _ in COLUMNS if typ != pa.string()} - {"schema_version", "seq"}
#: Internal columns: who records (vocab code), intra-ts order, and msg_id / handle parts.
_INTERNAL = {"source": np.int32, "order": np.int64, "msg_lane": np.int32, "msg_off": np.int64, "delivery": np.int32}


class Vocab:
    """Strings <-> int codes (one table for every string column)."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, text: str) -> int:
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self.strings)
            self.strings.append(text)
        return code

    def codes(self, texts: list[str]) -> np.ndarray:
        return np.array([self.code(t) for t in texts], dtype=np.int32)


class Rows:
    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, event: str, ts: np.ndarray, source: np.ndarray | str, order: int | np.ndarray = 0,
            **columns: Any) -> None:
        """Rows of one event kind; ``columns`` are trace columns (string columns as codes or one str)
        plus ``msg_lane`` / ``msg_off`` / ``delivery`` for msg_id and handle."""
        ts = np.asarray(ts, dtype=np.int64)
        n = len(ts)
        if n == 0:
            return
        part: dict[str, np.ndarray] = {"ts": ts, "event": np.full(n, EVENT_CODE[event], dtype=np.int8)}
        columns = {"source": source, "order": order, **columns}
        for name, value in columns.items():
            if isinstance(value, str):
                value = self.vocab.code(value)
            if name in _STRING:
                dtype = np.int32
            elif name in _INTERNAL:
                dtype = _INTERNAL[name]
            elif name in _INT:
                dtype = np.int64
            else:
                raise KeyError(f"unknown column {name!r}")
            arr = np.asarray(value, dtype=dtype)
            part[name] = np.broadcast_to(arr, (n,)).copy() if arr.shape != (n,) else arr
        self.parts.append(part)

    def block(self) -> dict[str, np.ndarray]:
        """All rows added so far as one column block (absent columns null)."""
        names = {"ts", "event"} | _STRING | _INT | set(_INTERNAL)
        total = sum(len(p["ts"]) for p in self.parts)
        out: dict[str, np.ndarray] = {}
        for name in names:
            if name == "event":
                dtype, null = np.int8, -1
            elif name in _STRING:
                dtype, null = np.int32, -1
            elif name in _INTERNAL:
                dtype = _INTERNAL[name]
                null = 0 if name == "order" else (-1 if dtype == np.int32 else NULL)
            else:
                dtype, null = np.int64, NULL
            arr = np.full(total, null, dtype=dtype)
            pos = 0
            for p in self.parts:
                n = len(p["ts"])
                if name in p:
                    arr[pos:pos + n] = p[name]
                pos += n
            out[name] = arr
        return out


def concat(blocks: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    blocks = [b for b in blocks if len(b["ts"])]
    if not blocks:
        return {}
    return {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]}


def take(block: dict[str, np.ndarray], index: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[index] for k, v in block.items()}


def assign_seq(block: dict[str, np.ndarray], counters: dict[int, int]) -> np.ndarray:
    """seq per source, increasing with (ts, order), continuing ``counters`` (updated in place)."""
    src = block["source"].astype(np.int64)
    idx = np.lexsort((block["order"], block["ts"], src))
    src_sorted = src[idx]
    starts = np.flatnonzero(np.r_[True, src_sorted[1:] != src_sorted[:-1]])
    lengths = np.diff(np.r_[starts, len(src_sorted)])
    rank = np.arange(len(src_sorted)) - np.repeat(starts, lengths)
    base = np.zeros(len(src_sorted), dtype=np.int64)
    for s, start, length in zip(src_sorted[starts], starts, lengths, strict=True):
        base[start:start + length] = counters.get(int(s), 0)
        counters[int(s)] = counters.get(int(s), 0) + int(length)
    seq = np.empty(len(src), dtype=np.int64)
    seq[idx] = base + rank + 1
    return seq


def _strings(codes: np.ndarray, vocab: Vocab) -> pa.Array:
    dictionary = pa.array(vocab.strings, type=pa.string())
    indices = pa.array(codes, type=pa.int32(), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary).cast(pa.string())


def to_table(block: dict[str, np.ndarray], vocab: Vocab, lane_prefix: list[str], run: str,
             counters: dict[int, int], unknown_event: str = "UNKNOWN") -> pa.Table:
    """The block as a trace-schema-v1 table, rows sorted by (event, ts); ``seq`` assigned. Event code
    -2 marks a deliberately malformed row and becomes ``unknown_event``."""
    seq = assign_seq(block, counters)
    order = np.lexsort((seq, block["ts"], block["event"]))
    block = take(block, order)
    seq = seq[order]
    n = len(seq)
    arrays: dict[str, pa.Array] = {
        "schema_version": pa.array(np.full(n, SCHEMA_VERSION, dtype=np.int32)),
        "run": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([run])).cast(pa.string()),
        "seq": pa.array(seq),
        "event": pa.DictionaryArray.from_arrays(
            pa.array(np.where(block["event"] == -2, len(EVENTS), block["event"]).astype(np.int32)),
            pa.array([*EVENTS, unknown_event])).cast(pa.string()),
        "source": _strings(block["source"], vocab),
    }
    lane = block["msg_lane"]
    has_msg = lane >= 0
    prefix = pa.DictionaryArray.from_arrays(pa.array(np.where(has_msg, lane, 0), type=pa.int32(), mask=~has_msg),
                                            pa.array(lane_prefix)).cast(pa.string())
    msg_id = pc.binary_join_element_wise(prefix, pc.cast(pa.array(block["msg_off"]), pa.string()), "")
    arrays["msg_id"] = msg_id
    delivery = block["delivery"]
    has_handle = delivery >= 0
    handle_no = pc.cast(pa.array(np.where(has_handle, delivery, 0), mask=~has_handle), pa.string())
    arrays["handle"] = pc.binary_join_element_wise(msg_id, handle_no, ":")
    for name, typ, _ in COLUMNS:
        if name in arrays:
            continue
        values = block[name]
        if name in _STRING:
            arrays[name] = _strings(values, vocab)
        else:
            arrays[name] = pa.array(values.astype(np.int64 if typ == pa.int64() else np.int32),
                                    type=typ, mask=values == NULL)
    return pa.Table.from_arrays([arrays[name] for name, _, _ in COLUMNS], schema=ARROW_SCHEMA)
