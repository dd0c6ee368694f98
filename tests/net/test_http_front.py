"""The HTTP front on a real loopback server: the API's shape, its errors, long polling, and the same
conformance verdicts through ``http://`` as in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_openapi_document_has_examples_links_and_no_422(http_broker) -> None:  # type: ignore[no-untyped-def]
    doc = http_broker("--sim-clock").http.get("/openapi.json").json()
    ops = {op["operationId"]: op for path in doc["paths"].values() for op in path.values()}
    assert {"createTopic", "sendMessage", "pullMessages", "queryConsumerOffset", "updateConsumerOffset",
            "heartbeat", "unregister", "consumerList", "notifications", "runRetention", "advanceClock",
            "allocate"} <= set(ops)
    assert all("422" not in op["responses"] for op in ops.values()), "refusals are documented as 400"
    assert ops["sendMessage"]["responses"]["201"]["links"]["PullIt"]["operationId"] == "pullMessages"
    assert doc["components"]["schemas"]["PullBody"]["properties"]["maxMsgNums"]["maximum"] == 1024


@pytest.mark.req("INPUT-1", "INPUT-2", "INPUT-3")
def test_refusals_are_json_naming_the_field_and_change_nothing(http_broker) -> None:  # type: ignore[no-untyped-def]
    http = http_broker("--sim-clock").http
    assert http.post("/topics", json={"topic": "T", "queues": 2}).status_code == 201
    cases = [
        ("POST", "/topics/T/queues/0/messages", {"body": "x", "tags": "a b"}, 400, "tags"),
        ("POST", "/topics/T/queues/7/messages", {"body": "x"}, 404, "queueId"),
        ("POST", "/topics/NOPE/queues/0/messages", {"body": "x"}, 404, "topic"),
        ("POST", "/topics/T/queues/0/pull", {"consumerGroup": "G", "queueOffset": -1}, 400, "queueOffset"),
        ("POST", "/topics/T/queues/0/pull", {"consumerGroup": "G", "queueOffset": True}, 400, "queueOffset"),
        ("POST", "/topics/T/queues/0/pull", {"consumerGroup": "G", "queueOffset": 0, "maxMsgNums": 0}, 400,
         "maxMsgNums"),
        ("POST", "/topics/T/queues/0/pull", {"consumerGroup": "G", "queueOffset": 0, "subscription": None}, 409,
         "subscription"),
        ("POST", "/topics/T/queues/0/pull", {"consumerGroup": "G", "queueOffset": 0, "bogus": 1}, 400, "bogus"),
        ("PUT", "/groups/G/offsets/T/0", {"offset": -3}, 400, "offset"),
        ("POST", "/consumers/heartbeat", {"connection": "c", "clientId": "", "consumers": {"G": {}}}, 400,
         "clientId"),
        ("POST", "/consumers/heartbeat", {"connection": "c", "clientId": "x",
                                          "consumers": {"G": {"subscriptions": {"T": {"expression": "||"}}}}}, 400,
         "consumers.G.subscriptions.T.expression"),
        ("POST", "/admin/clock/advance", {"ms": -1}, 400, "ms"),
        ("DELETE", "/topics", None, 405, "method"),
    ]
    for method, path, body, status, field in cases:
        r = http.request(method, path, json=body)
        assert r.status_code == status, (method, path, body, r.status_code, r.text)
        err = r.json()["error"]
        assert err["field"] == field and err["rule"] and err["code"], (path, body, err)
    r = http.post("/topics/T/queues/0/pull", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "body"
    assert http.get("/topics/T/queues/0/offsets").json()["maxOffset"] == 0, "a refused send stored nothing"
    assert http.get("/groups/G/offsets/T/0").json() == {"code": "SUCCESS", "offset": 0}, "nothing committed"
    assert http.get("/groups/G/consumers").json()["clientIds"] == []


@pytest.mark.req("LPOLL-2", "LPOLL-4")
def test_long_poll_is_a_long_request_woken_by_a_send(http_broker) -> None:  # type: ignore[no-untyped-def]
    import threading

    server = http_broker("--sim-clock")
    http = server.http
    http.post("/topics", json={"topic": "LP", "queues": 1})
    answer: dict = {}

    def pull() -> None:
        answer.update(http.post("/topics/LP/queues/0/pull",
                                json={"consumerGroup": "G", "queueOffset": 0, "suspendTimeoutMs": 15_000}).json())

    t = threading.Thread(target=pull)
    t.start()
    t.join(0.5)
    assert t.is_alive(), "a pull that found nothing must be held"
    http.post("/admin/clock/advance", json={"ms": 2_000})
    sent = http.post("/topics/LP/queues/0/messages", json={"body": "wake", "tags": "A"}).json()
    t.join(10)
    assert not t.is_alive() and answer["code"] == "SUCCESS" and answer["heldMs"] == 2_000
    assert [m["msgId"] for m in answer["messages"]] == [sent["msgId"]] and answer["messages"][0]["body"] == "wake"


def test_real_clock_server_has_no_clock_control(http_broker) -> None:  # type: ignore[no-untyped-def]
    http = http_broker().http
    caps = http.get("/capabilities").json()
    assert caps["clock"] == "real" and "clock_control" not in caps["capabilities"] and "pull" in caps["capabilities"]
    r = http.post("/admin/clock/advance", json={"ms": 5})
    assert r.status_code == 409 and r.json()["error"]["code"] == "CLOCK_NOT_CONTROLLABLE"


def _conform(target: str, report_dir: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", target, "--report-dir", str(report_dir),
         "--json"], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_http_target_gives_the_in_process_verdicts(http_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = http_broker("--sim-clock", "--segment-bytes", "65536")
    over_http = _conform(server.url, tmp_path / "http")
    in_process = _conform("reference", tmp_path / "ref")
    assert over_http["verdict"] == in_process["verdict"] == "pass"
    both = set(over_http["capabilities"]) & set(in_process["capabilities"])
    for h, r in zip(over_http["requirements"], in_process["requirements"], strict=True):
        assert h["id"] == r["id"]
        if r["capability"] in both or not r["capability"]:
            assert h["status"] == r["status"], (h["id"], h["status"], r["status"])


def test_unreachable_target_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "http://127.0.0.1:9", "--report-dir",
         str(tmp_path)], capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2 and "unreachable" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
