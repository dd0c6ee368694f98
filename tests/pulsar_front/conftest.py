"""A ``mqtck broker --pulsar`` on a free loopback port, recording its trace, for the real ``pulsar-client``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.targets.launch import LaunchedBroker, launch_broker


@dataclass
class PulsarBroker:
    launched: LaunchedBroker
    trace: Path

    @property
    def url(self) -> str:
        return self.launched.url

    def rows(self) -> list[dict[str, Any]]:
        """The trace rows written so far (the sink writes each row as it comes)."""
        return [json.loads(line) for line in self.trace.read_text().splitlines() if line.strip()]


@pytest.fixture
def pulsar_broker(tmp_path: Path) -> Iterator[PulsarBroker]:
    trace = tmp_path / "trace.jsonl"
    launched = launch_broker("pulsar", tmp_path / "data", "--trace", str(trace))
    try:
        yield PulsarBroker(launched, trace)
    finally:
        err = launched.stop()
        assert "Traceback" not in err, err
