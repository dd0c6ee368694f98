"""One broker core behind two fronts: what is sent over remoting is received over gRPC and the other way round
(one store, one mapping of message ids, tags, keys and properties), and ``mqtck broker`` serves both."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import zlib
from pathlib import Path

import grpc
import pytest

from reference.broker.protocol import PullSysFlag
from reference.net.grpc import codes
from reference.net.remoting.message_codec import decode_records, encode_properties
from reference.net.remoting.server import LoopControl
from reference.rules.codes import ResponseCode
from tests.remoting.wire import WireClient
from tests.v5.front import D, Front, S, held, messages, receive_request, run, status_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.req("GRPC-10")
def test_a_message_sent_over_remoting_is_received_over_grpc_and_back(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        wire = await WireClient.connect(f.servers.broker_addr)
        try:
            await f.route("T")
            props = encode_properties({"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1", "mine": "v"})
            assert (await wire.send("T", 1, b"from remoting", props)).code == ResponseCode.SUCCESS
            (got,) = messages(await f.receive(receive_request("G", "T")))
            system = got.system_properties
            assert (got.body, system.message_id, system.tag, list(system.keys), dict(got.user_properties)) == (
                b"from remoting", "U1", "TagA", ["k1", "k2"], {"mine": "v"})
            assert system.queue_id == 1
            sent = await f.send("T", b"from grpc", tag="TagB", keys=["k3"], message_group="g1",
                                message_type=D.FIFO)
            assert sent.status.code == codes.OK
            queue = zlib.crc32(b"g1") % 4  # a FIFO message's queue: its group's hash
            pulled = await wire.pull("GP", "T", queue, int(queue == 1), sys_flag=PullSysFlag.SUBSCRIPTION)
            assert pulled.code == ResponseCode.SUCCESS
            (record,) = decode_records(pulled.body)
            assert (record.body, record.tags, record.keys, record.msg_id) == (
                b"from grpc", "TagB", "k3", sent.entries[0].message_id)
            assert record.properties["__SHARDINGKEY"] == "g1"
        finally:
            await wire.close()

    run(tmp_path, scenario)


def _mqtck(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


@pytest.mark.req("GRPC-10")
@pytest.mark.parametrize("beside", [("--remoting", "0"), ("--http", "0"), ()], ids=["remoting", "http", "alone"])
def test_mqtck_broker_serves_grpc_beside_another_front_on_one_store(tmp_path: Path, beside: tuple[str, ...]) -> None:
    process = _mqtck("broker", *beside, "--grpc", "0", "--data-dir", str(tmp_path / "b"))
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(2 if beside else 1)]
        assert all(line.startswith("mqtck broker: serving ") for line in lines), lines
        assert lines[-1].startswith("mqtck broker: serving grpc://127.0.0.1:")
        target = lines[-1].removeprefix("mqtck broker: serving grpc://")
        with grpc.insecure_channel(target) as channel:
            from tests.v5.front import STUBS

            stub = STUBS.grpc.MessagingServiceStub(channel)
            route = stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="T")),
                                    metadata=(("x-mq-client-id", "cli@1"),), timeout=10)
            assert route.status.code == codes.OK and len(route.message_queues) == 4
            assert route.message_queues[0].broker.endpoints.addresses[0].port == int(target.rsplit(":", 1)[1])
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err, err


@pytest.mark.parametrize(("args", "says"), [
    (("--grpc", "x"), "--grpc expects [HOST:]PORT"),
    (("--grpc", "70000"), "--grpc port must be in [0, 65535]"),
    (("--stdio", "--grpc", "0"), "--grpc serves beside --remoting or --http, not --stdio"),
])
def test_a_bad_grpc_flag_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    process = _mqtck("broker", *args, "--data-dir", str(tmp_path / "b"))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and err.strip().count("\n") == 0 and says in err, err


@pytest.mark.req("GRPC-10")
def test_a_simulated_clock_advance_stops_at_the_instant_a_held_grpc_receive_is_answered(tmp_path: Path) -> None:
    """The control channel's advance (``mqtck broker --remoting --control --grpc --sim-clock``) counts the gRPC
    front's late answers as the remoting front's, so a wire target times a held receive exactly."""

    async def scenario(f: Front) -> None:
        f.servers.fronts.append(f.front)  # as serve_remoting registers the fronts it starts
        control = LoopControl(f.servers, asyncio.get_running_loop())
        await f.route("T")
        start = f.clock.now_ms()
        task = await held(f, receive_request("G", "T", poll_s=5))
        now, answered = await asyncio.to_thread(control.advance, 60_000)
        assert (now - start, answered) == (5_000, 1)
        assert status_of(await task).code == codes.MESSAGE_NOT_FOUND

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-10")
def test_a_receive_held_across_a_broker_restart_ends_empty_and_the_new_broker_serves(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        f.servers.fronts.append(f.front)  # as serve_remoting registers the fronts it starts
        await f.route("T")
        task = await held(f, receive_request("G", "T", poll_s=20))
        f.servers.restart_broker()
        assert status_of(await task).code == codes.MESSAGE_NOT_FOUND
        assert (await f.send("T", b"after")).status.code == codes.OK
        assert [m.body for m in messages(await f.receive(receive_request("G", "T")))] == [b"after"]

    run(tmp_path, scenario)
