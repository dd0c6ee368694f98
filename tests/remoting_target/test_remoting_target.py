"""The ``remoting://`` conformance target against the reference's own remoting server, and the client it uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.targets import TargetError, remoting
from conformance.targets.registry import parse_target
from conformance.targets.remoting import RemotingTarget
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.rules.codes import ResponseCode, derive_status


def _conform(target: str, report_dir: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", target, "--report-dir", str(report_dir),
         "--json"], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_remoting_target_gives_the_in_process_verdicts(remoting_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every requirement the remoting target can test gets the verdict the in-process reference gets."""
    server = remoting_broker("--segment-bytes", "65536")
    over_wire = _conform(server.target, tmp_path / "remoting")
    in_process = _conform("reference", tmp_path / "ref")
    assert over_wire["verdict"] == in_process["verdict"] == "pass"
    assert "clock_control" not in over_wire["capabilities"]
    tested = 0
    for w, r in zip(over_wire["requirements"], in_process["requirements"], strict=True):
        assert w["id"] == r["id"]
        if w["status"] in ("pass", "fail") and r["status"] == "not-applicable":
            # Wire-only tests (REMOTING family: raw frames) cannot run in-process; over the wire they must pass.
            assert w["status"] == "pass", (w["id"], w["status"])
        elif w["status"] in ("pass", "fail"):
            tested += 1
            assert w["status"] == r["status"], (w["id"], w["status"], r["status"])
        elif w["status"] == "not-applicable":
            assert r["status"] in ("pass", "not-applicable"), (w["id"], r["status"])
    assert tested >= 15, f"only {tested} requirements were testable over remoting"


def test_unreachable_remoting_target_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "remoting://127.0.0.1:9", "--report-dir",
         str(tmp_path)], capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2 and "unreachable" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("text", ["remoting://", "remoting://host", "remoting://:9876", "remoting://h:port"])
def test_bad_remoting_targets_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="remoting://HOST:PORT"):
        parse_target(text)


def test_parse_remoting_target() -> None:
    spec = parse_target("remoting://127.0.0.1:9876/")
    assert (spec.kind, spec.arg) == ("remoting", "127.0.0.1:9876")


@pytest.mark.parametrize(
    ("code", "offset", "lo", "hi", "status"),
    [
        (ResponseCode.SUCCESS, 3, 0, 5, "FOUND"),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, 0, 0, 5, "NO_MATCHED_MESSAGE"),
        (ResponseCode.PULL_NOT_FOUND, 0, 0, 0, "NO_MESSAGE_IN_QUEUE"),
        (ResponseCode.PULL_OFFSET_MOVED, 7, 0, 0, "NO_MESSAGE_IN_QUEUE"),
        (ResponseCode.PULL_NOT_FOUND, 5, 0, 5, "OFFSET_OVERFLOW_ONE"),
        (ResponseCode.PULL_OFFSET_MOVED, 2, 4, 9, "OFFSET_TOO_SMALL"),
        (ResponseCode.PULL_OFFSET_MOVED, 12, 0, 9, "OFFSET_OVERFLOW_BADLY"),
        (ResponseCode.PULL_NOT_FOUND, 2, 0, 9, None),
    ],
)
def test_status_is_derived_from_code_and_bounds(code: int, offset: int, lo: int, hi: int, status: str | None) -> None:
    assert derive_status(code, offset, lo, hi) == status


def test_held_pull_is_answered_by_a_send_on_another_connection(remoting_broker) -> None:  # type: ignore[no-untyped-def]
    """The pipelined client keeps a held pull open while the same target sends on its data connection."""
    server = remoting_broker()
    target = RemotingTarget(server.namesrv)
    try:
        target.create_topic("T", 2)
        pending = target.start_pull("G", "T", 1, 0, suspend_ms=15_000)
        assert not pending.done()
        receipt = target.send("T", 1, b"wake", "A")
        reply = pending.result()
        assert reply.code == "SUCCESS" and [m.body for m in reply.messages] == [b"wake"]
        assert reply.messages[0].msg_id == receipt.msg_id and reply.held_ms < 15_000
        assert target.min_max("T", 1) == (0, 1)
    finally:
        target.close()


def test_client_records_notifications_and_fails_pending_requests_on_close(remoting_broker) -> None:  # type: ignore[no-untyped-def]
    server = remoting_broker()
    target = RemotingTarget(server.namesrv)
    try:
        target.create_topic("T", 1)
        target.heartbeat("c1", "one", "G", {"T": "*"})
        target.heartbeat("c2", "two", "G", {"T": "*"})
        client: RemotingClient = target._conns["c1"]  # noqa: SLF001 - the connection under test
        assert client.wait_server_request(lambda r: r.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 5.0)
        pending = target.start_pull("G", "T", 0, 0, suspend_ms=15_000)
        target._main.close()  # noqa: SLF001
        with pytest.raises(ConnectionError):
            pending.result()
    finally:
        target.close()


def test_pop_answer_infos_and_retry_marks_read_as_the_java_client_reads_them() -> None:
    from conformance.targets.remoting import _offset_info, retry_mark, wire_strategy_name

    assert _offset_info("0 1 5;1 0 7") == {("0", 1): [5], ("1", 0): [7]}
    assert _offset_info("0 2 3,4,9") == {("0", 2): [3, 4, 9]}
    assert _offset_info("") == {} and _offset_info("garbage") == {}
    assert [retry_mark(t) for t in ("T", "%RETRY%G_T", "%RETRY%G+T")] == ["0", "1", "2"]
    # RocketMQ's QueryAssignmentProcessor knows strategies by getName(); unknown names go as they are.
    assert wire_strategy_name("AllocateMessageQueueAveragely") == "AVG"
    assert wire_strategy_name("AllocateMessageQueueAveragelyByCircle") == "AVG_BY_CIRCLE"
    assert wire_strategy_name("NoSuchStrategy") == "NoSuchStrategy"


def test_handle_refusals_read_as_invalid_receipt_handle() -> None:
    from conformance.targets.remoting import handle_error

    no_message = RemotingCommand(ResponseCode.NO_MESSAGE, remark="offset is illegal")
    assert handle_error(no_message).code == "INVALID_RECEIPT_HANDLE"
    named = RemotingCommand(ResponseCode.SYSTEM_ERROR, remark="receiptHandle: malformed")
    assert (handle_error(named).code, handle_error(named).field) == ("INVALID_RECEIPT_HANDLE", "receiptHandle")
    other = RemotingCommand(ResponseCode.TOPIC_NOT_EXIST, remark="topic: no such topic")
    assert handle_error(other).code == "TOPIC_NOT_EXIST"


def test_the_reference_broker_serves_pop_over_remoting(remoting_broker) -> None:  # type: ignore[no-untyped-def]
    """The POP codes in RocketMQ 5's shapes: the handles a client builds from the answer are the ones the broker
    issued (an ack with each is accepted once), and a retried message carries its handle in POP_CK."""
    server = remoting_broker()
    target = RemotingTarget(server.namesrv)
    try:
        assert "pop" in target.capabilities
        target.create_topic("PT", 2)
        for q in (0, 1):
            target.send("PT", q, b"m%d" % q, "A")
        reply = target.pop("G", "PT", -1, 32, 60_000, 0).result()
        assert reply.code == "SUCCESS" and sorted(m.queue_id for m in reply.messages) == [0, 1]
        for m in reply.messages:
            assert m.handle.split(" ")[5] == target.broker_name and not m.retry
            target.ack("G", "PT", m.handle)
        with pytest.raises(TargetError) as err:
            target.ack("G", "PT", reply.messages[0].handle)
        assert err.value.code == "INVALID_RECEIPT_HANDLE"
        assert target.pop("G", "PT", -1, 32, 60_000, 0).result().code == "POLLING_TIMEOUT"
        client = RemotingClient(target.broker_addr)
        try:
            r = client.invoke(RequestCode.POP_MESSAGE, {"consumerGroup": "G", "topic": "PT", "queueId": "0"},
                              timeout_s=5)
            assert r.code == ResponseCode.INVALID_PARAMETER and r.remark.startswith("maxMsgNums:"), r
        finally:
            client.close()
    finally:
        target.close()


class _BusyThenOk:
    """A broker connection whose first answers are SYSTEM_BUSY with ``remark`` (its flow control), then SUCCESS."""

    def __init__(self, busy: int, remark: str) -> None:
        self.busy, self.remark, self.calls = busy, remark, 0

    def invoke(self, code: int, ext: dict, body: bytes = b"", timeout_s: float = 0) -> RemotingCommand:  # type: ignore[type-arg]
        self.calls += 1
        if self.calls <= self.busy:
            return RemotingCommand(code=ResponseCode.SYSTEM_BUSY, remark=self.remark)
        return RemotingCommand(code=ResponseCode.SUCCESS)


def test_a_request_refused_unrun_for_flow_control_is_sent_again_and_nothing_else_is(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """SYSTEM_BUSY for a request the broker never ran (a queue's fast-failure cleaning on a loaded machine) is sent
    again, as RocketMQ's clients do; any other SYSTEM_BUSY, and a refusal that keeps coming, is the answer."""
    monkeypatch.setattr(remoting, "BUSY_PAUSE_S", 0.0)
    busy = _BusyThenOk(2, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 201ms")
    assert RemotingTarget._invoke(busy, RequestCode.ACK_MESSAGE, {}).code == ResponseCode.SUCCESS and busy.calls == 3
    other = _BusyThenOk(1, "[PC_SYNCHRONIZED]broker busy")  # may have been run: never sent again
    assert RemotingTarget._invoke(other, RequestCode.ACK_MESSAGE, {}).code == ResponseCode.SYSTEM_BUSY
    assert other.calls == 1
    always = _BusyThenOk(99, "[REJECTREQUEST]system busy, start flow control for a while")
    assert RemotingTarget._invoke(always, RequestCode.ACK_MESSAGE, {}).code == ResponseCode.SYSTEM_BUSY
    assert always.calls == remoting.BUSY_ATTEMPTS
