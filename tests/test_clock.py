"""SimClock: deterministic virtual time; no core module reads the wall clock."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reference.clock import SIM_EPOCH_MS, SimClock


def test_timers_fire_in_time_then_schedule_order() -> None:
    clock = SimClock()
    fired: list[tuple[str, int]] = []
    clock.call_later(10, lambda: fired.append(("b", clock.now_ms())))
    clock.call_later(5, lambda: fired.append(("a", clock.now_ms())))
    clock.call_later(10, lambda: fired.append(("c", clock.now_ms())))
    cancelled = clock.call_later(7, lambda: fired.append(("x", clock.now_ms())))
    cancelled.cancel()
    clock.call_later(5, lambda: clock.call_later(0, lambda: fired.append(("d", clock.now_ms()))))
    assert clock.advance(9) == 3
    assert fired == [("a", SIM_EPOCH_MS + 5), ("d", SIM_EPOCH_MS + 5)]
    clock.advance(1)
    assert [f[0] for f in fired] == ["a", "d", "b", "c"]
    assert clock.now_ms() == SIM_EPOCH_MS + 10 and clock.next_due_ms() is None
    with pytest.raises(ValueError):
        clock.run_until(SIM_EPOCH_MS)


def test_run_all_is_bounded() -> None:
    clock = SimClock()

    def again() -> None:
        clock.call_later(1, again)

    again()
    with pytest.raises(RuntimeError):
        clock.run_all(limit=50)


def test_core_never_reads_the_wall_clock() -> None:
    root = Path(__file__).resolve().parents[1] / "reference"
    pattern = re.compile(r"\btime\.(time|time_ns|monotonic|perf_counter)\(|datetime\.now\(|date\.today\(")
    offenders = [
        f"{p.relative_to(root)}:{i}"
        for p in root.rglob("*.py")
        if p.name != "clock.py" and "net" not in p.parts
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
