"""``mqtck bench e2e``: a real deployment recorded off the wire and audited (issue 18's end to end).

A broker (``--peer``, default Apache RocketMQ 4.9.7 from Maven Central) runs behind ``mqtck record``. Every client
goes through the recorder: a producer sends ``--messages`` messages at ``--rate`` per second, and three push
consumers of one clustering group consume them. Mid-stream, once it has consumed, one consumer is killed with
SIGKILL (the harness writes its CRASH row), and later a fourth joins. Once every acknowledged message has been
consumed (or ``--drain-s`` passed), the consumers are stopped with SIGTERM and the recorder ends its trace.

``--client`` picks the official client the producer and the consumers run on: ``java`` (rocketmq-client 4.9.8,
``conformance/peers/java_client/EndToEnd.java``, compiled once against its Maven Central classpath), ``go``
(rocketmq-client-go as ``conformance/peers/go_client/go.mod`` pins it, ``go_client/e2e/main.go`` built with ``go
build`` into the peer cache) or ``cpp`` (rocketmq-client-cpp 1.2.3 through PyPI ``rocketmq==0.4.4``,
``conformance/peers/cpp_e2e.py``, in a Python that has the package: the interop-remoting tox env). The programs take
the same command line and write the same rows, so the flow below is one: only how a process is started
(:class:`Clients`) differs, and what the C++ client cannot record (no ASSIGN or REVOKE: its binding has no
rebalance hook), which the result then lists as not judged (:data:`NO_REBALANCE_ROWS`).

The consumers write what only a client sees (ASSIGN and REVOKE for each rebalance round, a CONSUME row per
message, written before the listener returns), the recorder the broker's view (SEND, PULL_REQ and PULL_RESP, COMMIT,
SUBSCRIBE): merged, that is one trace (schema v1, run ``e2e``), which ``mqtck audit`` then judges. Reported: the
producer's counts, the kill and the join, the audit's totals by category (lost, unsafe commits, ownership overlap,
duplicates by cause ...) and its exit code, what it did not judge and why, and where the trace and the audit's
report are (``--keep DIR``). Beside the audit, the harness checks the one thing this deployment lets it check
without knowing who owned a queue when: every message the broker stored (a SEND row) was consumed OK by some
consumer (``sent_not_consumed``), the group being new and every queue's first pull by it at offset 0
(``first_pull_offsets``). For the Java and Go clients that repeats the audit's *lost*; for the C++ client it is
what judges ALO-1, since the audit takes a queue's start from an ASSIGN and expects nothing of a queue without one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from conformance.bench.record import CLIENT_VERSION, check_peer, start_broker, start_recorder
from conformance.cliargs import UsageError

HELP = ("a recorded deployment audited: producer and consumers (Java, Go or C++) through mqtck record, one killed, "
        "one added")
CLIENTS = Path(__file__).resolve().parent.parent / "peers" / "java_client" / "EndToEnd.java"
RUN = "e2e"
TOPIC, GROUP = "E2ETopic", "e2e_group"
#: Consumers started at first; the one killed (by index); when, and when the fourth joins, as shares of the
#: producer's planned duration.
FIRST_CONSUMERS = 3
KILLED = 1
KILL_AT, JOIN_AT = 0.35, 0.6
#: The kill waits until the killed consumer has consumed something (a consumer killed before its first message
#: tests nothing, and has no trace row to take its CRASH row's source from: a slow JVM start under load did that
#: once); after this long past the planned kill it is killed anyway, and the run reports it never consumed.
KILL_WAIT_S = 120.0
#: How long the producer runs before the consumers start (the topic exists by then).
CONSUMERS_AFTER_S = 2.0
POLL_S = 0.5
#: How long the consumers have, together, to shut down after SIGTERM (the Java and Go clients take a few seconds).
#: rocketmq-client-cpp 1.2.3 can hang in its shutdown: the broker's ids-changed notification (another consumer
#: leaving at the same moment) starts a rebalance that assigns it the retry topic's queue, and it then waits for that
#: queue's pull for ever. Such a consumer is killed (:func:`_await_shutdown`), not waited on without end.
SHUTDOWN_WAIT_S = 30.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--messages", type=int, default=100_000, help="messages sent (default 100000)")
    p.add_argument("--rate", type=int, default=2_000, help="messages sent per second (default 2000)")
    p.add_argument("--peer", default="rocketmq-4.9.7", help="the broker: a broker peer or 'reference'")
    p.add_argument("--drain-s", type=float, default=180.0,
                   help="after the producer ends, wait at most this long for every message to be consumed")
    p.add_argument("--keep", default=None, metavar="DIR", help="keep the trace and the audit report here")
    p.add_argument("--client", choices=("java", "go", "cpp"), default="java",
                   help="the official client the producer and consumers run on (default java)")


#: What the audit cannot judge from a trace whose consumers record no ASSIGN or REVOKE (the C++ client: its binding
#: has no allocation strategy or rebalance callback), though the trace has rows of a client: the audit reads a
#: client's silence as "nothing assigned, nothing dropped", true only of a client that could have recorded them.
NO_REBALANCE_ROWS = {
    **dict.fromkeys(("lost", "expired", "pending", "unsafe-commit"),
                    "no ASSIGN rows (the client cannot record its rebalances): the audit takes a queue's start offset "
                    "from its first ASSIGN and expects no message of a queue without one (sent_not_consumed judges "
                    "loss instead)"),
    **dict.fromkeys(("pull-after-drop", "commit-after-drop"),
                    "no REVOKE rows (the client cannot record its rebalances): a drop it made is not in the trace, so "
                    "no pull or commit can be seen to follow one"),
    "ownership-overlap": "no ASSIGN rows (the client cannot record its rebalances)",
}


@dataclass(frozen=True)
class Clients:
    """How the producer and the consumers are started: ``command`` followed by EndToEnd.java's arguments
    (``produce NAMESRV TOPIC MESSAGES PER_SECOND`` or ``consume NAMESRV TOPIC GROUP TRACE_FILE RUN``), which the
    Java, Go and C++ programs all take, with ``env`` added to the harness's environment; ``name`` is what the result
    reports as the client; ``records_rebalance`` whether its consumers write ASSIGN and REVOKE rows."""

    name: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    records_rebalance: bool = True

    def start(self, *args: str, **popen: Any) -> subprocess.Popen[str]:
        """The program with ``args`` (one role's command line), as a child of the harness (which kills it)."""
        env = {**os.environ, **dict(self.env)} if self.env else None
        return subprocess.Popen([*self.command, *args], text=True, env=env, **popen)


def clients(kind: str, workdir: Path) -> Clients:
    """The ``--client`` programs, resolved (the Java client's classpath from Maven Central) or built (the Go
    program, once per source hash) before the broker starts, so that a missing tool fails the run at once."""
    if kind == "go":
        from conformance.peers.clients import go_client_version, go_e2e

        return Clients(f"rocketmq-client-go {go_client_version()}", (str(go_e2e()),))
    if kind == "cpp":
        return cpp_clients(workdir)
    from conformance.peers.java import java_program
    from conformance.peers.maven import client_classpath

    program = java_program(CLIENTS, client_classpath(CLIENT_VERSION), "the end-to-end clients")
    # user.home: the Java client writes its logs under ~/logs/rocketmqlogs.
    return Clients(f"rocketmq-client {CLIENT_VERSION}",
                   ("java", "-Xmx256m", f"-Duser.home={workdir}", *program))


def cpp_clients(workdir: Path) -> Clients:
    """The C++ programs: this Python running :mod:`conformance.peers.cpp_e2e`; PeerError when this Python lacks the
    binding (PyPI ``rocketmq`` 0.4.4 conflicts with another package of that name, so only the interop-remoting tox
    env installs it)."""
    from importlib import metadata, util

    from conformance.peers import PeerError

    if util.find_spec("rocketmq") is None or util.find_spec("rocketmq.client") is None:
        raise PeerError("--client cpp needs the PyPI package rocketmq==0.4.4 in this Python; the interop-remoting tox "
                        "env installs it (run mqtck with that env's python)")
    # HOME: the C++ client writes its logs under ~/logs/rocketmq-cpp.
    return Clients(f"rocketmq-client-cpp 1.2.3 (rocketmq {metadata.version('rocketmq')})",
                   (sys.executable, "-m", "conformance.peers.cpp_e2e"), env=(("HOME", str(workdir)),),
                   records_rebalance=False)


def _log(path: Path) -> TextIO:
    """``path`` opened for a process's stderr (a context manager: closed when the run's stack unwinds)."""
    return path.open("w", encoding="utf-8")


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by the kill
    return rows


def _append(path: Path, event: str) -> None:
    """A row of ``event`` from the consumer whose trace is ``path`` (its source, its next seq), written by the
    harness: CRASH when it killed it, END when the recording ends. The time is taken before the trace is read:
    reading tens of thousands of rows takes tens of milliseconds, in which the broker has already handed the
    killed consumer's queues on, and a CRASH stamped after its successor's first consumptions would give their
    duplicates the wrong cause."""
    ts = int(time.time() * 1_000_000)
    rows = _rows(path)
    if not rows:
        return
    last = rows[-1]
    row = {"schema_version": 1, "run": RUN, "ts": ts, "source": last["source"], "seq": last["seq"] + 1,
           "event": event}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


def _has_consumed(path: Path) -> bool:
    """Whether the consumer whose trace is ``path`` has written a CONSUME row yet (bytes searched, not parsed: this
    is asked every poll)."""
    return path.exists() and b'"event":"CONSUME"' in path.read_bytes()


def _consumed(paths: list[Path]) -> set[str]:
    return {r["msg_id"] for p in paths for r in _rows(p) if r.get("event") == "CONSUME"}


def _await_shutdown(consumers: list[subprocess.Popen[str]], traces: list[Path], events: dict[str, Any],
                    say: Callable[[str], None]) -> None:
    """Wait for the consumers told to stop (SIGTERM) to exit, SHUTDOWN_WAIT_S for all of them; one still running
    then is killed with SIGKILL, its trace gets a CRASH row (what it consumed is all there; what its shutdown would
    still have committed is not) and the run reports ``consumer N shutdown_hung``."""
    deadline = time.monotonic() + SHUTDOWN_WAIT_S
    for n, consumer in enumerate(consumers):
        try:
            consumer.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            consumer.kill()
            consumer.wait()
            _append(traces[n], "CRASH")
            events[f"consumer {n} shutdown_hung"] = True
            say(f"consumer {n} had not shut down {SHUTDOWN_WAIT_S:.0f} s after SIGTERM: killed with SIGKILL")


def delivery_check(recorded: Path, traces: list[Path]) -> dict[str, Any]:
    """What the harness judges beside the audit: how many messages the broker stored (the recorder's SEND rows) no
    consumer consumed OK (``sent_not_consumed``, with a few of their ids), and the offset of the group's first pull
    of each queue of the topic (``first_pull_offsets``, "topic/broker/queue" -> offset). A new group pulling every
    queue first at 0 must consume every stored message; the first pulls show that it did start there."""
    ok = {r["msg_id"] for p in traces for r in _rows(p) if r.get("event") == "CONSUME" and r.get("status") == "OK"}
    missing, first_pull = [], {}
    for row in _rows(recorded):
        if row.get("event") == "SEND" and row["msg_id"] not in ok:
            missing.append(row["msg_id"])
        elif row.get("event") == "PULL_REQ" and row.get("group") == GROUP and row.get("topic") == TOPIC:
            first_pull.setdefault(f"{row['topic']}/{row['broker']}/{row['queue_id']}", row["offset"])
    return {"sent_not_consumed": len(missing), "sent_not_consumed_examples": missing[:5],
            "first_pull_offsets": dict(sorted(first_pull.items()))}


def run(args: argparse.Namespace) -> dict[str, Any]:
    check_peer(args.peer)
    if args.messages < 1 or args.rate < 1 or args.drain_s <= 0:
        raise UsageError("--messages and --rate must be >= 1, --drain-s > 0")
    say = lambda text: print(f"mqtck bench e2e: {text}", file=sys.stderr, flush=True)  # noqa: E731
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mqtck-bench-e2e-"))
    workdir.mkdir(parents=True, exist_ok=True)
    from conformance.peers import PeerError

    try:
        programs = clients(args.client, workdir)
    except PeerError as exc:  # no java, mvn or go; the registry or the build failed: one line, as mqtck gate says it
        raise UsageError(str(exc)) from None
    recorded, traces = workdir / "recorded.jsonl", [workdir / f"consumer-{n}.jsonl" for n in range(FIRST_CONSUMERS + 1)]
    for path in (recorded, *traces):
        path.unlink(missing_ok=True)
    planned_s = args.messages / args.rate
    events: dict[str, Any] = {}
    with ExitStack() as stack:
        namesrv = start_broker(stack, args.peer, workdir / "broker")
        recorder, front = start_recorder(stack, namesrv, recorded, RUN)
        say(f"broker {args.peer} at {namesrv}, recorder at {front}; {programs.name} producing {args.messages} at "
            f"{args.rate}/s")
        consumers: list[subprocess.Popen[str]] = []
        stack.callback(lambda: [c.kill() for c in consumers if c.poll() is None])
        started = time.monotonic()
        # Each process's stderr goes to a log beside the traces: the client's own warnings explain a finding.
        producer = programs.start("produce", front, TOPIC, str(args.messages), str(args.rate),
                                  stdout=subprocess.PIPE, stderr=stack.enter_context(_log(workdir / "producer.log")))
        stack.callback(lambda: producer.poll() is None and producer.kill())

        def start_consumer(n: int) -> None:
            consumers.append(programs.start("consume", front, TOPIC, GROUP, str(traces[n]), RUN,
                                            stdout=subprocess.DEVNULL,
                                            stderr=stack.enter_context(_log(workdir / f"consumer-{n}.log"))))
            events[f"consumer {n} started_s"] = round(time.monotonic() - started, 1)

        time.sleep(CONSUMERS_AFTER_S)
        for n in range(FIRST_CONSUMERS):
            start_consumer(n)
        killed = joined = False
        kill_due = KILL_AT * planned_s
        while producer.poll() is None or not (killed and joined):
            elapsed = time.monotonic() - started
            consuming = not killed and elapsed >= kill_due and _has_consumed(traces[KILLED])
            if consuming or (not killed and elapsed >= kill_due + KILL_WAIT_S):
                if not consuming:
                    events[f"consumer {KILLED} never_consumed"] = True
                consumers[KILLED].send_signal(signal.SIGKILL)
                consumers[KILLED].wait()
                _append(traces[KILLED], "CRASH")
                events[f"consumer {KILLED} killed_s"] = round(elapsed, 1)
                say(f"consumer {KILLED} killed with SIGKILL at {elapsed:.1f} s")
                killed = True
            if killed and not joined and elapsed >= JOIN_AT * planned_s:
                start_consumer(FIRST_CONSUMERS)
                say(f"consumer {FIRST_CONSUMERS} joined at {elapsed:.1f} s")
                joined = True
            time.sleep(POLL_S)
        out = producer.stdout.read() if producer.stdout else ""
        produced = json.loads(out.strip().splitlines()[-1]) if out.strip() else {"acked": 0, "failed": args.messages}
        say(f"producer done: {produced}; waiting for the consumers")
        deadline = time.monotonic() + args.drain_s
        while len(_consumed(traces)) < produced["acked"] and time.monotonic() < deadline:
            time.sleep(POLL_S * 4)
        drained = len(_consumed(traces))
        events["drained_s"] = round(time.monotonic() - started, 1)
        for n, consumer in enumerate(consumers):
            if n != KILLED and consumer.poll() is not None:
                # It stopped by itself (e.g. could not start): the trace lacks what it would have done.
                events[f"consumer {n} exited_early"] = consumer.returncode
                say(f"consumer {n} had exited by itself with code {consumer.returncode}")
            elif n != KILLED:
                consumer.send_signal(signal.SIGTERM)
        _await_shutdown(consumers, traces, events, say)
        for path in traces:
            _append(path, "END")
        recorder.send_signal(signal.SIGTERM)
        summary_text, _ = recorder.communicate(timeout=60)
    trace = workdir / "trace.jsonl"
    trace_rows = 0
    with trace.open("w", encoding="utf-8") as out_fh:
        for path in (recorded, *traces):
            if path.exists():
                text = path.read_text(encoding="utf-8")
                trace_rows += text.count("\n")
                out_fh.write(text)
    say(f"auditing {trace} ({trace_rows} rows)")
    report = workdir / "audit"
    shutil.rmtree(report, ignore_errors=True)
    audit_started = time.monotonic()
    audit = subprocess.run([sys.executable, "-m", "conformance.cli", "audit", str(trace), "--report-dir", str(report)],
                           capture_output=True, text=True, timeout=1_800)
    audit_s = round(time.monotonic() - audit_started, 1)
    doc = json.loads((report / "summary.json").read_text()) if (report / "summary.json").exists() else {}
    unjudged = {name: runs.get(RUN, "") for name, runs in doc.get("not_judged", {}).items()}
    if not programs.records_rebalance:
        unjudged |= NO_REBALANCE_ROWS
    totals = {k: v for k, v in doc.get("totals", {}).items() if k not in unjudged}
    return {
        "params": {"messages": args.messages, "rate": args.rate, "peer": args.peer, "drain_s": args.drain_s,
                   "client": programs.name},
        "producer": produced, "distinct_consumed": drained, "events": events,
        "delivery": delivery_check(recorded, traces),
        "recorder": json.loads(summary_text[summary_text.index("{"):]) if "{" in summary_text else {},
        "audit": {"exit_code": audit.returncode, "seconds": audit_s, "must_violations": doc.get("must_violations"),
                  "findings": {k: v for k, v in totals.items() if v},
                  "duplicates_by_cause": {k.removeprefix("duplicate-"): v for k, v in totals.items()
                                          if k.startswith("duplicate-")},
                  "not_judged": sorted(unjudged), "not_judged_because": dict(sorted(unjudged.items())),
                  "stderr": audit.stderr.strip()[-500:]},
        "trace": str(trace), "trace_rows": trace_rows, "report": str(report),
    }
