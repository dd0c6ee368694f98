"""``mqtck bench record``: what recording off the wire costs (issue 18's recorder overhead).

One broker (``--peer NAME``, a real Apache RocketMQ started from Maven Central, default ``rocketmq-4.9.7``; or
``--peer reference`` for ``mqtck broker --remoting``) and one ``mqtck record`` in front of its name server. The
Java client (``conformance/peers/java_client/ThroughputProbe.java``, rocketmq-client 4.9.8) produces
``--messages`` messages from ``--threads`` threads with synchronous sends and then consumes them all with a
lite-pull consumer, straight to the name server and then through the recorder, each on its own topic, in
``--rounds`` alternating rounds after a warm-up of the broker. Reported: each phase's messages/s both ways over all
rounds and their ratio (goal: through the recorder
at least :data:`RATIO_GOAL` of direct), the rows the recorder wrote and its rows/s over the recorded run, and the
frames it passed on unrecorded or could not decode.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from conformance.cliargs import UsageError

HELP = "recorder overhead: the Java client's produce and consume throughput direct vs through mqtck record"
#: Throughput through the recorder over direct, at least (issue 18).
RATIO_GOAL = 0.8
PROBE = Path(__file__).resolve().parent.parent / "peers" / "java_client" / "ThroughputProbe.java"
#: The Java client version the probe runs on.
CLIENT_VERSION = "4.9.8"
#: Messages of the warm-up run of each path (JIT, connections, topic creation), not measured.
WARMUP_MESSAGES = 5_000
#: How long the recorder may take to say where it listens, and to write its summary once stopped.
RECORDER_START_S = 30.0
RECORDER_STOP_S = 60.0
#: A probe's time limit: its consume deadline (ThroughputProbe.CONSUME_TIMEOUT_MS) and start-up, plus its sends at
#: no less than PROBE_MIN_SENDS_PER_S. The probe bounds its own phases; this catches a JVM that does not end.
PROBE_BASE_S = 360.0
PROBE_MIN_SENDS_PER_S = 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--messages", type=int, default=100_000, help="messages per measured run (default 100000)")
    p.add_argument("--threads", type=int, default=8, help="producer threads (default 8)")
    p.add_argument("--body-bytes", type=int, default=256, help="message body size (default 256)")
    p.add_argument("--rounds", type=int, default=2,
                   help="rounds of direct then recorded (default 2); the figures are over all rounds")
    p.add_argument("--peer", default="rocketmq-4.9.7",
                   help="the broker: a broker peer of `mqtck peer list`, or 'reference' (default rocketmq-4.9.7)")


def _probe(program: list[str], namesrv: str, topic: str, messages: int, args: argparse.Namespace,
           home: Path) -> dict[str, Any]:
    limit = PROBE_BASE_S + messages / PROBE_MIN_SENDS_PER_S
    try:
        run = subprocess.run(["java", "-Xmx512m", f"-Duser.home={home}", *program, namesrv, topic,
                              str(messages), str(args.threads), str(args.body_bytes)],
                             capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as timeout:
        said = timeout.stderr.decode(errors="replace") if isinstance(timeout.stderr, bytes) else timeout.stderr or ""
        raise RuntimeError(f"the throughput probe ({messages} messages to {topic}) did not end within {limit:g} s: "
                           f"{said.strip()[-500:]}") from None
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        # The head of a stack trace says what failed; its tail is frames.
        raise RuntimeError(f"the throughput probe failed (exit {run.returncode}): {run.stderr.strip()[:500]}")
    return json.loads(lines[-1])


def start_broker(stack: ExitStack, peer: str, workdir: Path) -> str:
    """Start the broker (a broker peer, or ``reference``) for as long as ``stack`` lasts; its name server's
    HOST:PORT."""
    if peer == "reference":
        from conformance.targets.launch import launch_broker

        server = launch_broker("remoting", workdir / "reference")
        stack.callback(server.stop)
        return server.address
    from conformance.peers import peer_info
    from conformance.peers.serving import launcher

    info = peer_info(peer)
    started = stack.enter_context(launcher(info)(info))
    return started.target.removeprefix("remoting://")


def start_recorder(stack: ExitStack, namesrv: str, trace: Path,
                   run: str = "recorded") -> tuple[subprocess.Popen[str], str]:
    """``mqtck record`` in front of ``namesrv``, writing ``trace`` (rows of run ``run``): (its process, where
    clients find it)."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "record", "--listen", "127.0.0.1:0",
                             "--upstream", namesrv, "--trace", str(trace), "--run", run],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stack.callback(lambda: proc.poll() is None and proc.kill())
    assert proc.stdout is not None
    # readline blocks: read on a thread and wait for it at most RECORDER_START_S (a deadline checked after a
    # blocking read would never fire).
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(RECORDER_START_S)
    line = first[0] if first else ""
    if not line.startswith("recording remoting://"):
        proc.kill()
        raise RuntimeError(f"mqtck record did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, line.split()[1].removeprefix("remoting://")


def check_peer(peer: str) -> None:
    """UsageError unless ``peer`` is 'reference' or a broker peer of the catalogue."""
    from conformance.peers import PeerError, peer_info

    if peer == "reference":
        return
    try:
        kind = peer_info(peer).kind
    except PeerError as exc:
        raise UsageError(f"--peer: {exc}") from None
    if kind != "broker":
        raise UsageError(f"--peer {peer}: not a broker; a broker peer of `mqtck peer list` or 'reference'")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from conformance.peers.java import java_program
    from conformance.peers.maven import client_classpath

    check_peer(args.peer)
    if min(args.messages, args.threads, args.body_bytes, args.rounds) < 1:
        raise UsageError("--messages, --threads, --body-bytes and --rounds must be >= 1")
    program = java_program(PROBE, client_classpath(CLIENT_VERSION), "the throughput probe")
    workdir = Path(tempfile.mkdtemp(prefix="mqtck-bench-record-"))
    with ExitStack() as stack:
        namesrv = start_broker(stack, args.peer, workdir)
        recorder, front = start_recorder(stack, namesrv, workdir / "recorded.jsonl")
        say = lambda text: print(f"mqtck bench record: {text}", file=sys.stderr, flush=True)  # noqa: E731
        say(f"broker {args.peer} at {namesrv}, recorder at {front}; warming the broker up")
        # Only the broker is warmed (JIT, topic creation): the recorder then writes the measured run's rows alone,
        # so its rows/s counts them all.
        _probe(program, namesrv, "BenchWarmDirect", WARMUP_MESSAGES, args, workdir)
        direct, recorded, recorded_s = [], [], 0.0
        # Alternating rounds: a slow spell of the shared machine falls on both paths, not on one.
        for n in range(1, args.rounds + 1):
            say(f"round {n}/{args.rounds}: {args.messages} messages direct")
            direct.append(_probe(program, namesrv, f"BenchDirect{n}", args.messages, args, workdir))
            say(f"round {n}/{args.rounds}: {args.messages} messages through the recorder")
            started = time.monotonic()
            recorded.append(_probe(program, front, f"BenchRecorded{n}", args.messages, args, workdir))
            recorded_s += time.monotonic() - started
        recorder.send_signal(signal.SIGTERM)
        out, err = recorder.communicate(timeout=RECORDER_STOP_S)
    summary = json.loads(out[out.index("{"):]) if "{" in out else {}
    rows = sum(summary.get("rows", {}).values())
    # Each path's throughput over all its rounds: messages over the summed time of the phase.
    rate = {path: {phase: round(sum(r["messages"] for r in runs) / sum(r[f"{phase}_s"] for r in runs), 1)
                   for phase in ("produce", "consume")} for path, runs in (("direct", direct), ("recorded", recorded))}
    ratio = {phase: round(rate["recorded"][phase] / rate["direct"][phase], 3) for phase in ("produce", "consume")}
    return {
        "params": {"messages": args.messages, "threads": args.threads, "body_bytes": args.body_bytes,
                   "rounds": args.rounds, "peer": args.peer, "client": f"rocketmq-client {CLIENT_VERSION}"},
        "msgs_per_s": rate, "ratio": ratio, "ratio_goal": RATIO_GOAL,
        "goal_met": all(r >= RATIO_GOAL for r in ratio.values()),
        "rounds": [{"direct": d, "recorded": r} for d, r in zip(direct, recorded, strict=True)],
        "recorder": {"rows": rows, "rows_by_event": summary.get("rows", {}),
                     "rows_per_s_over_the_recorded_runs": round(rows / recorded_s, 1) if recorded_s else None,
                     "recorded_runs_s": round(recorded_s, 1),
                     "passed_unrecorded": summary.get("passed_unrecorded", {}),
                     "malformed_frames": summary.get("malformed_frames", 0), "stderr": err.strip()[-300:]},
    }
