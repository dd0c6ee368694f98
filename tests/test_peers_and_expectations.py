"""Peers, gate and expectations from the command line: the catalogue, one-line usage errors (exit 2), and
expectations turning a failure into expected-fail (not gating) and a pass into unexpected-pass."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance import expectations
from conformance.peers import CATALOGUE

MUTANT = "mutant:offset-overflow-badly-keeps-offset"  # breaks OFFSET-4


def mqtck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=300)


def expect_file(tmp_path: Path, rid: str, **override: str) -> Path:
    entry = {"id": rid, "reason": "reviewed", "source": "Upstream.java method", "repro": "mqtck conform ..."}
    entry.update(override)
    body = "".join(f'{k} = "{v}"\n' for k, v in entry.items())
    path = tmp_path / "impl-1.0.toml"
    path.write_text(f'implementation = "impl"\nversion = "1.0"\n\n[[expected]]\n{body}')
    return path


def test_peer_list_names_both_brokers() -> None:
    result = mqtck("peer", "list")
    assert result.returncode == 0
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert names == list(CATALOGUE) and "rocketmq-4.9.7" in names and "rocketmq-5.5.0" in names
    kinds = {line.split("\t")[0]: line.split("\t")[1] for line in result.stdout.splitlines()}
    assert {kinds[n] for n in ("java-client-4.9.8", "java-lite-pull-4.9.8", "go-client-2.1.2",
                               "cpp-client-0.4.4")} == {"client"}


def test_a_client_peer_is_a_command_of_the_client_check(tmp_path: Path) -> None:
    """The C++ client needs its PyPI package in this Python: without it the gate says where it runs; with it,
    the command runs the subject module with HOME in the given directory."""
    import importlib.util

    from conformance.peers import PeerError, peer_info
    from conformance.peers.clients import client_command

    info = peer_info("cpp-client-0.4.4")
    if importlib.util.find_spec("rocketmq") is None:
        with pytest.raises(PeerError, match="interop-remoting tox env"):
            client_command(info, tmp_path / "home")
        result = mqtck("gate", "cpp-client-0.4.4")
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 2, result.stderr
        assert "needs the PyPI package rocketmq==0.4.4" in result.stderr
    else:
        command = client_command(info, tmp_path / "home")
        assert command.startswith(f"HOME={tmp_path / 'home'} ") and "rocketmq_cpp_push" in command
    with pytest.raises(PeerError, match="is not a client peer"):
        client_command(peer_info("rocketmq-4.9.7"), tmp_path / "home")


@pytest.mark.parametrize(("args", "says"), [
    (("gate", "rocketmq-9.9.9"),
     "unknown peer 'rocketmq-9.9.9'; known: cpp-client-0.4.4, go-client-2.1.2, go-client-v5-5.1.2, "
     "java-client-4.9.8, java-client-v5-5.2.0, java-lite-pull-4.9.8, java-pulsar-client-4.0.7, "
     "java-strategies-4.9.8, pulsar-4.0.7, python-client-v5-5.1.2, python-pulsar-client-3.13, rocketmq-4.9.7, "
     "rocketmq-5.5.0, rocketmq-proxy-5.5.0"),
    (("peer", "run", "java-strategies-4.9.8"), "is not a broker and cannot be served"),
    (("peer", "run", "java-client-4.9.8"), "is not a broker and cannot be served"),
    (("peer", "install", "cpp-client-0.4.4"), "comes from PyPI, not Maven Central"),
    (("peer", "install", "python-pulsar-client-3.13"), "the dev extra installs it"),
    (("peer", "run", "java-pulsar-client-4.0.7"), "is not a broker and cannot be served"),
    (("gate", "java-pulsar-client-4.0.7", "--only", "FLOW-7"), "a Pulsar client gate runs its one round trip"),
    (("gate", "java-client-4.9.8", "--only", "CCLIENT-1"), "a client gate runs every scenario"),
    (("record", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--trace", "t.jsonl"),
     "the name server does not accept connections"),
    (("record", "--listen", "nowhere", "--upstream", "127.0.0.1:1", "--trace", "t.jsonl"), "expected HOST:PORT"),
    (("peer", "run", "nope"), "unknown peer 'nope'"),
    (("peer", "run", "rocketmq-4.9.7", "--listen", "10.1.2.3:9876"), "peers bind loopback only"),
    (("peer", "run", "rocketmq-4.9.7", "--listen", "127.0.0.1:http"), "expected 127.0.0.1:PORT"),
])
def test_bad_peer_input_is_one_line_exit_2(args: tuple[str, ...], says: str) -> None:
    result = mqtck(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr


#: The MUSTs a bundled expectations file may list: each a reviewed change of the real system (the reason in the
#: file says which), added here on purpose. Everything else listed must be a SHOULD.
REVIEWED_MUST_DEVIATIONS = {"rocketmq-4.9.7": {"OFFSET-7"},
                            "rocketmq-5.5.0": {"QOFF-12", "QOFF-13", "CGRP-4", "CGRP-5", "PACK-3", "PACK-5",
                                               "REVIVE-7", "POP-13"},
                            # The broker inside the proxy: the same reviewed changes, as the file's reasons say.
                            "rocketmq-proxy-5.5.0": {"QOFF-12", "CGRP-4", "CGRP-5", "PACK-3", "PACK-5", "REVIVE-7"},
                            "java-client-4.9.8": set(), "go-client-2.1.2": set(), "cpp-client-0.4.4": set(),
                            "go-client-v5-5.1.2": set(),
                            "pulsar-4.0.7": {"FLOW-4", "FLOW-6"}}


def test_bundled_expectations_load_and_list_only_reviewed_musts() -> None:
    from conformance import spec

    reqs = spec.requirements()
    for name, reviewed in REVIEWED_MUST_DEVIATIONS.items():
        loaded = expectations.load(name)
        assert loaded.entries, name
        musts = {rid for rid in loaded.entries if reqs[rid].level == "MUST"}
        assert musts == reviewed, f"{name}: MUST deviations {sorted(musts)}, reviewed {sorted(reviewed)}"


@pytest.mark.parametrize(("override", "says"), [
    ({"id": "NOPE-1"}, "id 'NOPE-1' is not a requirement"),
    ({"reason": ""}, "field 'reason' is required"),
])
def test_bad_expectations_are_usage_errors(tmp_path: Path, override: dict[str, str], says: str) -> None:
    path = expect_file(tmp_path, "OFFSET-4", **override)
    result = mqtck("conform", "--only", "OFFSET-1", "--expect", str(path), "--report-dir", str(tmp_path))
    assert result.returncode == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_expected_fail_does_not_gate_and_unexpected_pass_is_reported(tmp_path: Path) -> None:
    path = expect_file(tmp_path, "OFFSET-4")
    broken = mqtck("conform", "--target", MUTANT, "--only", "OFFSET-4", "--report-dir", str(tmp_path / "a"))
    assert broken.returncode == 1, "without the expectation the fault gates"
    expected = mqtck("conform", "--target", MUTANT, "--only", "OFFSET-4", "--expect", str(path),
                     "--implementation", "impl-1.0", "--report-dir", str(tmp_path / "b"))
    assert expected.returncode == 0, expected.stdout + expected.stderr
    doc = json.loads((tmp_path / "b" / "latest" / "summary.json").read_text())
    row = next(r for r in doc["requirements"] if r["id"] == "OFFSET-4")
    assert row["status"] == "expected-fail" and row["expectation"]["reason"] == "reviewed"
    assert doc["implementation"] == "impl-1.0" and doc["expectations"] == "impl-1.0"
    suite = ET.parse(tmp_path / "b" / "latest" / "junit.xml").getroot()
    assert suite.get("failures") == "0"
    healthy = mqtck("conform", "--only", "OFFSET-4", "--expect", str(path), "--report-dir", str(tmp_path / "c"))
    assert healthy.returncode == 0 and "UNEXPECTED PASS" in healthy.stdout
    doc = json.loads((tmp_path / "c" / "latest" / "summary.json").read_text())
    assert next(r for r in doc["requirements"] if r["id"] == "OFFSET-4")["status"] == "unexpected-pass"


def test_an_intermittent_deviation_that_passes_is_a_pass_not_a_stale_entry(tmp_path: Path) -> None:
    """A race shown in some runs only (``intermittent = true``): its pass keeps the entry and tells no one to remove it;
    its failure is still an expected fail; a non-boolean flag is a usage error naming the field."""
    path = expect_file(tmp_path, "OFFSET-4")
    path.write_text(path.read_text() + "intermittent = true\n")
    healthy = mqtck("conform", "--only", "OFFSET-4", "--expect", str(path), "--report-dir", str(tmp_path / "a"))
    assert healthy.returncode == 0 and "UNEXPECTED PASS" not in healthy.stdout and "NOT SHOWN" in healthy.stdout
    doc = json.loads((tmp_path / "a" / "latest" / "summary.json").read_text())
    row = next(r for r in doc["requirements"] if r["id"] == "OFFSET-4")
    assert row["status"] == "pass" and row["expectation"]["intermittent"] is True
    broken = mqtck("conform", "--target", MUTANT, "--only", "OFFSET-4", "--expect", str(path),
                   "--report-dir", str(tmp_path / "b"))
    assert broken.returncode == 0
    doc = json.loads((tmp_path / "b" / "latest" / "summary.json").read_text())
    assert next(r for r in doc["requirements"] if r["id"] == "OFFSET-4")["status"] == "expected-fail"
    path.write_text(path.read_text().replace("intermittent = true", 'intermittent = "yes"'))
    bad = mqtck("conform", "--only", "OFFSET-4", "--expect", str(path), "--report-dir", str(tmp_path / "c"))
    assert bad.returncode == 2 and "field 'intermittent' must be true or false" in bad.stderr


def test_profile_strict_gates_its_shoulds() -> None:
    """A failed INPUT-4 (SHOULD, profile strict) does not gate by default and gates when the run opts in."""
    from conformance import report, spec

    profile = spec.requirements()["INPUT-4"].profile
    v = report.Verdict("INPUT-4", "SHOULD", "INPUT", "", "", "pull", "fail", profile=profile)
    assert report.exit_code([v]) == 0 and report.exit_code([v], ["strict"]) == 1


def test_maven_errors_are_one_clean_line() -> None:
    """What `mqtck peer install` / `gate` print when Maven cannot resolve: its first error, without colour codes."""
    from conformance.peers.maven import _first_error

    coloured = "[INFO] x\n\x1b[1;31m[ERROR]\x1b[0m No plugin found for prefix 'dependency' -> [Help 1]\n[ERROR] next"
    assert _first_error(coloured) == "No plugin found for prefix 'dependency' -> [Help 1]"
    assert _first_error("[ERROR] [0m Could not transfer artifact") == "Could not transfer artifact"
    assert _first_error("") == "no output"


def test_a_build_tools_failure_is_one_line_naming_the_step() -> None:
    """javac, go build and Maven fail through one runner (conformance.peers.build): the step, then the tool's first
    error line (stderr before stdout), or how long it was given."""
    from conformance.peers import PeerError
    from conformance.peers.build import run_build
    from conformance.peers.maven import _first_error

    fails = "import sys; print('[INFO] resolving'); print('x.go:3: undefined: y', file=sys.stderr); sys.exit(1)"
    with pytest.raises(PeerError, match=r"^go build of the subject failed: x.go:3: undefined: y$"):
        run_build([sys.executable, "-c", fails], step="go build of the subject", timeout_s=30)
    maven = "import sys; print('[INFO] x'); print('[ERROR] Could not transfer artifact'); sys.exit(1)"
    with pytest.raises(PeerError, match=r"^Maven's resolution of a failed: Could not transfer artifact$"):
        run_build([sys.executable, "-c", maven], step="Maven's resolution of a", timeout_s=30, first_error=_first_error)
    with pytest.raises(PeerError, match=r"^javac of b took more than 0.5 s$"):
        run_build([sys.executable, "-c", "import time; time.sleep(5)"], step="javac of b", timeout_s=0.5)
    with pytest.raises(PeerError, match=r"failed: no output$"):
        run_build([sys.executable, "-c", "raise SystemExit(3)"], step="c", timeout_s=30)
    run_build([sys.executable, "-c", "print('ok')"], step="d", timeout_s=30)


def test_failures_are_printed_last_above_the_verdict(tmp_path: Path, capsys) -> None:
    """A CI log is read from its tail: the FAIL lines follow every reviewed expected fail and every deviation a
    passing test noticed (report.NOTICED), just above the verdict."""
    from rich.console import Console

    from conformance.commands.conform import _print_table

    def row(rid: str, status: str, outcome: str = "failed") -> dict:
        return {"id": rid, "family": rid.split("-")[0], "level": "MUST", "status": status, "sentence": f"{rid} holds",
                "expectation": {"reason": f"{rid} reviewed"},
                "tests": [{"nodeid": f"t.py::test_{rid}", "outcome": outcome, "summary": "boom"}]}

    doc = {"target": "x", "verdict": "fail", "duration_s": 1.0, "expectations": "x",
           "requirements": [row("D-1", "error", "error"), row("A-1", "fail"), row("B-1", "expected-fail"),
                            row("C-1", "unexpected-pass")],
           "observations": {"pop.lost_wakeups": ["answered [late]"]}}
    _print_table(Console(width=200), doc, tmp_path)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    error = next(i for i, ln in enumerate(lines) if "ERROR D-1" in ln)
    assert "not judged, a test's setup failed: D-1 holds" in lines[error] and "test_D-1: boom" in lines[error + 1]
    expected = ["EXPECTED FAIL B-1", "UNEXPECTED PASS C-1", "NOTICED POP-12", "ERROR D-1", "FAIL A-1"]
    marks = [next((m for m in expected if m in ln), None) for ln in lines]
    assert [m for m in marks if m] == expected
    assert any(ln.endswith("wake-up: answered [late]") for ln in lines), "a recorded deviation is printed as it is"
    verdict = next(i for i, ln in enumerate(lines) if ln.startswith("verdict: FAIL"))
    assert "test_A-1: boom" in lines[verdict - 1]


def test_the_html_report_shows_what_passing_tests_noticed() -> None:
    """A deviation a passing test tolerated (report.NOTICED) is in the HTML report too, not only on the console and
    in summary.json: a reader of the report must not take the pass for the whole story."""
    from conformance import report

    doc = {"target": "x", "verdict": "pass", "counts": {"pass": 1}, "tests": {"total": 1, "failed": 0},
           "capabilities": [], "requirements": [], "observations": {"pop.lost_wakeups": ["answered <late>"]}}
    page = report.html(doc)
    assert '<h2 id="noticed">' in page
    assert "POP-12: a held pop missed a matching arrival" in page and "answered &lt;late&gt;" in page
    assert '<h2 id="noticed">' not in report.html({**doc, "observations": {}})


def test_a_single_file_java_program_is_compiled_once_into_the_peer_cache(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The Java subjects, the strategy driver and the probes run compiled (conformance/peers/java.py): the first
    call compiles, later calls reuse the classes, an edited source compiles anew, and a compile error is one line
    naming the program and javac's first error."""
    from conformance.peers import PeerError
    from conformance.peers.java import java_program

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "Hello.java"
    source.write_text('public class Hello { public static void main(String[] a) { System.out.println("hi " + a[0]); }'
                      "\n  static class Inner {} }\n")
    program = java_program(source, [], "the greeting")
    assert program[0] == "-cp" and program[2] == "Hello"
    classes = Path(program[1])
    assert {p.name for p in classes.iterdir()} == {"Hello.class", "Hello$Inner.class"}
    run = subprocess.run(["java", *program, "there"], capture_output=True, text=True, timeout=60)
    assert run.stdout == "hi there\n"
    compiled_at = (classes / "Hello.class").stat().st_mtime_ns
    assert java_program(source, [], "the greeting") == program
    assert (classes / "Hello.class").stat().st_mtime_ns == compiled_at, "the second call compiles nothing"
    assert [p.name for p in classes.parent.iterdir()] == [classes.name], "no staging directory is left behind"
    source.write_text(source.read_text().replace("hi ", "hello "))
    edited = java_program(source, [], "the greeting")
    assert edited[1] != program[1]
    source.write_text("public class Hello { void f() { int x = ; } }\n")
    with pytest.raises(PeerError, match=r"^javac of the greeting \(Hello.java\) failed: .*Hello.java:1: error"):
        java_program(source, [], "the greeting")


def test_peer_ports_are_drawn_below_the_ephemeral_range_so_a_restart_can_bind_them_again() -> None:
    from conformance.peers.rocketmq import free_port, listen_ports, port_free

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = listen_ports()
    assert ports.stop <= low and len(ports) > 1_000, "no outgoing connection takes a port of this range"
    for _ in range(20):
        port = free_port(neighbours=(-2, 1))
        assert port - 2 in ports and port + 1 in ports
        assert port_free("127.0.0.1", port) and port_free("127.0.0.1", port - 2) and port_free("127.0.0.1", port + 1)
