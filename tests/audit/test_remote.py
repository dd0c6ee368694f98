"""A warm Spark (``mqtck spark serve``, Spark's Connect server with the audit's settings) and ``mqtck audit --remote``:
the findings are those of a local audit of the same traces, with the same phase lines; a server that is not there
and a malformed URL are one-line errors; the server stops on SIGINT with exit 0. Processes of their own, as a user
runs them (a remote audit lifts protobuf's nesting limit for its whole process)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.audit.job import run_audit

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "traces"
#: Fixtures of three families of findings: POP, commits, permits (a remote audit's client is slow: the test's cost).
TRACES = ("pop.jsonl", "commits.jsonl", "permits.jsonl")
PHASES = ("cataloguing runs, clients and subscriptions", "deriving findings", "summarising findings")


def _mqtck(*args: str, **kwargs) -> subprocess.Popen[str]:  # type: ignore[no-untyped-def]
    return subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], cwd=ROOT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "MQTCK_PROGRESS_EVERY_S": "0"}, **kwargs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _counts(summary: dict) -> dict:  # type: ignore[type-arg]
    return {run: {name: c["count"] for name, c in data["categories"].items()}
            for run, data in summary["runs"].items()}


def test_a_remote_audit_finds_what_a_local_one_finds(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyspark.sql.connect.session", reason="Spark Connect's client (pip install 'mqtck[connect]')")
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in TRACES:
        shutil.copy(FIXTURES / name, traces / name)
    result = run_audit(traces, tmp_path / "local")
    local = result.summary
    port = _free_port()
    server = _mqtck("spark", "serve", "--port", str(port), "--driver-memory", "1g", stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert server.stdout is not None
        ready = server.stdout.readline()
        assert f"serving sc://127.0.0.1:{port}" in ready, ready
        # One audit: its client's cost is the plan's, whatever the trace (docs/audit.md, "A warm Spark").
        audit = _mqtck("audit", str(traces), "--report-dir", str(tmp_path / "remote"), "--remote",
                       f"sc://127.0.0.1:{port}", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = audit.communicate(timeout=900)
        assert audit.returncode == result.exit_code, (audit.returncode, err[-3000:])
        remote = json.loads((tmp_path / "remote" / "summary.json").read_text())
        assert remote["totals"] == local["totals"]
        assert _counts(remote) == _counts(local)
        assert all(f"mqtck audit: {phase}" in err for phase in PHASES), err[-2000:]
        assert (tmp_path / "remote" / "report.html").exists()
    finally:
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=120)
    assert code == 0


def test_no_server_and_a_bad_url_are_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyspark.sql.connect.session", reason="Spark Connect's client (pip install 'mqtck[connect]')")
    trace = FIXTURES / "pop.jsonl"
    for url, says in ((f"sc://127.0.0.1:{_free_port()}", "no Spark Connect server answers there"),
                      ("http://127.0.0.1:15002", "must be sc://HOST:PORT")):
        audit = _mqtck("audit", str(trace), "--report-dir", str(tmp_path / "r"), "--remote", url,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = audit.communicate(timeout=120)
        assert audit.returncode == 2 and says in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err


#: A plan nested deeper than protobuf's default limit (100), as the audit's are.
DEEP_PLAN = """
from conformance.audit.session import _deep_plans_allowed
from google.protobuf.internal import api_implementation
from pyspark.sql.connect.proto import commands_pb2, relations_pb2
_deep_plans_allowed()
plan = relations_pb2.Relation()
plan.range.end = 10
for _ in range(150):
    outer = relations_pb2.Relation()
    outer.project.input.CopyFrom(plan)
    plan = outer
copy = relations_pb2.Relation()
copy.MergeFrom(plan)
checkpoint = commands_pb2.CheckpointCommand(relation=plan, local=True)
wire = plan.SerializeToString()
print(api_implementation.Type(), copy.SerializeToString() == wire, checkpoint.relation.SerializeToString() == wire)
"""


@pytest.mark.parametrize("backend", ["upb", "python"])
def test_the_client_copies_plans_deeper_than_protobufs_default_on_either_backend(backend: str) -> None:
    """The C backend (upb, protobuf's default) with its limit lifted, so the client builds plans at C speed (the
    pure-Python backend cost the 20K-event audit some 20 s of client CPU); the pure-Python one when a user asks."""
    pytest.importorskip("pyspark.sql.connect.proto", reason="Spark Connect's client (pip install 'mqtck[connect]')")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": backend}
    done = subprocess.run([sys.executable, "-c", DEEP_PLAN], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [backend, "True", "True"]

