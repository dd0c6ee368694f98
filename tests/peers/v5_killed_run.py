"""A recorded kill-one run of an official v5 client (issue 38's must-show), shared by the Java, Go and Python tests.

N messages sent by the client's own Producer (its subject in ``MQTCK_MODE=produce``) through ``mqtck record
--protocol grpc``, two consumers of one group behind the recorder, the first (the victim) with a listener that never
finishes (it acknowledges nothing, so every message it received is held) and SIGKILLed once the producer is done.
Against the reference (``mqtck broker --remoting --grpc``) or the real proxy (``mqtck peer run
rocketmq-proxy-5.5.0``). The survivor must consume every message, every message received again must have come back
no earlier than its invisible time after its previous POP (read off the recorder's POP rows), and the audit of the
trace must find no lost message, no early redelivery and none never revived. On the reference it exits 0; on the
real proxy its only admissible findings are redelivered-after-ack (PACK-3), one per second retry copy of a killed
push consumer's message, and docs/audit.md says so.

The consumers are PushConsumers where the client has one (Java, Python) and SimpleConsumers otherwise (the Go client
v5.1.2 has no PushConsumer): :class:`KillOne` says which, and with what invisible time. The wait is sized for the
proxy: a killed push consumer's handles are renewed by the proxy until it decides the client is offline (115-151 s
seen), so its messages come back long after the 60 s invisible time. The reference renews them too (RENEW-1), and
is run with a 70 s client expiry (KILLED_CLIENT_EXPIRY_MS) so that they come back soon after their 60 s."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.client_check.pop_scenarios import KILLED_CLIENT_EXPIRY_MS, KILLED_CLIENT_SCAN_MS, PUSH_INVISIBLE_S
from conformance.peers import peer_info
from conformance.peers.clients_v5 import v5_client_command
from conformance.targets.remoting import RemotingTarget
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 200
#: How long the victim's listener takes over one message: longer than the run, so it acknowledges nothing and every
#: message it received (its consumption threads', and its cache's) is held when it is killed.
VICTIM_DELAY_MS = 900_000
#: How long the survivor's listener takes over one message.
SURVIVOR_DELAY_MS = 20
#: How long after the producer finished the victim is killed (its share received by then).
KILL_AFTER_S = 5
#: The longest the survivor may take to consume everything after the kill (the proxy's renewal: 115-151 s seen).
COMEBACK_WAIT_S = 300
#: How long the survivor must print no new consumption before it is stopped: "consumed" is printed before the
#: client sends its ack, and a push consumer keeps popping into its cache, so a survivor stopped the moment it has
#: seen every body can leave its last ack unsent or a popped copy unconsumed (a CI run lost a last ack so).
SETTLE_QUIET_S = 10
#: The longest the settling may take (the proxy's second retry copies come seconds after the first).
SETTLE_MAX_S = 120
#: The audit's categories that must be judged and empty: no loss, no early redelivery, none never revived.
POP_FINDINGS = ("lost", "early-redelivery", "redelivered-after-ack", "never-revived")
#: The findings each deployment may show: the proxy's second retry copies of a killed consumer's messages, delivered
#: after the first copy was acknowledged (PACK-3, redelivered-after-ack; see :func:`run_killed_consumer`).
ALLOWED_FINDINGS = {"reference": frozenset[str](), "proxy": frozenset({"redelivered-after-ack"})}
#: A SimpleConsumer's invisible time in the kill-one run: long enough that the victim's batch comes back after the
#: kill, not while it still sleeps over its first message.
SIMPLE_INVISIBLE_S = 30


@dataclass(frozen=True)
class KillOne:
    """How one client's two consumers run: its peer name, the environment that makes its subject a consumer, and the
    invisible time every delivery must carry (a PushConsumer's is the server's, its handle's 60 s)."""

    client: str
    consumer_env: tuple[tuple[str, str], ...]
    invisible_s: int
    #: Whether the N messages are sent before the consumers start (a backlog) rather than while they wait.
    produce_first: bool = False

    @classmethod
    def push(cls, client: str) -> KillOne:
        return cls(client, (("MQTCK_MODE", "push"),), PUSH_INVISIBLE_S)

    @classmethod
    def simple(cls, client: str) -> KillOne:
        """Two SimpleConsumer processes (a client without a PushConsumer): the victim receives one batch and sleeps
        over its first message. The messages are a backlog when they start: a receive that long-polls while they
        are sent returns as the first arrives, with one message (the victim would hold one)."""
        return cls(client, (("MQTCK_MODE", "simple"), ("MQTCK_INVISIBLE_S", str(SIMPLE_INVISIBLE_S))),
                   SIMPLE_INVISIBLE_S, produce_first=True)


class Subject:
    """One run of a client's subject, its JSON lines collected as they come."""

    def __init__(self, command: str, env: dict[str, str], log: Path) -> None:
        self.lines: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(command, shell=True, env={**os.environ, **env}, stdout=subprocess.PIPE,
                                     stderr=log.open("w"), text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if raw.startswith("{"):
                self.lines.append(json.loads(raw))

    def events(self, event: str) -> list[dict[str, Any]]:
        return [line for line in list(self.lines) if line.get("event") == event]

    def stop(self, sig: signal.Signals) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _mqtck(*args: str, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], stdout=subprocess.PIPE,
                            stderr=log.open("w"), text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                            start_new_session=True)


def _line_starting(proc: subprocess.Popen[str], prefix: str, log: Path | None = None) -> str:
    """The first line of ``proc``'s output that starts with ``prefix``; if none comes, the tail of its ``log``
    says why (a CI run once lost the reason a proxy never started with the test's temporary directory)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(prefix):
            return line.strip()
    why = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
    raise AssertionError(f"never printed {prefix!r}; its stderr ends: {why}")


def _wait(until: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if until():
            return True
        time.sleep(0.5)
    return bool(until())


def _deployment(kind: str, tmp_path: Path) -> tuple[subprocess.Popen[str], str, str]:
    """The process serving ``kind``, its gRPC endpoint and its name server (remoting) address."""
    if kind == "reference":
        # The registry drops the killed push consumer 70 s after its last heartbeat, and the front gives its
        # renewed messages back then: after their 60 s, sooner than the default 120 s (KILLED_CLIENT_EXPIRY_MS).
        proc = _mqtck("broker", "--remoting", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--data-dir",
                      str(tmp_path / "broker"), "--channel-expired-ms", str(KILLED_CLIENT_EXPIRY_MS),
                      "--channel-scan-ms", str(KILLED_CLIENT_SCAN_MS), log=tmp_path / "broker.err")
        remoting = _line_starting(proc, "mqtck broker: serving remoting://").rsplit("remoting://", 1)[1]
        grpc = _line_starting(proc, "mqtck broker: serving grpc://").rsplit("grpc://", 1)[1]
        return proc, grpc, remoting
    proc = _mqtck("peer", "run", "rocketmq-proxy-5.5.0", log=tmp_path / "proxy.err")
    ready = _line_starting(proc, "ready grpc://", tmp_path / "proxy.err").removeprefix("ready grpc://")
    grpc, _, query = ready.partition("?")
    params = dict(part.split("=", 1) for part in query.split("&"))
    return proc, grpc, params["remoting"]


def _settle(subject: Subject) -> None:
    """Wait until ``subject`` has printed no consumption for SETTLE_QUIET_S (at most SETTLE_MAX_S)."""
    deadline = time.monotonic() + SETTLE_MAX_S
    seen, quiet_since = len(subject.events("consumed")), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < SETTLE_QUIET_S:
        time.sleep(0.5)
        now = len(subject.events("consumed"))
        if now != seen:
            seen, quiet_since = now, time.monotonic()


def _create_topic_and_group(namesrv: str) -> tuple[str, str]:
    """The topic (4 queues) and the consumer group, created over remoting as an operator does before v5 clients
    start: the proxy refuses the Telemetry settings of a consumer whose group the broker does not know (the
    reference stores the group, though it serves every group whether created or not)."""
    admin = RemotingTarget(namesrv)
    try:
        topic, group = admin.namespaced("v5rec"), admin.namespaced("v5rec_group")
        admin.create_topic("v5rec", 4)
        client = RemotingClient(admin.broker_addr)
        try:
            body = json.dumps({"groupName": group, "consumeEnable": True}).encode()
            # What matters is that the proxy's broker knows the group; the reference serves any group.
            client.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body, timeout_s=10)
        finally:
            client.close()
    finally:
        admin.close()
    return topic, group


def _trace_rows(trace: Path, event: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return [row for row in rows if row.get("event") == event]


def _stop_server(server: subprocess.Popen[str], kind: str) -> None:
    server.send_signal(signal.SIGINT if kind == "reference" else signal.SIGTERM)
    try:
        server.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.communicate()


def _comebacks(trace: Path, kind: str) -> tuple[list[tuple[int, int]], int]:
    """Every unacknowledged delivery's comeback, (ms from its POP to the next POP of its message, its invisible time
    in ms), and how many POPs followed an acknowledged one. Asserts every message's last delivery was acknowledged.
    A POP after an acknowledged one is not a comeback but a second stored copy (the proxy's revive wrote two retry
    copies of some messages): counted, and judged by the audit (PACK-3). Where such copies are admitted (the
    proxy), a copy may be the last delivery and unacknowledged: the survivor was stopped with it popped, after the
    message had been consumed and acknowledged once, so nothing is lost."""
    acked = {row["handle"] for row in _trace_rows(trace, "ACK") if row.get("status") == "OK"}
    pops: dict[str, list[dict[str, Any]]] = {}
    for row in _trace_rows(trace, "POP"):
        pops.setdefault(row["msg_id"], []).append(row)
    comebacks: list[tuple[int, int]] = []
    copies = 0
    for deliveries in pops.values():
        deliveries.sort(key=lambda row: (row["ts"], row["seq"]))
        last = deliveries[-1]
        a_copy = any(row["handle"] in acked for row in deliveries[:-1]) and "redelivered-after-ack" in \
            ALLOWED_FINDINGS[kind]
        assert last["handle"] in acked or a_copy, f"a delivery never came back: {last}"
        for first, then in itertools.pairwise(deliveries):
            if first["handle"] in acked:
                copies += 1
            else:  # ts: microseconds
                comebacks.append(((then["ts"] - first["ts"]) // 1000, int(first["invisible_ms"])))
    return comebacks, copies


def _audit(trace: Path, report_dir: Path, kind: str, copies: int) -> tuple[int, dict[str, int]]:
    """``mqtck audit`` of the trace: its exit status and the POP findings' totals, asserted. On the real proxy some
    of a killed push consumer's messages are revived twice (two copies in the retry topic, the same reconsume count,
    seconds apart: seen on 14 of 113), and the second copy is delivered after the first was acknowledged: a PACK-3
    finding per copy, which must be exactly the second ``copies`` counted in the trace. Nothing else: no loss, no
    early redelivery, none never revived."""
    audit = subprocess.run([sys.executable, "-m", "conformance.cli", "audit", str(trace), "--report-dir",
                            str(report_dir)], capture_output=True, text=True, timeout=900,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    summary = json.loads((report_dir / "summary.json").read_text())
    totals = {k: summary["totals"][k] for k in POP_FINDINGS}
    allowed = ALLOWED_FINDINGS[kind]
    others = {k: v for k, v in summary["totals"].items() if v and k not in allowed}
    assert not others and summary["must_violations"] == sum(summary["totals"][k] for k in allowed), summary["totals"]
    assert sum(summary["totals"][k] for k in allowed) == copies, (summary["totals"], copies)
    assert audit.returncode == (1 if copies else 0), audit.stdout[-3000:] + audit.stderr[-3000:]
    for run in summary["runs"].values():  # judged, not withheld for want of rows
        assert all(run["categories"][k]["judged"] for k in POP_FINDINGS), run["categories"]
    return audit.returncode, totals


def run_killed_consumer(plan: KillOne, kind: str, tmp_path: Path) -> dict[str, Any]:
    """The recorded kill-one run of ``plan`` against ``kind`` (``reference`` or ``proxy``), asserted; its numbers
    (also written to ``numbers.json`` and printed: docs/audit.md's table is made of them)."""
    started = time.monotonic()
    command = v5_client_command(peer_info(plan.client), tmp_path / "home")
    server, endpoint, namesrv = _deployment(kind, tmp_path)
    subjects: list[Subject] = []
    recorder: subprocess.Popen[str] | None = None
    trace = tmp_path / "v5.jsonl"
    try:
        topic, group = _create_topic_and_group(namesrv)
        recorder = _mqtck("record", "--protocol", "grpc", "--listen", "127.0.0.1:0", "--upstream", endpoint,
                          "--trace", str(trace), log=tmp_path / "record.err")
        listen = _line_starting(recorder, "recording grpc://").split()[1].removeprefix("grpc://")
        env = {"MQTCK_ENDPOINTS": listen, "MQTCK_TOPIC": topic, "MQTCK_GROUP": group}
        consumer = {**env, **dict(plan.consumer_env), "MQTCK_DURATION_S": "900"}

        def produce() -> set[str]:
            producer = Subject(command, {**env, "MQTCK_MODE": "produce", "MQTCK_COUNT": str(MESSAGES)},
                               tmp_path / "producer.err")
            subjects.append(producer)
            assert _wait(lambda: producer.proc.poll() is not None, 180), "the producer never finished"
            sent = {line["body"] for line in producer.events("sent")}
            assert len(sent) == MESSAGES, producer.lines[-3:]
            return sent

        sent = produce() if plan.produce_first else set()
        victim, survivor = (Subject(command, {**consumer, "MQTCK_CONSUME_DELAY_MS": str(delay)},
                                    tmp_path / f"{name}.err")
                            for name, delay in (("victim", VICTIM_DELAY_MS), ("survivor", SURVIVOR_DELAY_MS)))
        subjects += [victim, survivor]
        assert _wait(lambda: victim.events("started") and survivor.events("started"), 120), "consumers never started"
        if not plan.produce_first:
            time.sleep(5)  # both in the group's assignment before the messages come
            sent = produce()
        time.sleep(KILL_AFTER_S)
        victim.stop(signal.SIGKILL)
        killed_after = time.monotonic() - started
        assert not victim.events("consumed")
        consumed = lambda: {c["body"] for c in survivor.events("consumed")}  # noqa: E731
        assert _wait(lambda: consumed() >= sent, COMEBACK_WAIT_S), f"never consumed: {sorted(sent - consumed())[:10]}"
        caught_up = time.monotonic() - started
        _settle(survivor)
        survivor.stop(signal.SIGTERM)
    finally:
        for subject in subjects:
            subject.stop(signal.SIGKILL)
        if recorder is not None:
            recorder.send_signal(signal.SIGTERM)
            recorder.communicate(timeout=60)
        _stop_server(server, kind)
    assert recorder.returncode == 0
    # Every delivery left unacknowledged (the victim's) came back no earlier than its invisible time after its POP.
    comebacks, copies = _comebacks(trace, kind)
    assert comebacks, "the killed consumer held nothing: nothing came back"
    assert all(invisible >= plan.invisible_s * 1000 for _, invisible in comebacks), comebacks[:5]
    assert all(gap >= invisible for gap, invisible in comebacks), sorted(comebacks)[:5]
    gaps = [gap for gap, _ in comebacks]
    audit_exit, totals = _audit(trace, tmp_path / "audit", kind, copies)
    numbers = {"client": plan.client, "kind": kind, "messages": MESSAGES, "invisible_s": plan.invisible_s,
               "killed_after_s": round(killed_after, 1), "came_back": len(gaps), "second_copies": copies,
               "comeback_s": [round(min(gaps) / 1000, 1), round(max(gaps) / 1000, 1)],
               "all_consumed_after_s": round(caught_up, 1), "wall_s": round(time.monotonic() - started, 1),
               "audit_exit": audit_exit, "totals": totals}
    (tmp_path / "numbers.json").write_text(json.dumps(numbers))
    print(json.dumps(numbers))
    return numbers
