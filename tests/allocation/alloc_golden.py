"""Reading and replaying the golden vectors (``fixtures/allocation/golden``)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.strategy.model import Request, canonical_params
from reference.allocation import AllocationError, MessageQueue, strategy_from_params

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "allocation" / "golden"


def golden_lines(name: str) -> Iterator[dict[str, Any]]:
    with gzip.open(GOLDEN_DIR / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def expected(line: dict[str, Any]) -> dict[str, Any]:
    """What a line says should happen: ``{"result": [...] | None}`` or ``{"error": text}``."""
    return {"error": line["error"]} if "error" in line else {"result": line["result"]}


def replay(line: dict[str, Any]) -> dict[str, Any]:
    """Run the line's call on the reference; errors compare as ``"<java class>: <message>"``."""
    mq_all = None if line["mqAll"] is None else [MessageQueue.from_json(q) for q in line["mqAll"]]
    try:
        strategy = strategy_from_params(line["strategy"], line["params"])
        result = strategy.allocate(line["consumerGroup"], line["currentCID"], mq_all, line["cidAll"])
    except AllocationError as exc:
        return {"error": str(exc)}
    return {"result": None if result is None else [mq.to_json() for mq in result]}


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
