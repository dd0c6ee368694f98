"""The golden allocation vectors (``fixtures/allocation/golden``): one ``allocate`` call of Apache RocketMQ's own
strategy classes per line, with what it returned or the exception it raised (the files' README says how they
were made). The reference's tests replay them in-process; ``mqtck gate java-strategies-…`` replays them through
the exec protocol against the Java client's classes."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.strategy.model import Request, canonical_params
from reference.allocation import MessageQueue

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "allocation" / "golden"


def golden_lines(name: str) -> Iterator[dict[str, Any]]:
    """The lines of ``<name>.jsonl.gz`` (``averagely``, ``by_circle``, ... ``pop_share``); FileNotFoundError
    outside a checkout of the project, where the fixtures are not installed."""
    with gzip.open(GOLDEN_DIR / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def expected(line: dict[str, Any]) -> dict[str, Any]:
    """What a line says should happen: ``{"result": [...] | None}`` or ``{"error": text}``."""
    return {"error": line["error"]} if "error" in line else {"result": line["result"]}


def protocol_answer(line: dict[str, Any]) -> dict[str, Any]:
    """What a line says should come back over the exec protocol: as :func:`expected`, except that a null share
    (an unconfigured ByConfig) travels as an empty one."""
    want = expected(line)
    return {"result": want["result"] or []} if "result" in want else want


def as_request(line: dict[str, Any]) -> Request | None:
    """The line as an exec-protocol request, or ``None`` for the null edge cases the protocol lacks."""
    if line["currentCID"] is None or line["mqAll"] is None or line["cidAll"] is None:
        return None
    return Request(
        line["consumerGroup"],
        line["currentCID"],
        tuple(MessageQueue.from_json(q) for q in line["mqAll"]),
        tuple(line["cidAll"]),
        canonical_params(line["params"]),
    )
