"""Run a RocketMQ 5 (gRPC, POP) client program through the POP scenarios against the reference broker's gRPC front
and judge it from the trace and its own account of what it consumed.

The broker is the client check's in-process one (:class:`~conformance.client_check.broker.BrokerThread`) with the
gRPC front (``reference.net.grpc``) started beside its remoting on the same loop, so every POP, ACK,
CHANGE_INVISIBLE, SUBSCRIBE and UNSUBSCRIBE of a v5 client lands in the same trace. For each scenario: prepare a
fresh topic and group with messages ``m0`` ... ``m{N-1}`` (each with its own unique id), start ``CMD`` with the
environment of docs/client-conformance.md ("RocketMQ 5 clients"), wait for its first heartbeat, let it consume
(it stops by itself once every message succeeded), start and kill a second consumer where the scenario says, then
judge with :mod:`.pop_checks`. One :class:`conformance.report.TestResult` per (scenario, requirement), so the
reports are those of ``mqtck conform --client``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from conformance.client_check.broker import BrokerThread
from conformance.client_check.checks import Finding
from conformance.client_check.pop_checks import CHECKS, PopContext
from conformance.client_check.pop_scenarios import (
    AWAIT_S,
    KILL_WITHIN_S,
    KILLED_CLIENT_EXPIRY_MS,
    KILLED_CLIENT_SCAN_MS,
    QUEUES,
    RECEIVE_INVISIBLE_S,
    REGISTER_WITHIN_S,
    RETRY_INVISIBLE_S,
    SCENARIOS,
    PopScenario,
)
from conformance.report import TestResult
from reference.store.message import Message

#: After SIGTERM, how long the client may take to shut down (finish its consumptions, notify termination).
STOP_GRACE_S = 15.0
#: Added to the MQTCK_DURATION_S a client gets: the harness, not the client's own timer, ends a scenario.
CLIENT_DURATION_SLACK_S = 10.0
#: The exit status of a subject that does not have the scenario's mode (the Go client has no PushConsumer).
EXIT_UNSUPPORTED = 3
#: Once every message is acknowledged, how long a scenario with a second consumer still runs (late acks, the
#: survivor's own shutdown).
SETTLE_S = 2.0
#: Poll period while waiting for the client.
POLL_S = 0.2


@dataclass
class PopOptions:
    command: str
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    #: Extra environment for the client (HOME for a client's logs).
    env: dict[str, str] | None = None


def run_pop_client_check(
    options: PopOptions, run_dir: Path, progress: Callable[[str], None] | None = None,
) -> list[TestResult]:
    """Every scenario against one in-process broker with its gRPC front; writes trace.jsonl and each client
    process's output (``<scenario>.<n>.out``: its JSON lines, ``.log``: its stderr) to ``run_dir``."""
    from reference.net.grpc.server import start_grpc

    run_dir.mkdir(parents=True, exist_ok=True)
    broker = BrokerThread(run_dir / "broker-data", run="pop-client-check", channel_expired_ms=KILLED_CLIENT_EXPIRY_MS,
                          channel_scan_ms=KILLED_CLIENT_SCAN_MS).start()
    results: list[TestResult] = []
    try:
        front = broker.start_front(lambda host: start_grpc(host, "127.0.0.1", 0))
        endpoints = "{}:{}".format(*front.address)
        for name in options.scenarios:
            if progress is not None:
                progress(name)
            results += _Run(broker, SCENARIOS[name], options, run_dir, endpoints).judge()
    finally:
        rows = broker.rows()
        broker.close()
        with (run_dir / "trace.jsonl").open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    return results


@dataclass
class _Process:
    """One client process of a scenario and what it left behind."""

    proc: subprocess.Popen[Any]
    out: Path
    ids: frozenset[str] = frozenset()
    killed: bool = False
    files: list[IO[str]] = field(default_factory=list)

    def lines(self) -> list[dict[str, Any]]:
        """Its JSON lines (anything else it printed is skipped)."""
        found = []
        for text in self.out.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
        return found


def _group_alive(proc: subprocess.Popen[Any]) -> bool:
    """Whether a process of ``proc``'s group (CMD's shell and what it started) still runs. The leader is reaped
    first, so that its zombie does not count; its orphaned children are reaped by init."""
    proc.poll()
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    return True


class _Run:
    """One scenario: its topic, group and messages, its client processes, and its verdicts."""

    def __init__(self, broker: BrokerThread, scenario: PopScenario, options: PopOptions, run_dir: Path,
                 endpoints: str) -> None:
        self.broker, self.scenario, self.options, self.run_dir = broker, scenario, options, run_dir
        nonce = uuid.uuid4().hex[:8]
        self.topic, self.group = f"PC_{scenario.name}_{nonce}", f"PCG_{scenario.name}_{nonce}"
        self.sent = self._prepare()
        count = 0 if scenario.kill_at_s is not None else scenario.messages
        self.env = {
            **os.environ, **(options.env or {}), "MQTCK_ENDPOINTS": endpoints, "MQTCK_TOPIC": self.topic,
            "MQTCK_GROUP": self.group, "MQTCK_MODE": scenario.mode, "MQTCK_FAIL": ",".join(scenario.fail),
            "MQTCK_EXTEND": ",".join(scenario.extend),
            "MQTCK_FAIL_ATTEMPTS": str(scenario.fail_attempts), "MQTCK_COUNT": str(count),
            "MQTCK_INVISIBLE_S": str(RECEIVE_INVISIBLE_S), "MQTCK_RETRY_INVISIBLE_S": str(RETRY_INVISIBLE_S),
            "MQTCK_AWAIT_S": str(AWAIT_S), "MQTCK_CONSUME_DELAY_MS": str(scenario.consume_delay_ms),
            "MQTCK_DURATION_S": f"{scenario.duration_s + CLIENT_DURATION_SLACK_S:g}", "MQTCK_SCENARIO": scenario.name,
        }
        self.processes: list[_Process] = []
        self.observations: dict[str, Any] = {}
        self._rows_read = 0
        self._known: set[str] = set()

    def _prepare(self) -> frozenset[str]:
        ids = [uuid.uuid4().hex.upper() for _ in range(self.scenario.messages)]

        def prepare() -> None:
            core = self.broker.broker
            core.create_topic(self.topic, QUEUES)
            for i, uniq in enumerate(ids):
                core.send(Message(self.topic, f"m{i}".encode(), i % QUEUES, properties={"UNIQ_KEY": uniq}),
                          producer="pop-client-check")

        self.broker.call(prepare)
        return frozenset(ids)

    # -- processes -----------------------------------------------------------------------------------------
    def _launch(self) -> _Process:
        n = len(self.processes)
        out = self.run_dir / f"{self.scenario.name}.{n}.out"
        stdout, stderr = out.open("w", encoding="utf-8"), out.with_suffix(".log").open("w", encoding="utf-8")
        proc = subprocess.Popen(self.options.command, shell=True, env=self.env, stdout=stdout, stderr=stderr,
                                start_new_session=True)
        process = _Process(proc, out, files=[stdout, stderr])
        self.processes.append(process)
        return process

    def _registered(self, process: _Process) -> bool:
        """Wait for the process's first heartbeat in the group: its client ids are the group's new ones."""
        deadline = time.monotonic() + REGISTER_WITHIN_S
        while process.proc.poll() is None and time.monotonic() < deadline:
            new = self._new_ids()
            if new:
                process.ids = frozenset(new)
                return True
            time.sleep(POLL_S)
        return False

    def _new_ids(self) -> set[str]:
        rows = self.broker.rows(self._rows_read)
        self._rows_read += len(rows)
        ids = {str(r["client_id"]) for r in rows if r["event"] == "SUBSCRIBE" and r.get("group") == self.group}
        new = ids - self._known
        self._known |= ids
        return new

    def _stop(self, process: _Process, sig: signal.Signals = signal.SIGTERM) -> None:
        """``sig`` to the process group, then wait until every process of the group is gone; SIGKILL (and the
        client counts as killed) if one outlives the grace. The whole group: the shell that ran CMD may end at the
        signal before the client it started has said goodbye (NotifyClientTermination), and the verdicts must
        wait for that."""
        pgid = process.proc.pid
        if _group_alive(process.proc):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
            deadline = time.monotonic() + STOP_GRACE_S
            while _group_alive(process.proc) and time.monotonic() < deadline:
                time.sleep(POLL_S / 4)
            if _group_alive(process.proc):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
                sig = signal.SIGKILL
            process.killed = sig == signal.SIGKILL
        process.proc.wait()
        for f in process.files:
            f.close()

    # -- the scenario --------------------------------------------------------------------------------------
    def _play(self) -> str | None:
        """Run the scenario; None, or why it could not be judged (the client has no such consumer)."""
        first = self._launch()
        try:
            if not self._registered(first):
                return self._no_start(first)
            started = time.monotonic()
            deadline = started + self.scenario.duration_s
            if self.scenario.kill_at_s is None:
                while first.proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(POLL_S)
                return None
            second = self._launch()
            if not self._registered(second):
                return self._no_start(second)
            both = time.monotonic()
            while time.monotonic() < both + KILL_WITHIN_S and (
                    time.monotonic() < both + self.scenario.kill_at_s or not self._popped(first)):
                time.sleep(POLL_S)
            self._stop(first, signal.SIGKILL)
            self.observations["killed_at_s"] = round(time.monotonic() - started, 1)
            done_since: float | None = None
            while second.proc.poll() is None and time.monotonic() < deadline:
                if done_since is None and self._all_acked():
                    done_since = time.monotonic()
                if done_since is not None and time.monotonic() - done_since >= SETTLE_S:
                    break
                time.sleep(POLL_S)
            return None
        finally:
            for process in self.processes:
                self._stop(process)

    def _no_start(self, process: _Process) -> str | None:
        if process.proc.poll() == EXIT_UNSUPPORTED:
            said = [line.get("message") for line in process.lines() if line.get("event") == "unsupported"]
            return str(said[0] if said else f"the client has no {self.scenario.mode} consumer")
        return None

    def _popped(self, process: _Process) -> bool:
        return any(r["event"] == "POP" and r.get("client_id") in process.ids for r in self.broker.rows())

    def _all_acked(self) -> bool:
        acked = {r.get("msg_id") for r in self.broker.rows() if r["event"] == "ACK" and r.get("status") == "OK"
                 and r.get("group") == self.group}
        return self.sent <= acked

    def judge(self) -> list[TestResult]:
        launched = time.monotonic()
        unsupported = self._play()
        end_ts_us = self.broker.clock.now_ms() * 1000
        self._new_ids()
        rows = self.broker.rows()
        ctx = PopContext(
            self.group, self.topic, frozenset(self._known),
            consumed=[line for p in self.processes for line in p.lines() if line.get("event") == "consumed"],
            graceful_ids=frozenset().union(*(p.ids for p in self.processes if not p.killed)),
            killed_ids=frozenset().union(*(p.ids for p in self.processes if p.killed)),
            end_ts_us=end_ts_us, sent=self.sent,
        )
        elapsed = time.monotonic() - launched
        out = []
        for rid in self.scenario.judges:
            if unsupported is not None:
                finding = Finding("not-applicable", unsupported)
            elif not ctx.subject_ids:
                finding = Finding("fail", f"the client never registered in group {self.group} (no heartbeat); see "
                                  f"{self.processes[0].out.with_suffix('.log')}")
            else:
                finding = CHECKS[rid](rows, ctx)
            finding.observations.update(self.observations)
            out.append(self._result(rid, finding, elapsed))
        return out

    def _result(self, rid: str, finding: Finding, elapsed: float) -> TestResult:
        name = self.scenario.name
        outcome = {"pass": "passed", "fail": "failed"}.get(finding.status, "skipped")
        message = finding.message if finding.status != "not-applicable" else f"not applicable: {finding.message}"
        observations: list[list[Any]] = [[f"client.{name}.{k}", v] for k, v in finding.observations.items()]
        observations += [[f"client.{name}.exit_codes", [p.proc.returncode for p in self.processes]]]
        return TestResult(f"pclient::{name}::{rid}", [rid], outcome, round(elapsed, 3), message,
                          message.splitlines()[0], observations)
