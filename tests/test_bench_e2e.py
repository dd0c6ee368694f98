"""``mqtck bench e2e``'s parts that need no broker: the harness's per-message delivery check, what a client without
rebalance rows leaves unjudged, and the C++ program's trace rows and route handling (the runs themselves are in
tests/peers and tests/interop)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.bench.e2e import GROUP, NO_REBALANCE_ROWS, TOPIC, delivery_check
from conformance.peers.cpp_e2e import TraceWriter, broker_of
from reference.rules.trace_schema import missing_columns


def _write(path: Path, *rows: dict) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_delivery_check_counts_stored_messages_nobody_consumed_ok_and_the_first_pulls(tmp_path: Path) -> None:
    q = {"topic": TOPIC, "broker": "b", "queue_id": 1}
    _write(tmp_path / "recorded.jsonl",
           {"event": "SEND", "msg_id": "m1", **q}, {"event": "SEND", "msg_id": "m2", **q},
           {"event": "SEND", "msg_id": "m3", **q}, {"event": "PULL_REQ", "group": GROUP, "offset": 0, **q},
           {"event": "PULL_REQ", "group": GROUP, "offset": 2, **q},
           {"event": "PULL_REQ", "group": GROUP, "topic": f"%RETRY%{GROUP}", "broker": "b", "queue_id": 0, "offset": 5})
    _write(tmp_path / "c0.jsonl", {"event": "CONSUME", "msg_id": "m1", "status": "OK"},
           {"event": "CONSUME", "msg_id": "m2", "status": "LATER"})
    got = delivery_check(tmp_path / "recorded.jsonl", [tmp_path / "c0.jsonl", tmp_path / "missing.jsonl"])
    assert got == {"sent_not_consumed": 2, "sent_not_consumed_examples": ["m2", "m3"],
                   "first_pull_offsets": {f"{TOPIC}/b/1": 0}}


def test_without_rebalance_rows_loss_drops_and_overlap_are_not_judged_but_duplicates_are() -> None:
    unjudged = set(NO_REBALANCE_ROWS)
    assert {"lost", "unsafe-commit", "pull-after-drop", "commit-after-drop", "ownership-overlap"} <= unjudged
    assert not [name for name in NO_REBALANCE_ROWS if name.startswith("duplicate-")]


def test_the_cpp_program_writes_schema_rows_one_line_at_a_time(tmp_path: Path) -> None:
    trace = TraceWriter(str(tmp_path / "t.jsonl"), "e2e")
    for offset in (0, 1):
        trace.row("1-127.0.0.1@i", "CONSUME", group=GROUP, topic=TOPIC, broker="b", queue_id=0, offset=offset,
                  msg_id=f"m{offset}", status="OK")
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["seq"] for r in rows] == [1, 2] and not [c for r in rows for c in missing_columns(r)]
    assert rows[0]["source"] == "client:1-127.0.0.1@i" and rows[0]["ts"] % 1000 == 0


def test_the_cpp_program_takes_the_broker_from_a_one_broker_route_and_refuses_more() -> None:
    one = {"brokerDatas": [{"brokerName": "broker-a", "brokerAddrs": {"0": "127.0.0.1:1"}}]}
    assert broker_of(one, TOPIC) == ("broker-a", "127.0.0.1:1")
    with pytest.raises(SystemExit, match="2 brokers"):
        broker_of({"brokerDatas": one["brokerDatas"] * 2}, TOPIC)


def test_a_consumer_whose_shutdown_hangs_is_killed_and_its_trace_gets_a_crash_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.bench import e2e

    monkeypatch.setattr(e2e, "SHUTDOWN_WAIT_S", 0.5)
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
    stubborn.send_signal(signal.SIGTERM)
    trace = tmp_path / "c0.jsonl"
    _write(trace, {"schema_version": 1, "run": "e2e", "ts": 1, "source": "client:c", "seq": 7, "event": "CONSUME"})
    events: dict[str, object] = {}
    e2e._await_shutdown([stubborn], [trace], events, lambda _text: None)
    assert stubborn.returncode == -signal.SIGKILL and events == {"consumer 0 shutdown_hung": True}
    last = json.loads(trace.read_text().splitlines()[-1])
    assert (last["event"], last["source"], last["seq"]) == ("CRASH", "client:c", 8)
