"""Reading and replaying the golden vectors (``fixtures/allocation/golden``)."""

from __future__ import annotations

from typing import Any

from conformance.strategy.golden import GOLDEN_DIR, as_request, expected, golden_lines
from reference.allocation import AllocationError, MessageQueue, strategy_from_params

__all__ = ["GOLDEN_DIR", "as_request", "expected", "golden_lines", "replay"]


def replay(line: dict[str, Any]) -> dict[str, Any]:
    """Run the line's call on the reference; errors compare as ``"<java class>: <message>"``."""
    mq_all = None if line["mqAll"] is None else [MessageQueue.from_json(q) for q in line["mqAll"]]
    try:
        strategy = strategy_from_params(line["strategy"], line["params"])
        result = strategy.allocate(line["consumerGroup"], line["currentCID"], mq_all, line["cidAll"])
    except AllocationError as exc:
        return {"error": str(exc)}
    return {"result": None if result is None else [mq.to_json() for mq in result]}
