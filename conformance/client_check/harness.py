"""Run a client program through the scenarios against the reference broker and judge it from the trace.

For each scenario: prepare a fresh topic and group through the broker core, start ``CMD`` (a shell command)
with the environment of docs/client-conformance.md, cause what the scenario causes (a second group member
for the rebalance), stop the client after its duration (SIGTERM to its process group, SIGKILL after
:data:`STOP_GRACE_S`), and run the scenario's checkers over the broker's trace rows. The result is one
:class:`conformance.report.TestResult` per (scenario, requirement), so ``mqtck conform --client`` writes the
same summary.json / junit.xml / report.html as a target run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.cliargs import UsageError
from conformance.client_check.broker import BrokerThread
from conformance.client_check.checks import (
    CHECKS,
    REPULL_WITHIN_S,
    Context,
    Finding,
    answer_code,
    consume_reports,
)
from conformance.client_check.scenarios import (
    EVIDENCE_GRACE_S,
    KILL_COMMIT_WAIT_S,
    OWN_ALL_QUEUES_WITHIN_S,
    PREFILL_BODY,
    REBALANCE_INTERVAL_S,
    REBALANCE_SLACK_S,
    RESUME_WITHIN_S,
    REVOKED_WATCH_S,
    SCENARIOS,
    Scenario,
)
from conformance.report import TestResult
from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.message_queue import MessageQueue
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.store.message import Message

#: After SIGTERM, how long the client may take to shut down (persist offsets, unregister) before SIGKILL.
STOP_GRACE_S = 10.0
#: How long the harness waits for the client's first heartbeat. A scenario's clock (its duration, the time of its
#: fault) starts there, not at the launch: a JVM that compiled its subject's source as it started once took 8 s to
#: register under CI's load, and a clock started at the launch left the rebalance scenario too short to judge
#: CCLIENT-4. (The subjects are compiled once now, conformance/peers/java.py; other clients may start slowly too.)
REGISTER_WITHIN_S = 60.0
#: Added to the MQTCK_DURATION_S the client gets: its own timer starts before it registers, and the harness, not
#: the client, ends the scenario (SIGTERM) when the scenario's time from the registration is up.
CLIENT_DURATION_SLACK_S = 5.0
#: Client id of the member the harness adds (sorted after digit- and letter-led client ids).
HARNESS_MEMBER_ID = "~mqtck-harness-member"
#: Client id of the harness's preset commits.
PRESET_CLIENT_ID = "~mqtck-harness-preset"
#: Poll period while waiting for the client.
POLL_S = 0.2


@dataclass
class Options:
    command: str
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    #: Overrides every scenario's duration (tests use short runs).
    duration_s: float | None = None
    rebalance_grace_s: float = REBALANCE_INTERVAL_S + REBALANCE_SLACK_S
    #: Overrides the time of every scenario's fault (kill, broker restart, retention; tests use short runs).
    fault_at_s: float | None = None
    #: After a broker restart, how long the client may take to pull again (CCLIENT-9).
    resume_within_s: float = RESUME_WITHIN_S
    #: Extra environment for the client (e.g. HOME for the C++ client's offsets directory).
    env: dict[str, str] | None = None


def run_client_check(
    options: Options, run_dir: Path, progress: Callable[[str], None] | None = None,
) -> list[TestResult]:
    """Every scenario against one in-process broker; writes trace.jsonl and one log per scenario to ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    # Short polling: a caught-up pull is answered PULL_NOT_FOUND after 1 s instead of 15 s, so a short run
    # sees the client's reaction to it (the protocol is the same; only the hold time differs).
    broker = BrokerThread(run_dir / "broker-data", long_polling=False).start()
    results: list[TestResult] = []
    try:
        for name in options.scenarios:
            scenario = SCENARIOS[name]
            if progress is not None:
                progress(name)
            results += _run_scenario(broker, scenario, options, run_dir)
    finally:
        rows = broker.rows()
        broker.close()
        with (run_dir / "trace.jsonl").open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    return results


def _run_scenario(broker: BrokerThread, scenario: Scenario, options: Options, run_dir: Path) -> list[TestResult]:
    nonce = uuid.uuid4().hex[:8]
    topic, group = f"CC_{scenario.name}_{nonce}", f"CCG_{scenario.name}_{nonce}"
    duration = options.duration_s if options.duration_s is not None else scenario.duration_s
    preset = _prepare(broker, scenario, topic, group)
    env = {**os.environ, **(options.env or {}), "MQTCK_NAMESRV": broker.namesrv, "MQTCK_TOPIC": topic,
           "MQTCK_GROUP": group, "MQTCK_DURATION_S": f"{duration + _kill_wait(scenario) + CLIENT_DURATION_SLACK_S:g}",
           "MQTCK_CONSUME_DELAY_MS": str(scenario.consume_delay_ms), "MQTCK_SCENARIO": scenario.name}
    launched = time.monotonic()
    log_path = run_dir / f"{scenario.name}.log"
    member: RemotingClient | None = None
    join_ts_us: int | None = None
    faults = _Faults(scenario, broker, topic, group, options.fault_at_s)
    with log_path.open("w", encoding="utf-8") as log:
        def start_client() -> subprocess.Popen[Any]:
            return subprocess.Popen(options.command, shell=True, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)

        proc = start_client()
        try:
            _wait_registered(broker, group, proc)
            started = time.monotonic()
            ends_at = started + duration
            if scenario.rebalance:
                member, join_ts_us = _join_when_all_pulled(broker, scenario, topic, group, proc, started, duration)
                if member is not None:
                    ends_at = min(ends_at, time.monotonic() + options.rebalance_grace_s + REVOKED_WATCH_S)
            while proc.poll() is None and not faults.evidence_complete():
                elapsed = time.monotonic() - started
                # A kill that waits for the client's first commit holds the run's end back until it happens.
                if time.monotonic() >= ends_at and not faults.kill_pending():
                    break
                if faults.kill_due(elapsed):
                    open_before = broker.connections()
                    _stop(proc, signal.SIGKILL)
                    # The killed client's frames still in its sockets (a pull sent just before the kill) are its own,
                    # not its successor's first pulls: the restart is marked once the broker has read them all.
                    broker.settle(among=open_before)
                    faults.killed(elapsed)
                    log.write(f"\n--- mqtck: client killed with SIGKILL at {elapsed:.1f} s, started again ---\n")
                    log.flush()
                    # The successor runs what is left of the scenario, counted from the kill's scheduled time
                    # (a kill that waited for the client's first commit does not shorten it).
                    left = max(duration - (faults.kill_at_s or elapsed), 1.0)
                    ends_at = max(ends_at, time.monotonic() + left)
                    env["MQTCK_DURATION_S"] = f"{left + CLIENT_DURATION_SLACK_S:g}"
                    proc = start_client()
                faults.cause(elapsed, log)
                time.sleep(POLL_S)
            end_ts_us = broker.clock.now_ms() * 1000
        finally:
            _stop(proc)
            if member is not None:
                member.close()
    settled = broker.settle()
    rows = broker.rows()  # the checkers keep the rows of this scenario's group
    registered = {r["client_id"] for r in rows if r["event"] == "SUBSCRIBE" and r.get("group") == group} - {
        HARNESS_MEMBER_ID}
    # Everything else in the group is the client's: the ids it registered, and the connection keys the broker
    # names it by after a restart, until its next heartbeat registers it again.
    subjects = frozenset(r["client_id"] for r in rows if r.get("group") == group and r.get("client_id")
                         and r["client_id"] not in (HARNESS_MEMBER_ID, PRESET_CLIENT_ID)) if registered else frozenset()
    revoked = _revoked(broker, scenario, topic, group, subjects) if join_ts_us is not None else frozenset()
    with log_path.open(encoding="utf-8", errors="replace") as lines:
        try:
            consumed = consume_reports(lines)
        except ValueError as exc:
            raise UsageError(f"--client: the program's output {log_path}, {exc}") from None
    ctx = Context(group, topic, subjects, end_ts_us, preset, join_ts_us, revoked, options.rebalance_grace_s,
                  consumed=consumed, restarted_ts_us=faults.client_restarted_ts_us,
                  broker_back_ts_us=faults.broker_back_ts_us, resume_within_s=options.resume_within_s)
    elapsed = time.monotonic() - launched
    out = []
    for rid in scenario.judges:
        finding = (CHECKS[rid](rows, ctx) if subjects else
                   Finding("fail", f"the client never registered in group {group} (no heartbeat); see {log_path}"))
        finding.observations.update(faults.observations)
        out.append(_result(scenario, rid, finding, elapsed, proc.returncode, settled))
    return out


class _Faults:
    """The broker-side faults of one scenario run: when each is due, what it did, and whether the run already
    holds all the evidence the fault can give (then the scenario ends :data:`EVIDENCE_GRACE_S` later)."""

    def __init__(self, scenario: Scenario, broker: BrokerThread, topic: str, group: str,
                 at_s: float | None = None) -> None:
        self.scenario, self.broker, self.topic, self.group = scenario, broker, topic, group
        def when(scheduled: float | None) -> float | None:
            """A fault the scenario has, at ``at_s`` when the caller moves every fault there."""
            return scheduled if scheduled is None or at_s is None else at_s

        self.kill_at_s = when(scenario.kill_at_s)
        self.restart_at_s = when(scenario.restart_broker_at_s)
        self.retention_at_s = when(scenario.retention_at_s)
        self.client_restarted_ts_us: int | None = None
        self.broker_back_ts_us: int | None = None
        self._retention_done = False
        self._evidence_since: float | None = None
        #: The pulls and answers of the scenario's topic and group so far, and how many broker rows were read for
        #: them: each poll reads only the rows written since (the broker's trace holds every scenario's rows).
        self._pulls: list[dict[str, Any]] = []
        self._rows_read = 0
        #: Whether the client has committed an offset of the topic (the harness's preset is not the client's).
        self._committed = False
        self.observations: dict[str, Any] = {}

    def kill_due(self, elapsed: float) -> bool:
        """Due at the scenario's time once the client has committed an offset of the topic (its successor then
        has one to start from), or :data:`KILL_COMMIT_WAIT_S` later without one."""
        at = self.kill_at_s
        if at is None or self.client_restarted_ts_us is not None or elapsed < at:
            return False
        self._read()
        return self._committed or elapsed >= at + KILL_COMMIT_WAIT_S

    def kill_pending(self) -> bool:
        """Whether the scenario kills the client and has not yet: the kill, waiting for the client's first commit,
        may come after the scenario's scheduled end (at the latest :data:`KILL_COMMIT_WAIT_S` after its time), and
        the run lasts until it (a CI run once ended the consumer-killed scenario at 35 s with the Java lite-pull
        consumer not yet committed, so never killed it, and called its CCLIENT-7 not applicable)."""
        return self.kill_at_s is not None and self.client_restarted_ts_us is None

    def killed(self, elapsed: float) -> None:
        self.client_restarted_ts_us = self.broker.clock.now_ms() * 1000
        self.observations["client_killed_at_s"] = round(elapsed, 1)

    def cause(self, elapsed: float, log: Any) -> None:
        at = self.restart_at_s
        if at is not None and self.broker_back_ts_us is None and elapsed >= at:
            self.broker.restart()
            self.broker_back_ts_us = self.broker.clock.now_ms() * 1000
            self.observations["broker_restarted_at_s"] = round(elapsed, 1)
            log.write(f"\n--- mqtck: broker restarted at {elapsed:.1f} s ---\n")
            log.flush()
        at = self.retention_at_s
        if at is not None and not self._retention_done and elapsed >= at:
            self._retention_done = True
            self.observations["segments_expired"] = self.broker.expire_retention()
            self.observations["retention_at_s"] = round(elapsed, 1)
            min_offset = self.broker.call(lambda: self.broker.broker.store.get_min_offset_in_queue(self.topic, 0))
            self.observations["min_offset_after_retention"] = min_offset
            log.write(f"\n--- mqtck: retention at {elapsed:.1f} s, queue 0's min offset now {min_offset} ---\n")
            log.flush()

    def evidence_complete(self) -> bool:
        """True once :data:`EVIDENCE_GRACE_S` has passed since the run first held the whole evidence of its fault:
        after a kill, the successor pulled every queue; after the broker's return, the client pulled every queue
        it pulled before; after retention, the client pulled a queue again after its PULL_OFFSET_MOVED."""
        if self._evidence_since is None:
            if not self._has_evidence():
                return False
            self._evidence_since = time.monotonic()
        return time.monotonic() - self._evidence_since >= EVIDENCE_GRACE_S

    def _has_evidence(self) -> bool:
        scenario = self.scenario
        since = self.client_restarted_ts_us or self.broker_back_ts_us
        moves = scenario.retention_at_s is not None or bool(scenario.preset)
        if since is None and not moves or scenario.retention_at_s is not None and not self._retention_done:
            return False
        self._read()
        rows = self._pulls
        if since is not None:
            return len({r["queue_id"] for r in rows if r["event"] == "PULL_REQ" and r["ts"] >= since}) == \
                scenario.queues
        moved_at: dict[int, int] = {}
        pulled_since: set[int] = set()
        for row in rows:
            if row["event"] == "PULL_RESP" and answer_code(row) == "PULL_OFFSET_MOVED":
                moved_at[row["queue_id"]] = row["seq"]
                pulled_since.discard(row["queue_id"])
            elif row["event"] == "PULL_REQ" and row["queue_id"] in moved_at:
                pulled_since.add(row["queue_id"])
        if not moved_at or pulled_since != set(moved_at):
            return False
        if "CCLIENT-2" not in scenario.judges:
            return True
        # CCLIENT-2 judges a PULL_NOT_FOUND answer only once its re-pull window has passed inside the run.
        judged_before = (self.broker.clock.now_ms() - int(REPULL_WITHIN_S * 1000)) * 1000
        return any(r["event"] == "PULL_RESP" and answer_code(r) == "PULL_NOT_FOUND" and r["ts"] <= judged_before
                   for r in rows)


    def _read(self) -> None:
        """Take in the broker's rows written since the last read: the pulls, answers and commits of the scenario's
        topic (only: a push consumer also pulls its group's %RETRY% topic) and group."""
        new = self.broker.rows(self._rows_read)
        self._rows_read += len(new)
        mine = [r for r in new if r.get("group") == self.group and r.get("topic") == self.topic]
        self._pulls += [r for r in mine if r["event"] in ("PULL_REQ", "PULL_RESP")]
        self._committed = self._committed or any(r["event"] == "COMMIT" and r.get("client_id") != PRESET_CLIENT_ID
                                                 for r in mine)


def _kill_wait(scenario: Scenario) -> float:
    """How much longer than its duration a scenario may run while its kill waits for the client's first commit: the
    client runs that much longer too, so that it is alive to be killed."""
    return KILL_COMMIT_WAIT_S if scenario.kill_at_s is not None else 0.0


def _prepare(broker: BrokerThread, scenario: Scenario, topic: str, group: str) -> dict[tuple[str, int], int]:
    def prepare() -> None:
        core = broker.broker
        core.create_topic(topic, scenario.queues)
        for q in range(scenario.queues):
            for _ in range(scenario.prefill):
                core.send(Message(topic, PREFILL_BODY, q, tags="A"), producer="client-check")
        for q, offset in scenario.preset.items():
            core.update_consumer_offset(group, topic, q, offset, PRESET_CLIENT_ID)

    broker.call(prepare)
    return {(topic, q): offset for q, offset in scenario.preset.items()}


def _wait_registered(broker: BrokerThread, group: str, proc: subprocess.Popen[Any]) -> None:
    """Until the client's first heartbeat registers it in ``group`` (or it exits, or :data:`REGISTER_WITHIN_S`
    passes: a client that never registers then fails every requirement of the scenario)."""
    deadline, read = time.monotonic() + REGISTER_WITHIN_S, 0
    while proc.poll() is None and time.monotonic() < deadline:
        new = broker.rows(read)
        read += len(new)
        if any(r["event"] == "SUBSCRIBE" and r.get("group") == group and r.get("client_id") != HARNESS_MEMBER_ID
               for r in new):
            return
        time.sleep(POLL_S)


def _join_when_all_pulled(
    broker: BrokerThread, scenario: Scenario, topic: str, group: str, proc: subprocess.Popen[Any], started: float,
    duration: float,
) -> tuple[RemotingClient | None, int | None]:
    """Add the harness's member once the client has pulled every queue (or give up: no join, N/A)."""
    deadline = started + min(OWN_ALL_QUEUES_WITHIN_S, duration)
    while proc.poll() is None and time.monotonic() < deadline:
        pulled = {r["queue_id"] for r in broker.rows() if r["event"] == "PULL_REQ" and r.get("topic") == topic}
        if len(pulled) == scenario.queues:
            break
        time.sleep(POLL_S)
    else:
        return None, None
    member = RemotingClient(broker.call(lambda: _broker_addr(broker)))
    body = {"clientID": HARNESS_MEMBER_ID, "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
        "subscriptionDataSet": [{"topic": topic, "subString": "*", "subVersion": "0"}],
    }]}
    join_ts_us = broker.clock.now_ms() * 1000
    member.invoke(RequestCode.HEART_BEAT, {}, json.dumps(body).encode("utf-8"))
    return member, join_ts_us


def _broker_addr(broker: BrokerThread) -> str:
    # The broker's reachable address is its store host (every record's STOREHOST).
    host, port = broker.broker.store.config.store_host
    return f"{host}:{port}"


def _revoked(broker: BrokerThread, scenario: Scenario, topic: str, group: str,
             subjects: frozenset[str]) -> frozenset[tuple[str, int]]:
    """The client's queues that AllocateMessageQueueAveragely gives the harness's member once it joins."""
    name = broker.broker.config.broker_name
    queues = [MessageQueue(topic, name, q) for q in range(scenario.queues)]
    strategy = AllocateMessageQueueAveragely()
    before = set().union(*(strategy.allocate(group, c, queues, sorted(subjects)) for c in subjects)) \
        if subjects else set()
    after = strategy.allocate(group, HARNESS_MEMBER_ID, queues, sorted({*subjects, HARNESS_MEMBER_ID}))
    return frozenset((mq.topic, mq.queue_id) for mq in after if mq in before)


def _stop(proc: subprocess.Popen[Any], sig: signal.Signals = signal.SIGTERM) -> None:
    """``sig`` (SIGTERM: a graceful stop) to the client's process group, SIGKILL if it is still there after the
    grace."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def _result(scenario: Scenario, rid: str, finding: Finding, elapsed: float, returncode: int | None,
            settled: bool) -> TestResult:
    nodeid = f"client::{scenario.name}::{rid}"
    outcome = {"pass": "passed", "fail": "failed"}.get(finding.status, "skipped")
    message = finding.message if finding.status != "not-applicable" else f"not applicable: {finding.message}"
    observations = [[f"client.{scenario.name}.{k}", v] for k, v in finding.observations.items()]
    observations.append([f"client.{scenario.name}.exit_code", returncode])
    # False: a connection of the client was still open when the rows were read (BrokerThread.settle).
    observations.append([f"client.{scenario.name}.connections_closed", settled])
    return TestResult(nodeid, [rid], outcome, round(elapsed, 3), message, message.splitlines()[0], observations)
