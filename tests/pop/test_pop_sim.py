"""The POP simulator: deterministic per seed, its faults take effect, and its audit finds each anomaly."""

from __future__ import annotations

import collections
import json

import pytest

from reference.sim.judges import audit_pop
from reference.sim.pop_sim import PopSimConfig, random_schedule, run

G = "PopSimGroup"


def test_same_seed_same_trace_and_faults_take_effect() -> None:
    config = PopSimConfig(seed=11)
    schedule = random_schedule(11, config, events=16)
    first, second = run(schedule, config), run(schedule, config)
    strip = [{k: v for k, v in r.items() if k != "run"} for r in first.rows]
    assert strip == [{k: v for k, v in r.items() if k != "run"} for r in second.rows], "deterministic per seed"
    kinds: collections.Counter[str] = collections.Counter()
    for seed in range(12):
        cfg = PopSimConfig(seed=seed, pop_share_queue_num=seed % 3 - 1)
        result = run(random_schedule(seed, cfg), cfg)
        assert result.finished and not result.findings, (seed, [str(f) for f in result.findings[:3]])
        kinds.update(r["event"] for r in result.rows)
        kinds.update(f"{r['source']}-{r['event']}" for r in result.rows if r["event"] == "RESTART")
    for kind in ("REVIVE", "CHANGE_INVISIBLE", "CRASH", "broker:broker-a-RESTART"):
        assert kinds[kind] > 0, f"no {kind} in 12 random schedules: the faults do not take effect"


def row(event: str, t: int, msg: str = "m", **cols) -> dict:  # type: ignore[no-untyped-def]
    return {"event": event, "ts": t * 1000, "source": "broker:b", "seq": t, "group": G, "msg_id": msg, **cols}


def pop_row(t: int, handle: str, invisible: int = 1_000, reconsume: int = 0) -> dict:
    return row("POP", t, handle=handle, invisible_ms=invisible, reconsume_times=reconsume)


@pytest.mark.parametrize(
    "rows, kind",
    [
        ([row("SEND", 0)], "lost"),
        ([row("SEND", 0), pop_row(1, "h1"), pop_row(500, "h2")], "early-redelivery"),
        ([row("SEND", 0), pop_row(1, "h1"), row("ACK", 2, handle="h1", status="OK"), pop_row(5_000, "h2", reconsume=1)],
         "redelivered-after-ack"),
        ([row("SEND", 0), pop_row(1, "h1"), row("ACK", 2, handle="h1", status="OK"),
          row("REVIVE", 3_500, reconsume_times=1)], "revived-after-ack"),
        ([row("SEND", 0), pop_row(1, "h1"), pop_row(5_000, "h2")], "unattributed-redelivery"),
        ([row("SEND", 0), pop_row(1, "h1"), row("REVIVE", 3_500, reconsume_times=2)], "reconsume-times"),
        ([row("SEND", 0), pop_row(1, "h1")], "never-revived"),
        ([row("SEND", 0), pop_row(1, "h1"),
          row("CHANGE_INVISIBLE", 2, handle="h1", invisible_ms=9_000, detail=json.dumps({"new_handle": "h1b"})),
          row("REVIVE", 4_000, reconsume_times=1)], "early-revive"),
    ],
)
def test_audit_finds_each_anomaly(rows: list[dict], kind: str) -> None:
    rows = rows + [row("END", 200_000, msg="")]
    assert kind in {f.kind for f in audit_pop(rows, G, settle_ms=30_000)}


def test_audit_accepts_a_correct_story() -> None:
    rows = [
        row("SEND", 0), pop_row(1, "h1"),
        row("CHANGE_INVISIBLE", 2, handle="h1", invisible_ms=2_000, detail=json.dumps({"new_handle": "h1b"})),
        row("REVIVE", 4_003, reconsume_times=1), pop_row(4_010, "h2", reconsume=1),
        row("ACK", 4_011, handle="h2", status="OK"), row("END", 200_000, msg=""),
    ]
    assert audit_pop(rows, G, settle_ms=30_000) == []
