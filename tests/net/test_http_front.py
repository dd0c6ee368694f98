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
            "allocate", "popMessages", "ackMessage", "changeInvisibleTime", "queryAssignment", "sendBatch",
            "subscribePermits", "flowPermits", "permitConsumer", "dispatchedMessages", "ackPermitMessages",
            "redeliverUnacknowledged", "closePermitConsumer", "restartBroker"} <= set(ops)
    assert all("422" not in op["responses"] for op in ops.values()), "refusals are documented as 400"
    assert ops["sendMessage"]["responses"]["201"]["links"]["PullIt"]["operationId"] == "pullMessages"
    ack_link = ops["popMessages"]["responses"]["200"]["links"]["AckFirst"]
    assert ack_link["requestBody"]["receiptHandle"] == "$response.body#/messages/0/receiptHandle"
    assert ops["subscribePermits"]["responses"]["201"]["links"]["Flow"]["operationId"] == "flowPermits"
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
        # POP: an unknown queue or topic is 404, a bad field 400, a handle naming no delivery 409.
        ("POST", "/groups/G/topics/T/pop", {"queueId": 2}, 404, "queueId"),
        ("POST", "/groups/G/topics/NOPE/pop", {}, 404, "topic"),
        ("POST", "/groups/G/topics/T/pop", {"maxMsgNums": 33}, 400, "maxMsgNums"),
        ("POST", "/groups/G/topics/T/pop", {"invisibleTimeMs": 0}, 400, "invisibleTimeMs"),
        ("POST", "/groups/G/topics/T/ack", {"receiptHandle": "not a handle"}, 400, "receiptHandle"),
        ("POST", "/groups/G/topics/T/ack", {"receiptHandle": "0 1 60000 0 0 broker-a 0 0"}, 404, "consumerGroup"),
        ("GET", "/groups/G/topics/T/assignment?clientId=c1", None, 409, "consumerGroup"),
        ("GET", "/groups/G/topics/T/assignment?clientId=c1&strategy=nope", None, 400, "strategy"),
        # Permits: FLOW out of range carries the broker's INVALID_PERMITS; an unknown consumer is 404.
        ("POST", "/groups/S/topics/T/permit-consumers/c1/flow", {"messagePermits": 0}, 400, "messagePermits"),
        ("POST", "/groups/S/topics/T/permit-consumers/c1/flow", {"messagePermits": 5}, 404, "consumerName"),
        ("POST", "/groups/S/topics/T/permit-consumers", {"clientId": "c1", "queueId": 2}, 404, "queueId"),
        ("POST", "/topics/T/queues/0/batches", {"bodies": []}, 400, "bodies"),
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
    codes = {
        "flow": http.post("/groups/S/topics/T/permit-consumers/c1/flow", json={"messagePermits": 2**32}),
        "handle": http.post("/groups/G/topics/T/invisible-time", json={"receiptHandle": "", "invisibleTimeMs": 5}),
    }
    assert codes["flow"].json()["error"]["code"] == "INVALID_PERMITS", "the schema refuses with the broker's code"
    assert codes["handle"].json()["error"]["code"] == "INVALID_RECEIPT_HANDLE"
    http.post("/groups/G/topics/T/pop", json={"queueId": 0})  # G now pops T: its handles are checked
    r = http.post("/groups/G/topics/T/ack", json={"receiptHandle": "0 1 60000 0 0 broker-a 0 0"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "INVALID_RECEIPT_HANDLE", r.text


@pytest.mark.req("POP-6", "POP-12", "PACK-3")
def test_held_pop_sends_its_status_line_at_once_and_its_body_on_arrival(http_broker) -> None:  # type: ignore[no-untyped-def]
    import threading

    http = http_broker("--sim-clock").http
    http.post("/topics", json={"topic": "P", "queues": 1})
    body: dict = {}
    status_seen = threading.Event()

    def pop() -> None:
        with http.stream("POST", "/groups/G/topics/P/pop", json={"pollTimeMs": 20_000}) as r:
            body["status"] = r.status_code
            status_seen.set()
            body.update(json.loads(r.read()))

    t = threading.Thread(target=pop)
    t.start()
    assert status_seen.wait(10) and body["status"] == 200, "a held pop's status line comes at once"
    assert t.is_alive(), "its body waits for an arrival"
    http.post("/admin/clock/advance", json={"ms": 1_500})
    sent = http.post("/topics/P/queues/0/messages", json={"body": "wake"}).json()
    t.join(10)
    assert not t.is_alive() and body["code"] == "SUCCESS" and body["heldMs"] == 1_500
    (m,) = body["messages"]
    assert m["msgId"] == sent["msgId"] and m["topic"] == "P" and m["body"] == "wake"
    assert http.post("/groups/G/topics/P/ack", json={"receiptHandle": m["receiptHandle"]}).json() == {
        "msgId": sent["msgId"]}


@pytest.mark.req("REVIVE-6")
def test_restart_ends_held_requests_and_keeps_the_data(http_broker) -> None:  # type: ignore[no-untyped-def]
    import threading

    http = http_broker("--sim-clock").http
    http.post("/topics", json={"topic": "R", "queues": 1})
    sent = http.post("/topics/R/queues/0/messages", json={"body": "kept"}).json()
    (m,) = http.post("/groups/G/topics/R/pop", json={"invisibleTimeMs": 10_000}).json()["messages"]
    held: dict = {}

    def pull() -> None:
        r = http.post("/topics/R/queues/0/pull", json={"consumerGroup": "H", "queueOffset": 1,
                                                        "suspendTimeoutMs": 30_000})
        held.update(status=r.status_code, content=r.content)

    t = threading.Thread(target=pull)
    t.start()
    t.join(0.5)
    assert http.post("/admin/restart").json() == {"ok": True}
    t.join(10)
    assert held == {"status": 200, "content": b""}, "a held request ends, empty, when its broker goes away"
    assert http.post("/groups/G/topics/R/ack", json={"receiptHandle": m["receiptHandle"]}).json() == {
        "msgId": sent["msgId"]}, "a handle issued before the restart still acknowledges"
    assert http.get("/topics/R/queues/0/offsets").json()["maxOffset"] == 1


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
    short = http_broker("--short-polling").http.get("/capabilities").json()["capabilities"]
    assert "long_poll" not in short and "pull" in short, "with long polling off the front must not claim it"


def _conform(target: str, report_dir: Path, *args: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", target, "--report-dir", str(report_dir),
         "--json", *args], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _lacked(test: dict) -> set[str]:
    """The capabilities a not-applicable test's skip reason names."""
    return {c.strip() for c in test["summary"].rsplit("capability", 1)[-1].split(",")}


def test_http_target_gives_the_in_process_verdicts(http_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every requirement both targets can test has one status; the only differences are requirements
    whose every test needs a capability the HTTP front does not offer (client simulation, trace, ...). The server
    runs with its default segment size, as a user starts it: the tests size their data from its store layout."""
    server = http_broker("--sim-clock")
    over_http = _conform(server.url, tmp_path / "http")
    in_process = _conform("reference", tmp_path / "ref")
    assert over_http["verdict"] == in_process["verdict"] == "pass"
    only_in_process = set(in_process["capabilities"]) - set(over_http["capabilities"])
    assert {"pop", "flow_permits", "restart", "long_poll", "clock_control"} <= set(over_http["capabilities"])
    in_process_caps = set(in_process["capabilities"])
    for h, r in zip(over_http["requirements"], in_process["requirements"], strict=True):
        assert h["id"] == r["id"]
        if h["status"] == "partial" and r["status"] == "pass":  # a clause only the in-process target reaches
            for c in h["clauses"]:
                assert c["status"] == "pass" or _lacked({"summary": c["reason"]}) <= only_in_process, (h["id"], c)
            continue
        if h["status"] in ("not-applicable", "reference-only") and r["status"] != h["status"]:
            # Each test is not applicable over HTTP for lack of what only the in-process target has, or it lacks
            # something the in-process target lacks too (not applicable on both: it explains nothing).
            for t in h["tests"]:
                assert _lacked(t) <= only_in_process or not _lacked(t) <= in_process_caps, (h["id"], t)
            continue
        assert h["status"] == r["status"], (h["id"], h["status"], r["status"])
        if h["family"] in ("POP", "PACK", "REVIVE", "FLOW") and h["tests"] and h["status"] != "not-applicable":
            # (not applicable on both: a test of the remoting wire only, as REVIVE-1's reading of the revive log)
            assert h["status"] == "pass", (h["id"], h["status"])


def test_real_clock_server_passes_the_real_time_long_poll_tests(http_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = http_broker()
    doc = _conform(server.url, tmp_path / "rt", "--only", "LPOLL-1", "LPOLL-2", "LPOLL-3", "LPOLL-4", "LPOLL-5")
    assert doc["verdict"] == "pass" and "clock_control" not in doc["capabilities"]
    tests = {t["nodeid"].rsplit("::", 1)[-1]: t["outcome"] for r in doc["requirements"] for t in r["tests"]}
    real_time = {name: outcome for name, outcome in tests.items() if name.endswith("_in_real_time")}
    assert len(real_time) == 3 and set(real_time.values()) == {"passed"}, tests
    assert len(doc["observations"]["lpoll.wake_latency_ms"]) == 4, "real-time wake latencies reach the report"


def test_unreachable_target_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "http://127.0.0.1:9", "--report-dir",
         str(tmp_path)], capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2 and "unreachable" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
