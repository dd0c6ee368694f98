"""What kind of trace a path holds, decided without Spark (so the CLI refuses a missing or foreign input
at once, exit 2, without starting a JVM)."""

from __future__ import annotations

import gzip
import itertools
import json
from collections.abc import Collection
from pathlib import Path

import pyarrow.parquet as pq

from reference.rules.trace_schema import BASE_COLUMNS, SCHEMA_VERSION

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
#: Non-empty lines of a JSON Lines file read to decide whether it is a trace at all: a trace has a row of the
#: schema's base columns among its first lines (a recorder writes nothing else), someone else's file none.
SNIFF_LINES = 100


class UnreadableTrace(Exception):
    """The input is not a trace at all; the message is one line."""


class AuditFailed(Exception):
    """The input was read but the Spark job could not finish (out of disk, a lost executor, ...); the
    message is one line (the CLI exits 2, as when nothing could be audited)."""


def one_line(exc: Exception) -> str:
    """The first line of an exception, the JVM's own when it comes from Spark (py4j's text starts with
    the Python call that failed, which says nothing to a user)."""
    java = getattr(exc, "java_exception", None)
    text = (java.toString() if java is not None else str(exc)).strip().splitlines()
    first = next((line for line in text if line.strip()), type(exc).__name__)
    return first.strip()[:300]


def _files(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def detect(path: Path) -> tuple[str, list[str]]:
    """``("parquet" | "jsonl", paths to read)``, or UnreadableTrace."""
    if not path.exists():
        raise UnreadableTrace(f"{path}: no such file or directory")
    if path.is_file():
        if path.name.endswith(JSONL_SUFFIXES):
            return "jsonl", [str(path)]
        with path.open("rb") as fh:
            magic = fh.read(4)
        if magic == b"PAR1":
            return "parquet", [str(path)]
        raise UnreadableTrace(f"{path}: not a Parquet file and not JSON Lines (.jsonl / .jsonl.gz)")
    if _files(path, (".parquet",)):
        return "parquet", [str(path)]
    jsonl = _files(path, JSONL_SUFFIXES)
    if jsonl:
        return "jsonl", [str(p) for p in jsonl]
    raise UnreadableTrace(f"{path}: directory holds no Parquet (.parquet) or JSON Lines (.jsonl, .jsonl.gz) files")


def check_trace(path: Path) -> tuple[str, list[str]]:
    """:func:`detect`, then refuse an input that cannot be a trace of schema v1 (UnreadableTrace), before a JVM
    starts: a JSON Lines file none of whose first :data:`SNIFF_LINES` lines is an object with the base columns,
    or a Parquet file without them. Spark would read such a file as rows that are all bad and the audit would
    exit 1, "MUST violations", for what is a wrong path or glob; a trace with some bad rows among good ones is
    still audited (its bad rows are findings)."""
    fmt, paths = detect(path)
    for name in paths:
        reason = _parquet_problem(Path(name)) if fmt == "parquet" else _jsonl_problem(Path(name))
        if reason is not None:
            raise UnreadableTrace(f"{reason[0]} is not a trace (schema v{SCHEMA_VERSION}): {reason[1]}")
    return fmt, paths


def _lacks(present: Collection[str]) -> str:
    return "lacks columns " + ", ".join(c for c in BASE_COLUMNS if c not in present)


def _jsonl_problem(path: Path) -> tuple[Path, str] | None:
    """(the file, why its first line is not a trace row) when none of its first lines is one; None otherwise."""
    files = _files(path, JSONL_SUFFIXES) if path.is_dir() else [path]
    for file in files:
        first: str | None = None
        opener = gzip.open if file.name.endswith(".gz") else open
        try:
            with opener(file, "rt", encoding="utf-8", errors="replace") as fh:
                lines = itertools.islice(((n, t) for n, t in enumerate(fh, 1) if t.strip()), SNIFF_LINES)
                for number, text in lines:
                    try:
                        row = json.loads(text)
                    except ValueError:
                        row = None
                    present = {k for k, v in row.items() if v is not None} if isinstance(row, dict) else None
                    if present is not None and all(c in present for c in BASE_COLUMNS):
                        break
                    if first is None:
                        first = f"line {number} " + (_lacks(present) if present is not None else "is not a JSON object")
                else:
                    if first is not None:
                        return file, first
        except (OSError, EOFError) as exc:  # a truncated or foreign .gz
            return file, f"cannot be read ({exc})"
    return None


def _parquet_problem(path: Path) -> tuple[Path, str] | None:
    """(the file, the base columns it lacks) for the first Parquet file without them; a ``run=`` directory of a
    partitioned trace supplies ``run``."""
    files = _files(path, (".parquet",)) if path.is_dir() else [path]
    for file in files:
        try:
            columns = set(pq.read_schema(file).names)
        except Exception as exc:  # pyarrow's errors for a file that is not Parquet after all
            return file, f"cannot be read ({one_line(exc)})"
        columns |= {part.partition("=")[0] for part in file.relative_to(path).parts[:-1] if "=" in part}
        if not all(c in columns for c in BASE_COLUMNS):
            return file, "its schema " + _lacks(columns)
    return None
