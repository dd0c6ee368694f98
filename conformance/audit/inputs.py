"""What kind of trace a path holds, decided without Spark (so the CLI refuses a missing or foreign input
at once, exit 2, without starting a JVM)."""

from __future__ import annotations

from pathlib import Path

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")


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
