"""The control channel (``conformance.targets.control``): its HTTP contract on both sides, the ``?control=``
target option, and the reference runner's restart / kill / expire behind ``mqtck broker --remoting --control``."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.targets.control import ControlClient, ControlError, check_description, serve_control
from conformance.targets.http import UnreachableTarget
from conformance.targets.launch import launch_broker
from conformance.targets.reference import ReferenceTarget
from conformance.targets.registry import open_target, parse_target, target_capabilities

LAYOUT = {"commitlog_segment_bytes": 65536, "consumequeue_segment_units": 1000}
PREVIOUS = {"longPollingEnable": True, "deleteWhen": "04", "fileReservedTime": 72, "diskMaxUsedSpaceRatio": 75}


class FakeControl:
    def __init__(self, capabilities: list[str] | None = None, fail: str | None = None) -> None:
        self.capabilities = ["restart", "retention_expire", "store_layout"] if capabilities is None else capabilities
        self.fail = fail
        self.calls: list[Any] = []

    def describe(self) -> dict[str, Any]:
        return {"implementation": "fake 1.0", "capabilities": self.capabilities, "store": LAYOUT}

    def restart(self, kill: bool) -> None:
        self.calls.append(("restart", kill))
        if self.fail:
            raise RuntimeError(self.fail)

    def expire_and_clean(self) -> int:
        self.calls.append("expire")
        return 3

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("configure", settings))
        return {name: PREVIOUS[name] for name in settings}

    def manual_delete(self) -> None:
        self.calls.append("manual")

    def run_retention(self) -> None:
        self.calls.append("clean run")

    def tear_and_restart(self, commit_log_offset: int) -> None:
        self.calls.append(("torn", commit_log_offset))

    def race_pull(self, topic: str, queue_id: int, sends: list[tuple[bytes, str | None]]) -> None:
        self.calls.append(("race", topic, queue_id, sends))

    def advance(self, ms: int) -> tuple[int, int]:
        self.calls.append(("advance", ms))
        return 1_000 + ms, 1 if ms else 0

    def trace_since(self, start: int) -> tuple[list[dict[str, Any]], int, int]:
        self.calls.append(("trace", start))
        rows = [{"event": "SEND", "n": i} for i in range(5)]
        first = max(start, 2)  # rows 0 and 1 were dropped
        return rows[first:], first, len(rows)


@pytest.fixture
def fake():  # type: ignore[no-untyped-def]
    servers = []

    def start(**kw: Any) -> tuple[FakeControl, str]:
        control = FakeControl(**kw)
        server = serve_control(control)
        servers.append(server)
        return control, server.address

    yield start
    for server in servers:
        server.stop()


def test_both_sides_of_the_contract(fake) -> None:  # type: ignore[no-untyped-def]
    control, address = fake()
    assert address.startswith("127.0.0.1:")
    client = ControlClient(address)
    offer = client.describe()
    assert (offer.implementation, offer.capabilities) == ("fake 1.0", frozenset(control.capabilities))
    assert (offer.commitlog_segment_bytes, offer.consumequeue_segment_units) == (65536, 1000)
    client.restart(kill=True)
    client.restart(kill=False)
    assert client.expire() == 3
    assert control.calls == [("restart", True), ("restart", False), "expire"]
    assert httpx.post(f"http://{address}/restart", json={"kill": True}).json() == {"ok": True}
    assert httpx.post(f"http://{address}/retention/expire").json() == {"ok": True, "deleted_commitlog_segments": 3}


def test_settings_manual_delete_and_trace_both_sides(fake) -> None:  # type: ignore[no-untyped-def]
    control, address = fake()
    client = ControlClient(address)
    assert client.configure({"longPollingEnable": False, "deleteWhen": "05;17"}) == {
        "longPollingEnable": True, "deleteWhen": "04"}
    client.manual_delete()
    client.tear_and_restart(4096)
    assert client.trace(3) == ([{"event": "SEND", "n": 3}, {"event": "SEND", "n": 4}], 5)
    assert client.trace(1 << 40) == ([], 5)
    with pytest.raises(ControlError, match="rows 0..1 were dropped before they were read"):
        client.trace(0)
    assert control.calls[:3] == [("configure", {"longPollingEnable": False, "deleteWhen": "05;17"}), "manual",
                                 ("torn", 4096)]
    assert client.advance(2_500) == (3_500, 1)
    client.race_pull("T", 2, [(b"\x00raced", "A"), (b"", None)])
    assert control.calls[-1] == ("race", "T", 2, [(b"\x00raced", "A"), (b"", None)])
    assert httpx.post(f"http://{address}/clock/advance", json={"ms": 0}).json() == {
        "ok": True, "now_ms": 1_000, "answered": 0}
    client.run_retention()
    assert control.calls[-1] == "clean run"
    assert httpx.post(f"http://{address}/retention/run").json() == {"ok": True}


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        (None, "settings: must be a non-empty object"),
        ({}, "settings: must be a non-empty object"),
        ({"brokerName": "x"}, "settings.brokerName: not a setting this channel changes"),
        ({"longPollingEnable": "false"}, "settings.longPollingEnable: must be true or false"),
        ({"deleteWhen": "4pm"}, "settings.deleteWhen: must be hours 00-23 joined by ';'"),
        ({"deleteWhen": "24"}, "settings.deleteWhen: must be hours 00-23"),
        ({"fileReservedTime": -1}, "settings.fileReservedTime: must be an integer >= 0"),
        ({"fileReservedTime": True}, "settings.fileReservedTime: must be an integer >= 0"),
        ({"diskMaxUsedSpaceRatio": 5}, "settings.diskMaxUsedSpaceRatio: must be an integer in [10, 95]"),
    ],
)
def test_bad_settings_are_refused_by_name(fake, settings, error) -> None:  # type: ignore[no-untyped-def]
    control, address = fake()
    r = httpx.post(f"http://{address}/config", json={} if settings is None else {"settings": settings})
    assert r.status_code == 400 and r.json()["error"].startswith(error), r.json()
    assert control.calls == []


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "error"),
    [
        ("GET", "/trace?from=-1", None, 400, "from: must be an integer >= 0"),
        ("POST", "/restart/torn", {"commit_log_offset": -5}, 400, "commit_log_offset: must be an integer >= 0"),
        ("POST", "/restart/torn", {}, 400, "commit_log_offset: must be an integer >= 0"),
        ("POST", "/restart", {"kill": "yes"}, 400, "kill: must be true or false"),
        ("POST", "/restart", [1], 400, "body: must be a JSON object"),
        ("POST", "/nowhere", {}, 404, "no such operation"),
        ("POST", "/clock/advance", {"ms": -1}, 400, "ms: must be an integer in [0, "),
        ("POST", "/clock/advance", {"ms": 1.5}, 400, "ms: must be an integer in [0, "),
        ("POST", "/clock/advance", {}, 400, "ms: must be an integer in [0, "),
        ("POST", "/race/pull", {"queue_id": 0, "sends": [{"body": ""}]}, 400, "topic: must be a non-empty string"),
        ("POST", "/race/pull", {"topic": "T", "queue_id": -1, "sends": []}, 400, "queue_id: must be an integer >= 0"),
        ("POST", "/race/pull", {"topic": "T", "queue_id": 0, "sends": []}, 400, "sends: must be a list of 1 to 32"),
        ("POST", "/race/pull", {"topic": "T", "queue_id": 0, "sends": [{"body": "%%"}]}, 400,
         "sends[0].body: must be base64 text"),
        ("POST", "/race/pull", {"topic": "T", "queue_id": 0, "sends": [{"body": "", "tags": 5}]}, 400,
         "sends[0].tags: must be a string or null"),
        ("GET", "/restart", None, 404, "no such resource"),
    ],
)
def test_bad_requests_get_one_line_errors(fake, method, path, body, status, error) -> None:  # type: ignore[no-untyped-def]
    control, address = fake()
    r = httpx.request(method, f"http://{address}{path}", json=body)
    assert r.status_code == status and error in r.json()["error"] and "\n" not in r.json()["error"]
    assert control.calls == []


def test_a_failed_operation_is_a_500_and_a_control_error(fake) -> None:  # type: ignore[no-untyped-def]
    _, address = fake(fail="the broker did not come back\nin 60 s")
    r = httpx.post(f"http://{address}/restart", json={"kill": False})
    assert r.status_code == 500
    assert r.json() == {"error": "restart failed: RuntimeError: the broker did not come back in 60 s"}
    with pytest.raises(ControlError, match="POST /restart: 500 restart failed"):
        ControlClient(address).restart(kill=False)


def test_unreachable_control_is_a_control_error() -> None:
    with pytest.raises(ControlError, match="control channel 127.0.0.1:9"):
        ControlClient("127.0.0.1:9").describe()


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "JSON object"),
        ({"capabilities": []}, "implementation"),
        ({"implementation": "x", "capabilities": "restart"}, "capabilities"),
        ({"implementation": "x", "capabilities": [], "store": {"commitlog_segment_bytes": 0}}, "store.commitlog"),
        ({"implementation": "x", "capabilities": ["store_layout"]}, "store: store_layout is offered"),
        ({"implementation": "x", "capabilities": [], "registry": {"channel_scan_interval_ms": 0}},
         "registry.channel_scan_interval_ms"),
        ({"implementation": "x", "capabilities": [], "registry": []}, "registry: must be an object"),
        ({"implementation": "x", "capabilities": [], "store": {"disk_used_ratio": 2}}, "store.disk_used_ratio"),
        ({"implementation": "x", "capabilities": [], "store": {"clean_interval_ms": 0}}, "store.clean_interval_ms"),
    ],
)
def test_descriptions_are_checked(doc, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=field):
        check_description(doc)


def test_a_control_cannot_grant_other_capabilities() -> None:
    offer = check_description({"implementation": "x", "capabilities": ["restart", "clock_control", "pop", "alloc"]})
    assert offer.capabilities == {"restart", "clock_control"}


def test_parse_control_option() -> None:
    for text in ("remoting://127.0.0.1:9876?control=127.0.0.1:4000", "remoting://127.0.0.1:9876/?control=127.0.0.1:4000"):
        spec = parse_target(text)
        assert (spec.kind, spec.arg, spec.options) == ("remoting", "127.0.0.1:9876", {"control": "127.0.0.1:4000"})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("remoting://127.0.0.1:9876?control=nope", "control address 'nope'"),
        ("remoting://127.0.0.1:9876?control=127.0.0.1:99999", "control address '127.0.0.1:99999'"),
        ("remoting://127.0.0.1:9876?control=", "control address ''"),
        ("remoting://127.0.0.1:9876?clock=1", "only option is one control"),
        ("remoting://127.0.0.1:9876?control=a:1&control=a:2", "only option is one control"),
    ],
)
def test_bad_control_options_are_refused(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_target(text)


# -- the reference runner ------------------------------------------------------------------------------------
@pytest.fixture
def runner(tmp_path: Path):  # type: ignore[no-untyped-def]
    server = launch_broker("remoting", tmp_path / "data", "--control", "--segment-bytes", "65536")
    yield server
    err = server.stop()
    assert "Traceback" not in err, err


def test_runner_advertises_its_control(runner) -> None:  # type: ignore[no-untyped-def]
    assert runner.url.startswith(f"remoting://{runner.address}?control=127.0.0.1:")
    caps = target_capabilities(runner.url)
    assert {"restart", "kill_restart", "retention_expire", "store_layout", "pull", "broker_config", "manual_delete",
            "trace"} <= caps
    assert "retention_control" in caps, "a clean run on request (POST /retention/run)"
    assert "clock_control" not in caps, "on real time"
    target = open_target(runner.url, "")
    try:
        layout = target.store_layout()
        assert (layout.commitlog_segment_bytes, layout.consumequeue_segment_units) == (65536, 300_000)
        assert layout.clean_interval_ms == 10_000 and 0 <= (layout.disk_used_ratio or 0) <= 1
        assert target.channel_expiry() == (120_000, 10_000), "RocketMQ's housekeeping defaults"
    finally:
        target.close()


def test_runner_changes_settings_at_run_time_and_serves_its_trace(runner) -> None:  # type: ignore[no-untyped-def]
    """The reference runner's POST /config answers the values it replaced and a second change puts them back;
    a refused setting changes nothing; the trace holds this target's rows, with its own names."""
    target = open_target(runner.url, "")
    try:
        before = target.configure({"longPollingEnable": False, "fileReservedTime": 0})
        assert before == {"longPollingEnable": True, "fileReservedTime": 72}
        assert target.configure(before) == {"longPollingEnable": False, "fileReservedTime": 0}
        with pytest.raises(ControlError, match="settings.deleteWhen"):
            target.configure({"deleteWhen": "25"})
        assert target.configure({"deleteWhen": "04"}) == {"deleteWhen": "04"}
        target.request_manual_delete()
        target.create_topic("TRC", 1)
        sent = target.send("TRC", 0, b"traced", "A")
        rows = target.trace_rows()
        assert [(r["event"], r["topic"], r["offset"]) for r in rows if r["event"] == "SEND"] == [("SEND", "TRC", 0)]
        # A torn restart at an offset where no record starts is refused before anything is killed.
        assert sent.commit_log_offset is not None
        with pytest.raises(ControlError, match="no record starts there"):
            target.restart_torn(sent.commit_log_offset + 1)
        assert target.send("TRC", 0, b"still serving", "A").queue_offset == 1
        assert target.configure({"longPollingEnable": True}) == {"longPollingEnable": True}
        target.configure({"fileReservedTime": 5})
        target.restart()
        assert target.configure({"fileReservedTime": 72}) == {"fileReservedTime": 5}, "settings outlive a restart"
    finally:
        target.close()


class AppendsFirstAfterRecovery:
    """The runner's target, but the first append after a torn restart is "the broker's own" record in another
    topic, as RocketMQ 5.5.0's revive log was once under CI's load; ``stale_record`` makes ``record_at`` answer
    what a broker that kept the torn record would (its store time before the restart)."""

    def __init__(self, target: Any, stale_record: bool = False) -> None:
        self._target, self._stale = target, stale_record
        self.own: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def restart_torn(self, commit_log_offset: int) -> None:
        self._target.restart_torn(commit_log_offset)
        self._target.create_topic("OWN", 1)

    def send(self, topic: str, queue_id: int, body: bytes, tags: str) -> Any:
        if body == b"after the tear" and self.own is None:
            self.own = self._target.send("OWN", 0, b"the broker's own", "A")
        return self._target.send(topic, queue_id, body, tags)

    def record_at(self, commit_log_offset: int) -> Any:
        record = self._target.record_at(commit_log_offset)
        return dataclasses.replace(record, store_timestamp_ms=0) if self._stale and record else record


@pytest.mark.req("STORE-6")
def test_the_brokers_own_first_append_after_a_tear_passes_and_a_record_from_before_fails(  # type: ignore[no-untyped-def]
        runner, tmp_path: Path) -> None:
    """STORE-6 over the wire follows the commit log with ``record_at`` (VIEW_MESSAGE_BY_ID) when the test's next
    send is not the first append after recovery; the record there must be a new one."""
    from conformance.suite.test_store_wire_conformance import test_recovery_cuts_the_log_at_a_torn_record as store_6

    target = open_target(runner.url, "")
    try:
        own_first = AppendsFirstAfterRecovery(target)
        store_6(own_first)
        assert own_first.own is not None, "the broker's own record went first"
        mine = target.record_at(own_first.own.commit_log_offset)
        assert mine.topic.endswith("OWN") and mine.msg_id == own_first.own.msg_id, mine
        assert target.record_at(own_first.own.commit_log_offset + 1) is None, "no record starts there"
    finally:
        target.close()
    second = launch_broker("remoting", tmp_path / "second", "--control", "--segment-bytes", "65536")
    target = open_target(second.url, "")
    try:
        with pytest.raises(AssertionError, match="was not appended after the restart"):
            store_6(AppendsFirstAfterRecovery(target, stale_record=True))
    finally:
        target.close()
        assert "Traceback" not in second.stop()


@pytest.mark.req("LPOLL-3", "LPOLL-4")
def test_a_runner_on_simulated_time_offers_its_clock_and_holds_are_timed_exactly(tmp_path: Path) -> None:
    """``--sim-clock`` with ``--control``: the clock moves only through the channel, which stops at the instant
    a held pull is answered, so the hold measured over the wire is the in-process reference's to the
    millisecond: woken by a send 3.2 s into the hold, and answered by the hold service at its deadline."""
    server = launch_broker("remoting", tmp_path / "data", "--control", "--sim-clock", "--segment-bytes", "65536")
    local = ReferenceTarget(str(tmp_path / "local"))
    wire = open_target(server.url, "")
    try:
        assert "clock_control" in wire.capabilities
        holds = []
        for target in (wire, local):
            target.create_topic("SIM", 2)
            woken = target.start_pull("G", "SIM", 0, 0, suspend_ms=15_000)
            target.advance(3_200)
            target.send("SIM", 0, b"wake", "A")
            timed_out = target.start_pull("G", "SIM", 1, 0, suspend_ms=7_000)
            holds.append((woken.result().held_ms, timed_out.result().held_ms, timed_out.result().code))
        assert holds[0] == holds[1], f"over the wire {holds[0]}, in-process {holds[1]}"
        assert holds[0][0] == 3_200 and 7_000 <= holds[0][1] <= 7_000 + 5_000
    finally:
        wire.close()
        local.close()
        err = server.stop()
    assert "Traceback" not in err, err


@pytest.mark.req("RETAIN-1", "RETAIN-7")
def test_a_clean_run_on_request_keeps_young_messages_over_the_wire_as_in_process(tmp_path: Path) -> None:
    """``retention_control`` through the channel (``POST /retention/run``): a clean run now keeps messages
    younger than fileReservedTime and, 73 h later, deletes the closed segments; the min offsets read over the
    wire are the in-process reference's, run with the runner's segment sizes. Bodies of about a seventh of a
    segment put the same messages in each segment on both, whatever their headers and properties add."""
    server = launch_broker("remoting", tmp_path / "data", "--control", "--sim-clock", "--segment-bytes", "65536")
    wire = open_target(server.url, "")
    local = ReferenceTarget(str(tmp_path / "local"), layout=wire.store_layout())
    try:
        assert "retention_control" in wire.capabilities
        mins = []
        for target in (wire, local):
            target.create_topic("RET", 1)
            for i in range(40):
                target.send("RET", 0, bytes([i]) * 9_000, "A")
            target.run_retention()
            young = target.min_max("RET", 0)
            target.advance(73 * 3_600_000)
            target.run_retention()
            mins.append((young, target.min_max("RET", 0)))
        assert mins[0] == mins[1], f"over the wire {mins[0]}, in-process {mins[1]}"
        (young, old) = mins[0]
        assert young == (0, 40), "young messages stay (RETAIN-1)"
        assert 0 < old[0] < old[1] == 40, "the closed segments go and the min offset rises (RETAIN-7)"
    finally:
        wire.close()
        local.close()
        err = server.stop()
    assert "Traceback" not in err, err


def test_kill_loses_recent_commits_and_a_clean_restart_keeps_them(runner) -> None:  # type: ignore[no-untyped-def]
    """Consumer offsets are persisted every 5 s and at shutdown: a commit just made survives a clean restart,
    not a kill; messages survive both; the registry and held pulls do not survive either."""
    target = open_target(runner.url, "")
    try:
        target.create_topic("K", 1)
        target.send("K", 0, b"m0")
        target.heartbeat("c1", "client-1", "G", {"K": "*"})
        held = target.start_pull("G", "K", 0, 1, suspend_ms=20_000)
        target.commit_offset("G", "K", 0, 1)
        target.restart()
        assert target.query_offset("G", "K", 0) == ("SUCCESS", 1)
        assert target.consumer_ids("G") == [], "the registry is not persisted"
        with pytest.raises(ConnectionError):
            held.result()
        target.commit_offset("G", "K", 0, 0)
        target.restart(kill=True)
        assert target.query_offset("G", "K", 0) == ("SUCCESS", 1), "the commit since the last persist is lost"
        assert [m.body for m in target.start_pull("G", "K", 0, 0).result().messages] == [b"m0"]
    finally:
        target.close()


def test_unreachable_control_of_a_live_name_server_is_a_usage_error(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", f"remoting://{runner.address}?control=127.0.0.1:9",
         "--report-dir", str(tmp_path)], capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2 and "control channel 127.0.0.1:9" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    with pytest.raises(UnreachableTarget):
        target_capabilities(f"remoting://{runner.address}?control=127.0.0.1:9")


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (["--remoting", "127.0.0.1:0", "--mutant", "nope"], "--mutant: unknown seeded fault 'nope'; broker faults:"),
        (["--remoting", "127.0.0.1:0", "--mutant", "client-pulls-dropped-queue"], "the client, not of the broker"),
        (["--remoting", "127.0.0.1:0", "--mutant", "alloc-circle-starts-at-second"], "allocation strategies"),
        (["--http", "127.0.0.1:0", "--control"], "--control needs --remoting"),
        (["--stdio", "--mutant", "hold-ignore-deadline"], "--mutant needs --remoting"),
        (["--remoting", "127.0.0.1:0", "--clean-interval-ms", "5"], "--clean-interval-ms must be >= 100"),
        (["--remoting", "127.0.0.1:0", "--sim-clock"], "--sim-clock needs --http or --remoting with --control"),
    ],
)
def test_runner_usage_errors(flags: list[str], error: str, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "conformance.cli", "broker", *flags, "--data-dir", str(tmp_path / "d")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and error in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
