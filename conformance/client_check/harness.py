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

from conformance.client_check.broker import BrokerThread
from conformance.client_check.checks import CHECKS, REBALANCE_INTERVAL_S, REBALANCE_SLACK_S, Context, Finding
from conformance.client_check.scenarios import PREFILL_BODY, SCENARIOS, Scenario
from conformance.report import TestResult
from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.message_queue import MessageQueue
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.store.message import Message

#: After SIGTERM, how long the client may take to shut down (persist offsets, unregister) before SIGKILL.
STOP_GRACE_S = 10.0
#: How long the rebalance scenario waits for the client to pull every queue before it adds the member.
OWN_ALL_QUEUES_WITHIN_S = 15.0
#: Client id of the member the harness adds (sorted after digit- and letter-led client ids).
HARNESS_MEMBER_ID = "~mqtck-harness-member"
#: Poll period while waiting for the client.
POLL_S = 0.2


@dataclass
class Options:
    command: str
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    #: Overrides every scenario's duration (tests use short runs).
    duration_s: float | None = None
    rebalance_grace_s: float = REBALANCE_INTERVAL_S + REBALANCE_SLACK_S
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
           "MQTCK_GROUP": group, "MQTCK_DURATION_S": f"{duration:g}",
           "MQTCK_CONSUME_DELAY_MS": str(scenario.consume_delay_ms), "MQTCK_SCENARIO": scenario.name}
    started = time.monotonic()
    log_path = run_dir / f"{scenario.name}.log"
    member: RemotingClient | None = None
    join_ts_us: int | None = None
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(options.command, shell=True, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            if scenario.rebalance:
                member, join_ts_us = _join_when_all_pulled(broker, scenario, topic, group, proc, started, duration)
            while proc.poll() is None and time.monotonic() - started < duration:
                time.sleep(POLL_S)
            end_ts_us = broker.clock.now_ms() * 1000
        finally:
            _stop(proc)
            if member is not None:
                member.close()
    settled = broker.settle()
    rows = broker.rows()  # the checkers keep the rows of this scenario's group
    subjects = frozenset(r["client_id"] for r in rows if r["event"] == "SUBSCRIBE" and r.get("group") == group
                         and r["client_id"] != HARNESS_MEMBER_ID)
    revoked = _revoked(broker, scenario, topic, group, subjects) if join_ts_us is not None else frozenset()
    ctx = Context(group, topic, subjects, end_ts_us, preset, join_ts_us, revoked, options.rebalance_grace_s)
    elapsed = time.monotonic() - started
    out = []
    for rid in scenario.judges:
        finding = (CHECKS[rid](rows, ctx) if subjects else
                   Finding("fail", f"the client never registered in group {group} (no heartbeat); see {log_path}"))
        out.append(_result(scenario, rid, finding, elapsed, proc.returncode, settled))
    return out


def _prepare(broker: BrokerThread, scenario: Scenario, topic: str, group: str) -> dict[tuple[str, int], int]:
    def prepare() -> None:
        core = broker.broker
        core.create_topic(topic, scenario.queues)
        for q in range(scenario.queues):
            for _ in range(scenario.prefill):
                core.send(Message(topic, PREFILL_BODY, q, tags="A"), producer="client-check")
        for q, offset in scenario.preset.items():
            core.update_consumer_offset(group, topic, q, offset, "client-check")

    broker.call(prepare)
    return {(topic, q): offset for q, offset in scenario.preset.items()}


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


def _stop(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM to the client's process group, SIGKILL if it is still there after the grace."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
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
