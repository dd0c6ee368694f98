"""What kind of trace a path holds, decided without Spark (so the CLI refuses a missing or foreign input
at once, exit 2, without starting a JVM)."""

from __future__ import annotations

from pathlib import Path

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")


class UnreadableTrace(Exception):
    """The input is not a trace at all; the message is one line."""


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
