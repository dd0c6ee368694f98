"""Client conformance (`mqtck conform --client`) with the tiny Python client: well-behaved it passes, each
fault on purpose fails the requirement it breaks. The real C++ client is checked in tests/interop."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.client_check.broker import BrokerThread
from conformance.client_check.checks import (
    CONSUME_REPORT_PREFIX,
    PULL_BATCH_SIZE,
    ConsumeReport,
    Context,
    consume_reports,
    consume_spread,
    flow_control_threshold,
)
from conformance.client_check.harness import Options, run_client_check
from conformance.client_check.scenarios import KILL_COMMIT_WAIT_S
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.frame import encode_frame

MINI = f"{sys.executable} {Path(__file__).with_name('mini_client.py')}"


def _statuses(options: Options, run_dir: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for result in run_client_check(options, run_dir):
        out.setdefault(result.reqs[0], set()).add(result.outcome)
    return out


@pytest.mark.req("CCLIENT-1", "CCLIENT-2", "CCLIENT-3", "CCLIENT-6")
def test_well_behaved_client_passes_the_command(tmp_path: Path) -> None:
    """End to end through the CLI: reports written, exit 0, the offset scenario's three requirements pass."""
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--client", MINI, "--client-scenarios", "offset-moved",
         "--client-duration-s", "7", "--report-dir", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    doc = json.loads(result.stdout)
    status = {r["id"]: r["status"] for r in doc["requirements"]}
    assert status == {"CCLIENT-1": "pass", "CCLIENT-2": "pass", "CCLIENT-3": "pass", "CCLIENT-4": "not-covered",
                      "CCLIENT-5": "not-covered", "CCLIENT-6": "pass", "CCLIENT-7": "not-covered",
                      "CCLIENT-8": "not-covered", "CCLIENT-9": "not-covered"}
    run = tmp_path / "latest"
    assert {p.name for p in run.iterdir()} >= {"summary.json", "junit.xml", "report.html", "trace.jsonl"}


@pytest.mark.req("CCLIENT-4")
def test_well_behaved_client_gives_revoked_queues_up(tmp_path: Path) -> None:
    statuses = _statuses(Options(MINI, ("rebalance",), duration_s=6.0, rebalance_grace_s=2.0), tmp_path)
    assert statuses == {"CCLIENT-4": {"passed"}, "CCLIENT-3": {"passed"}}


@pytest.mark.req("CCLIENT-4")
def test_a_slow_starting_client_is_judged_from_its_registration_and_the_rebalance_from_the_join(
        tmp_path: Path) -> None:
    """CI once judged the real Java push consumer CCLIENT-4 not applicable: compiling its source under load, it
    registered 8 s after its launch, and a scenario clock started at the launch ended the run before the rebalance
    grace had passed. Here the client starts 4 s late with a 6 s duration: the run still covers the join, the
    grace and the watch after it, and with a long duration it ends at the watch's end, not the duration's."""
    slow = f"sleep 4; exec {MINI}"
    results = run_client_check(Options(slow, ("rebalance",), duration_s=6.0, rebalance_grace_s=2.0), tmp_path)
    assert {r.reqs[0]: r.outcome for r in results} == {"CCLIENT-4": "passed", "CCLIENT-3": "passed"}
    results = run_client_check(Options(f"sleep 4; exec {MINI} --fault keep-revoked", ("rebalance",),
                                       duration_s=120.0, rebalance_grace_s=2.0), tmp_path / "keep")
    assert {r.reqs[0]: r.outcome for r in results}["CCLIENT-4"] == "failed"
    assert max(r.duration for r in results) < 60.0, "the run ends REVOKED_WATCH_S after join + grace"


@pytest.mark.req("CCLIENT-1")
def test_client_ignoring_next_begin_offset_fails(tmp_path: Path) -> None:
    statuses = _statuses(Options(f"{MINI} --fault ignore-next-begin-offset", ("offset-moved",), duration_s=3.0),
                         tmp_path)
    assert statuses["CCLIENT-1"] == {"failed"}


@pytest.mark.req("CCLIENT-4")
def test_client_keeping_revoked_queues_fails(tmp_path: Path) -> None:
    statuses = _statuses(Options(f"{MINI} --fault keep-revoked", ("rebalance",), duration_s=6.0,
                                 rebalance_grace_s=2.0), tmp_path)
    assert statuses["CCLIENT-4"] == {"failed"}


@pytest.mark.req("CCLIENT-3")
def test_client_committing_ahead_fails(tmp_path: Path) -> None:
    statuses = _statuses(Options(f"{MINI} --fault commit-ahead", ("offset-moved",), duration_s=3.0), tmp_path)
    assert statuses["CCLIENT-3"] == {"failed"}


@pytest.mark.req("CCLIENT-6")
def test_client_committing_the_moved_offset_again_fails_only_the_strict_rule(tmp_path: Path) -> None:
    """The C++ client's way (and, for 10 s, the Java push consumer's): pull from nextBeginOffset but commit the
    invalid offset again. Nothing was committed beyond what the broker handed out (CCLIENT-3 passes)."""
    statuses = _statuses(Options(f"{MINI} --fault recommit-moved", ("offset-moved",), duration_s=3.0), tmp_path)
    assert statuses["CCLIENT-6"] == {"failed"}
    assert statuses["CCLIENT-1"] == statuses["CCLIENT-3"] == {"passed"}


@pytest.mark.req("CCLIENT-7")
def test_a_killed_clients_successor_starts_at_the_committed_offsets(tmp_path: Path) -> None:
    killed_at = _killed_and_judged(Options(MINI, ("consumer-killed",), duration_s=14.0, fault_at_s=8.0), tmp_path)
    # Due at 8.0 s on the scenario's clock; the harness's loop sees it a poll later, under CI's load once 8.2 s.
    assert 8.0 <= killed_at < 11.0


@pytest.mark.req("CCLIENT-7")
def test_a_client_that_commits_late_is_killed_after_its_first_commit(tmp_path: Path) -> None:
    """The kill waits for the client's first commit of the topic, so its successor has a committed offset to start
    from: killed at its scheduled time, before any commit, CCLIENT-7 would have no evidence (a loaded CI run once
    called the Java lite-pull consumer's CCLIENT-7 not applicable so, its first periodic persist after 15 s)."""
    killed_at = _killed_and_judged(Options(f"{MINI} --commit-after 6", ("consumer-killed",), duration_s=10.0,
                                           fault_at_s=2.0), tmp_path)
    assert 5.5 <= killed_at < 2.0 + KILL_COMMIT_WAIT_S


@pytest.mark.req("CCLIENT-7")
def test_a_kill_waiting_for_a_commit_holds_the_scenarios_end_back(tmp_path: Path) -> None:
    """The client's first commit comes after the scenario's whole duration (9 s against 6): the run lasts until the
    kill, and the successor then runs what was left after the kill's scheduled time. Ended at its duration, the run
    never killed the client and called CCLIENT-7 not applicable (the Java lite-pull consumer in a loaded CI run)."""
    killed_at = _killed_and_judged(Options(f"{MINI} --commit-after 9", ("consumer-killed",), duration_s=6.0,
                                           fault_at_s=2.0), tmp_path)
    assert 8.5 <= killed_at < 2.0 + KILL_COMMIT_WAIT_S


def _killed_and_judged(options: Options, run_dir: Path) -> float:
    """Run the consumer-killed scenario: CCLIENT-7 and CCLIENT-3 pass, and the client was killed (when, in s)."""
    assert _statuses(options, run_dir) == {"CCLIENT-7": {"passed"}, "CCLIENT-3": {"passed"}}
    log = (run_dir / "consumer-killed.log").read_text()
    killed = re.search(r"client killed with SIGKILL at (\d+\.\d) s, started again", log)
    assert killed, log
    return float(killed.group(1))


@pytest.mark.req("CCLIENT-7")
def test_the_frames_a_killed_client_left_in_its_socket_are_read_before_its_restart_is_marked(tmp_path: Path) -> None:
    """The harness marks a killed client's restart after :meth:`BrokerThread.settle` for the connections open at the
    kill: before that mark, the broker may not yet have read what the dead process sent (a pull at the end of the
    queue, just before SIGKILL, was once judged as the successor's first pull and failed the Java push consumer's
    CCLIENT-7). The broker's loop is held busy while a frame is sent and the socket closed: only the wait for
    that connection puts the frame's row in the trace, and a connection opened later is not waited for."""
    broker = BrokerThread(tmp_path).start()
    try:
        broker.call(lambda: broker.broker.create_topic("T", 1))
        dead = socket.create_connection(broker.address)
        while not broker.connections():
            time.sleep(0.01)
        open_at_kill = broker.connections()
        busy = threading.Thread(target=broker.call, args=(time.sleep, 0.5))
        busy.start()
        time.sleep(0.05)
        dead.sendall(encode_frame(RemotingCommand(code=RequestCode.SEND_MESSAGE, opaque=1, ext_fields={
            "producerGroup": "P", "topic": "T", "queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0",
            "properties": "", "reconsumeTimes": "0", "unitMode": "0", "batch": "0"}, body=b"last words")))
        dead.close()
        later = socket.create_connection(broker.address)
        assert [r["event"] for r in broker.rows()] == []
        assert broker.settle(among=open_at_kill)
        assert [r["event"] for r in broker.rows()] == ["SEND"]
        assert broker.connections(), "the connection opened after the kill is still open"
        assert not broker.settle(timeout_s=0.2), "a wait for every connection waits for it too"
        later.close()
        busy.join()
    finally:
        broker.close()


@pytest.mark.req("CCLIENT-7")
def test_a_successor_skipping_past_the_committed_offset_fails(tmp_path: Path) -> None:
    """The skip is committed before the first pull too (the broker then holds it): the checker judges the first
    pull against the offsets the broker held when the client appeared, so the commit does not hide it."""
    results = run_client_check(Options(f"{MINI} --fault skip-committed", ("consumer-killed",), duration_s=14.0,
                                       fault_at_s=8.0), tmp_path)
    found = {r.reqs[0]: r for r in results}
    assert found["CCLIENT-7"].outcome == "failed"
    assert "beyond the group's committed offset" in found["CCLIENT-7"].message


@pytest.mark.req("CCLIENT-8", "CCLIENT-9")
def test_a_client_comes_back_after_the_broker_restarts(tmp_path: Path) -> None:
    results = run_client_check(Options(MINI, ("broker-restarted",), duration_s=15.0, fault_at_s=3.0), tmp_path)
    found = {r.reqs[0]: r for r in results}
    assert {k: r.outcome for k, r in found.items()} == {"CCLIENT-8": "passed", "CCLIENT-9": "passed",
                                                        "CCLIENT-3": "passed"}
    resumed = dict(found["CCLIENT-8"].observations)["client.broker-restarted.resumed_after_s"]
    assert 0 < resumed < 15.0  # reconnects after 3 s, not at the end of the run
    rows = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert [r["event"] for r in rows if r["event"] in ("CRASH", "RESTART")] == ["CRASH", "RESTART"]


@pytest.mark.req("CCLIENT-8", "CCLIENT-9")
def test_a_client_that_never_comes_back_fails(tmp_path: Path) -> None:
    statuses = _statuses(Options(f"{MINI} --fault no-resume", ("broker-restarted",), duration_s=10.0,
                                 fault_at_s=3.0, resume_within_s=4.0), tmp_path)
    assert statuses["CCLIENT-8"] == statuses["CCLIENT-9"] == {"failed"}


@pytest.mark.req("CCLIENT-8", "CCLIENT-9")
def test_a_late_comeback_fails_only_the_bound(tmp_path: Path) -> None:
    """The mini client pulls again about 3 s after the broker's return: past a 1 s bound (CCLIENT-9, upstream's),
    yet it came back without skipping (CCLIENT-8, the seed's)."""
    statuses = _statuses(Options(MINI, ("broker-restarted",), duration_s=15.0, fault_at_s=3.0, resume_within_s=1.0),
                         tmp_path)
    assert (statuses["CCLIENT-8"], statuses["CCLIENT-9"]) == ({"passed"}, {"failed"})


@pytest.mark.req("CCLIENT-1", "CCLIENT-6")
def test_retention_passing_a_slow_client_moves_its_offset(tmp_path: Path) -> None:
    """Every commit-log segment but the last expires while the client is behind: its next pull is below the
    queue's min offset (OFFSET_TOO_SMALL, answered PULL_OFFSET_MOVED) and it must pull on from the min."""
    results = run_client_check(Options(MINI, ("retention",), duration_s=12.0, fault_at_s=3.0), tmp_path)
    found = {r.reqs[0]: r for r in results}
    assert {k: r.outcome for k, r in found.items()} == {"CCLIENT-1": "passed", "CCLIENT-3": "passed",
                                                         "CCLIENT-6": "passed"}
    observed = dict(found["CCLIENT-1"].observations)
    assert observed["client.retention.segments_expired"] > 0
    rows = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    moved = [r for r in rows if r["event"] == "PULL_RESP" and r.get("status") == "OFFSET_TOO_SMALL"]
    assert moved and moved[0]["next_offset"] == observed["client.retention.min_offset_after_retention"]


def test_a_program_that_never_connects_fails(tmp_path: Path) -> None:
    statuses = _statuses(Options("exit 0", ("offset-moved",), duration_s=1.0), tmp_path)
    assert statuses == {"CCLIENT-1": {"failed"}, "CCLIENT-2": {"failed"}, "CCLIENT-3": {"failed"},
                        "CCLIENT-6": {"failed"}}


def _rows(backlogs: list[int]) -> list[dict]:
    rows, seq = [], 0
    for i, backlog in enumerate(backlogs):
        for event, offset in (("PULL_REQ", 5_000 + i), ("COMMIT", 5_000 + i - backlog)):
            seq += 1
            rows.append({"seq": seq, "ts": seq, "event": event, "group": "G", "client_id": "c", "topic": "T",
                         "queue_id": 0, "offset": offset})
    return rows


@pytest.mark.req("CCLIENT-5")
@pytest.mark.parametrize(("backlogs", "status"), [
    ([10, 600, 1000, 1000 + PULL_BATCH_SIZE], "pass"),
    ([10, 600, 1000 + PULL_BATCH_SIZE + 1], "fail"),
    ([0, 32, 64], "not-applicable"),
])
def test_flow_control_checker(backlogs: list[int], status: str) -> None:
    """Each pull's backlog is its offset minus the commit piggybacked on it (the row right after it); with no
    allowance for concurrent consumption the limit is the threshold plus one batch."""
    ctx = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=0)
    assert flow_control_threshold(_rows(backlogs), ctx).status == status


@pytest.mark.req("CCLIENT-5")
def test_flow_control_allows_what_concurrent_consume_threads_took_above_the_consume_offset() -> None:
    """The C++ client consumes each pulled batch on one of as many threads as there are cores: its consume offset
    waits for the slowest, so on two cores a correct pull shows 1 000 cached plus the other thread's batch. The
    allowance is a batch per core beyond the first, never below one batch (the 20 one-message threads of the Java
    and Go consumers); a queue smaller than the limit cannot show a violation and is not judged."""
    assert [consume_spread(cores) for cores in (1, 2, 4)] == [32, 32, 96]
    on_two_cores = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=consume_spread(2))
    assert flow_control_threshold(_rows([600, 1056]), on_two_cores).status == "pass"
    assert flow_control_threshold(_rows([600, 1065]), on_two_cores).status == "fail"
    small = [{"seq": 0, "ts": 0, "event": "SEND", "topic": "T", "queue_id": 0, "offset": 1000}]
    finding = flow_control_threshold(small + _rows([600, 1065]), on_two_cores)
    assert (finding.status, finding.message) == ("not-applicable", "the scenario's queues hold fewer messages "
                                                 "(1001) than the tolerance on this machine (1064): no pull could "
                                                 "exceed it")
    assert finding.observations == {"max_backlog": 1065, "limit": 1064}, "the N/A still says what the pulls showed"


def _cache_rows(pulls: list[tuple[int, int, int]]) -> list[dict]:
    """(pull offset, piggybacked commit, messages the answer delivers) per pull, one ms apart (rows at ms
    resolution, as the broker's clock writes them)."""
    rows, seq = [], 0
    base = {"group": "G", "client_id": "c", "topic": "T", "queue_id": 0}
    for i, (offset, commit, count) in enumerate(pulls):
        ts = (i + 1) * 1000
        for row in ({"event": "PULL_REQ", "offset": offset}, {"event": "COMMIT", "offset": commit},
                    {"event": "PULL_RESP", "offset": offset, "count": count}):
            seq += 1
            rows.append({**base, **row, "seq": seq, "ts": ts})
    return rows


@pytest.mark.req("CCLIENT-5")
def test_flow_control_by_the_clients_reports_judges_its_cache_not_its_consume_offset() -> None:
    """One consume thread starved on offset 0 holds the consume offset there while the others finish 1 100 more:
    o - c reaches 1 200, far over the limit, though the client never holds more than 100 (what the Java push consumer
    showed in a loaded CI run). Judged by what it reported finished, it passes; without reports, o - c fails it."""
    pulls = [(100 * i, 0, 100) for i in range(13)]
    # By each pull, everything delivered before the previous pull is finished, except offset 0.
    consumed = tuple(ConsumeReport(ts_us=(i + 2) * 1000 + 500, topic="T", queue_id=0, offset=o)
                     for i in range(12) for o in range(max(1, 100 * (i - 1)), 100 * i))
    starved = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=0, consumed=consumed,
                      pull_threshold=150)
    finding = flow_control_threshold(_cache_rows(pulls), starved)
    assert finding.status == "pass", finding.message
    assert finding.observations["max_held"] <= 201
    blind = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=0, pull_threshold=150)
    assert flow_control_threshold(_cache_rows(pulls), blind).status == "fail"


@pytest.mark.req("CCLIENT-5")
def test_flow_control_by_the_clients_reports_fails_a_client_that_pulls_past_its_threshold() -> None:
    """A client that finished 10 messages and pulls on with 1 100 delivered fails; its pulls after its last report
    are not judged (a report lost at shutdown must not count as held)."""
    pulls = [(100 * i, 0, 100) for i in range(12)]
    consumed = tuple(ConsumeReport(ts_us=500 + k, topic="T", queue_id=0, offset=k) for k in range(10))
    ctx = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=0, consumed=consumed)
    assert flow_control_threshold(_cache_rows(pulls), ctx).status == "not-applicable", "no pull before the reports"
    late = tuple(ConsumeReport(ts_us=12_500 + k, topic="T", queue_id=0, offset=k) for k in range(10))
    ctx = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=0, consumed=late)
    finding = flow_control_threshold(_cache_rows(pulls), ctx)
    assert finding.status == "fail", finding.message
    assert "holding at least 1090 messages delivered and not consumed (> 1032)" in finding.message


def test_consumption_reports_are_read_from_the_subjects_output() -> None:
    """Lines with the prefix are reports; other output is the client's own; no report at all is None (the subject
    does not report, and CCLIENT-5 falls back to the consume offset); a report that does not parse is an error, not
    a line skipped."""
    lines = ["started", f'{CONSUME_REPORT_PREFIX}{{"ts": 5, "topic": "T", "queue_id": 1, "offset": 7}}', "bye"]
    assert consume_reports(lines) == (ConsumeReport(5, "T", 1, 7),)
    assert consume_reports(["started", "bye"]) is None
    with pytest.raises(ValueError, match="line 2: not a consumption report"):
        consume_reports(["x", f'{CONSUME_REPORT_PREFIX}{{"ts": 5, "topic": "T"}}'])


@pytest.mark.req("CCLIENT-5")
def test_flow_control_judges_no_pull_by_a_commit_it_did_not_carry() -> None:
    """The Java lite-pull consumer piggybacks nothing and persists its offsets every 5 s: CI once failed it with
    pulls at 1460-1510 judged against its periodic commit of 210, made seconds earlier (its cache held at most 1000).
    A commit made apart from the pull says nothing of the consume offset at the pull."""
    ctx = Context("G", "T", frozenset({"c"}), end_ts_us=10**9, consume_spread=0)
    periodic = {"seq": 1, "ts": 1, "event": "COMMIT", "group": "G", "client_id": "c", "topic": "T", "queue_id": 0,
                "offset": 210}
    pulls = [{"seq": 2 + i, "ts": 2 + i, "event": "PULL_REQ", "group": "G", "client_id": "c", "topic": "T",
              "queue_id": 0, "offset": 1460 + 10 * i} for i in range(6)]
    finding = flow_control_threshold([periodic, *pulls], ctx)
    assert (finding.status, finding.message) == (
        "not-applicable", "the client piggybacked no commit on its pulls: its consume offset at a pull is unknown")
    # The same pulls, each carrying its consume offset: judged, and the last one is over the limit.
    carried = _rows([1000, 1000 + PULL_BATCH_SIZE, 1100])
    assert flow_control_threshold([periodic, *carried], ctx).status == "fail"
