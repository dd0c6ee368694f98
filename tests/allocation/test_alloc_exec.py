"""The exec path with real subprocesses: the sample plug-ins, programs that break the protocol, the
published JSON Schema, and pipelining."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from conformance.cli import main
from conformance.strategy.declaration import Declaration
from conformance.strategy.execproc import ExecStrategyUnderTest
from conformance.strategy.model import Outcome, Request
from conformance.strategy.protocol import RequestEncoder, encode_response
from conformance.strategy.scenario import Scenario, scenarios
from reference.allocation import MessageQueue, strategy_class

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "fixtures" / "allocation" / "plugins"
SCHEMA = json.loads((ROOT / "fixtures" / "allocation" / "exec-protocol.schema.json").read_text("utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
MISBEHAVING = Path(__file__).with_name("misbehaving_strategy.py")
PYTHON = sys.executable


def _plugin(name: str) -> str:
    return f"{PYTHON} {PLUGINS / name}"


@pytest.mark.req("ALLOC-18", "ALLOC-10", "ALLOC-11")
def test_the_correct_sample_plugin_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", "--exec", _plugin("custom_strategy.py"), "--balance-bound", "1",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {p["name"]: p["status"] for p in report["properties"]}["balance"] == "pass"


@pytest.mark.req("ALLOC-18", "ALLOC-10")
def test_the_broken_sample_plugin_fails_with_a_shrunk_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    # A generous shrink clock: the minimal example must not depend on how loaded the machine is.
    argv = ["strategy", "check", "--exec", _plugin("broken_strategy.py"), "--property", "partition", "--json",
            "--shrink-seconds", "120"]
    assert main(argv) == 1
    (partition,) = json.loads(capsys.readouterr().out)["properties"]
    scenario = partition["counterexample"]["scenario"]
    hosts = [cid.split("@")[0] for cid in scenario["cidAll"]]
    assert len(hosts) == 2 and hosts[0] == hosts[1], "shrunk to two consumers on one host"
    assert len(scenario["mqAll"]) == 1


@pytest.mark.req("ALLOC-18")
@pytest.mark.parametrize(
    "mode, reason",
    [
        ("crash", "exited with code 3 before answering request #1"),
        ("crash-later", "exited with code 3 before answering request #3"),
        ("hang", "did not answer request #1"),
        ("not-json", "answer to request #1"),
        ("bad-queue", "'queueId' must be an integer"),
        ("chatty", 'exactly one of "result" or "error"'),
    ],
)
def test_a_program_that_breaks_the_protocol_exits_2_with_one_line(mode, reason, capsys) -> None:
    argv = ["strategy", "check", "--exec", f"{PYTHON} {MISBEHAVING} {mode}", "--timeout", "0.5"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err
    assert "currentCID=" in err, "the request is named"
    if mode == "crash":
        assert "boom" in err, "the program's last stderr line explains the crash"


def test_a_program_that_cannot_start_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", "--exec", str(ROOT / "no-such-program")]) == 2
    assert "exited with code 127" in capsys.readouterr().err


@pytest.mark.req("ALLOC-12")
def test_a_program_that_tosses_coins_is_not_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["strategy", "check", "--exec", f"{PYTHON} {MISBEHAVING} coin", "--property", "determinism"]
    assert main(argv) == 1
    assert "answered differently" in capsys.readouterr().out


@pytest.mark.req("ALLOC-18")
@settings(max_examples=25, suppress_health_check=list(HealthCheck))
@given(scenarios(Declaration()))
def test_requests_and_answers_match_the_published_schema(scenario: Scenario) -> None:
    encoder = RequestEncoder()
    strategy = strategy_class("averagely")()
    for cid in scenario.asked:
        request = json.loads(encoder.encode(scenario.request(cid)))
        VALIDATOR.validate(request)
        try:
            outcome = Outcome(queues=tuple(strategy.allocate("g", cid, list(scenario.mq_all), list(scenario.cid_all))))
        except Exception as exc:
            outcome = Outcome(error=str(exc))
        VALIDATOR.validate(json.loads(encode_response(outcome)))


def test_the_schema_rejects_malformed_messages() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for bad in ({"result": [{"topic": "T", "brokerName": "b"}]}, {"status": "ok"}, {"result": [], "error": "x"},
                {"consumerGroup": "g", "currentCID": "c", "mqAll": [], "cidAll": []}):
        with pytest.raises(jsonschema.ValidationError):
            VALIDATOR.validate(bad)


def test_large_pipelined_batches_do_not_deadlock() -> None:
    """Far more than a pipe buffer each way: the writer must read answers while it writes."""
    mq_all = tuple(MessageQueue("TopicWithAVeryLongNameForBigRequests", f"broker-{b}", q)
                   for b in "abc" for q in range(21))
    cid_all = tuple(f"10.0.0.{i}@{1000 + i}" for i in range(40))
    requests = [Request("g", cid_all[i % 40], mq_all, cid_all) for i in range(2000)]
    served = ExecStrategyUnderTest([PYTHON, "-m", "conformance.strategy.serve", "by_circle"])
    try:
        outcomes = served.allocate_many(requests)
    finally:
        served.close()
    assert len(outcomes) == 2000
    assert sum(len(o.queues) for o in outcomes[:40]) == len(mq_all)


@pytest.mark.req("ALLOC-18")
def test_mqtck_strategy_serve_answers_requests_and_bad_lines() -> None:
    import subprocess

    request = {"consumerGroup": "g", "currentCID": "c2", "cidAll": ["c1", "c2"], "params": {},
               "mqAll": [{"topic": "T", "brokerName": "b", "queueId": i} for i in range(3)]}
    lines = json.dumps(request) + "\n" + '{"currentCID": 7}\n'
    done = subprocess.run([PYTHON, "-m", "conformance.cli", "strategy", "serve", "averagely"], input=lines,
                          capture_output=True, text=True, timeout=60, check=True)
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first == {"result": [{"topic": "T", "brokerName": "b", "queueId": 2}]}
    assert second["error"].startswith("bad request: ")
