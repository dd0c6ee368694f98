"""``mqtck record --protocol grpc``: the recording proxy in front of the reference's gRPC front, a real v5 channel
through it, and the trace rows it writes (conformance/record/grpc_wire.py)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from conformance.record.grpc_proxy import GrpcRecordingProxy
from conformance.record.grpc_wire import QUEUE_NOT_ON_WIRE, GrpcRecorder, handle_invisible_ms
from reference.clock import SimClock
from reference.net.grpc import codes
from reference.net.grpc.receive import DEFAULT_INVISIBLE_MS
from reference.trace import MemorySink, Trace
from tests.v5.front import STUBS, D, Front, S, messages, receive_now, receive_request, run

ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def recorded(f: Front) -> AsyncIterator[tuple[Front, GrpcRecorder, MemorySink]]:
    """``f`` with its stub replaced by one that goes through a recording proxy in front of ``f``'s gRPC front."""
    sink = MemorySink()
    recorder = GrpcRecorder(Trace(sink, "recorded", SimClock()), STUBS, "broker")
    proxy = GrpcRecordingProxy(("127.0.0.1", 0), f.front.address, recorder, STUBS)
    await proxy.start()
    channel = grpc.aio.insecure_channel(proxy.address)
    through = Front(f.clock, f.servers, f.front, STUBS.grpc.MessagingServiceStub(channel), f.client_id)
    try:
        yield through, recorder, sink
    finally:
        await channel.close()
        await proxy.close(0)


def rows(sink: MemorySink, event: str) -> list[dict[str, Any]]:
    return [r for r in sink.rows if r["event"] == event]


def test_routes_point_at_the_recorder_and_a_pop_cycle_is_recorded_as_the_brokers_view(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        async with recorded(f) as (p, recorder, sink):
            route = await p.route("T")
            proxy_host, proxy_port = route.message_queues[0].broker.endpoints.addresses[0].host, \
                route.message_queues[0].broker.endpoints.addresses[0].port
            assert f"{proxy_host}:{proxy_port}" != f"{f.front.address[0]}:{f.front.address[1]}"
            sent = [await p.send("T", b"m%d" % i, tag="a") for i in range(2)]
            assert all(s.status.code == codes.OK for s in sent)
            assert rows(sink, "SEND") == []  # the queue is not on the send's wire: held until a receive names it
            got = messages(await receive_now(p, receive_request("G", "T", batch=1, invisible_s=30)))
            assert len(got) == 1
            first = got[0].system_properties
            changed = await p.call("ChangeInvisibleDuration", S.ChangeInvisibleDurationRequest(
                group=D.Resource(name="G"), topic=D.Resource(name="T"), receipt_handle=first.receipt_handle,
                message_id=first.message_id, invisible_duration={"seconds": 60}))
            assert changed.status.code == codes.OK
            acked = await p.call("AckMessage", S.AckMessageRequest(
                group=D.Resource(name="G"), topic=D.Resource(name="T"),
                entries=[S.AckMessageEntry(message_id=first.message_id, receipt_handle=changed.receipt_handle)]))
            assert acked.status.code == codes.OK
            await p.call("NotifyClientTermination", S.NotifyClientTerminationRequest(group=D.Resource(name="G")))
            recorder.finish()
            broker = f.broker.config.broker_name
            sends = rows(sink, "SEND")
            assert [(r["msg_id"], r["queue_id"], r["offset"], r["broker"], r["tags"]) for r in sends][0] == (
                first.message_id, first.queue_id, first.queue_offset, broker, "a")
            assert sends[1]["queue_id"] == -1 and sends[1]["detail"] == QUEUE_NOT_ON_WIRE
            (pop,) = rows(sink, "POP")
            assert (pop["group"], pop["client_id"], pop["msg_id"], pop["handle"], pop["invisible_ms"]) == (
                "G", f.client_id, first.message_id, first.receipt_handle, 30_000)
            assert pop["reconsume_times"] == 0 and pop["source"] == f"broker:{broker}"
            (change,) = rows(sink, "CHANGE_INVISIBLE")
            assert (change["msg_id"], change["invisible_ms"]) == (first.message_id, 60_000)
            (ack,) = rows(sink, "ACK")
            assert (ack["msg_id"], ack["handle"], ack["status"]) == (first.message_id, changed.receipt_handle, "OK")
            (gone,) = rows(sink, "UNSUBSCRIBE")
            assert (gone["group"], gone["client_id"]) == ("G", f.client_id)

    run(tmp_path, scenario)



def test_an_auto_renew_receive_is_recorded_with_the_invisible_time_of_its_handle(tmp_path: Path) -> None:
    """A PushConsumer's ReceiveMessage names no invisible time (``auto_renew``: the server picks it). Its POP row
    carries the one its receipt handle was issued with, the reference's 60 s, not 0: the audit judges the
    redelivery of a killed push consumer's messages against it (the official Java client's recorded run)."""
    async def scenario(f: Front) -> None:
        async with recorded(f) as (p, recorder, sink):
            await p.route("T")
            assert (await p.send("T", b"pushed")).status.code == codes.OK
            request = receive_request("G", "T", batch=1, invisible_s=None)
            request.auto_renew = True
            (got,) = messages(await receive_now(p, request))
            (pop,) = rows(sink, "POP")
            assert (pop["handle"], pop["invisible_ms"]) == (got.system_properties.receipt_handle, DEFAULT_INVISIBLE_MS)
            assert handle_invisible_ms("not a broker handle") == 0

    run(tmp_path, scenario)


def test_a_refused_call_comes_back_with_the_upstreams_code_and_details(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        async with recorded(f) as (p, recorder, sink):
            bad = await p.call("AckMessage", S.AckMessageRequest(group=D.Resource(name="G"),
                                                                 topic=D.Resource(name="T")))
            direct = await f.call("AckMessage", S.AckMessageRequest(group=D.Resource(name="G"),
                                                                    topic=D.Resource(name="T")))
            assert (bad.status.code, bad.status.message) == (direct.status.code, direct.status.message)
            assert bad.status.code != codes.OK and rows(sink, "ACK") == []
            assert recorder.malformed == 0

    run(tmp_path, scenario)


@pytest.mark.parametrize("protocol", ["grpc"])
def test_record_refuses_an_upstream_that_is_not_listening(protocol: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import main

    assert main(["record", "--protocol", protocol, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
                 "--trace", str(tmp_path / "t.jsonl")]) == 2
    assert "the gRPC endpoint does not accept connections" in capsys.readouterr().err



def _mqtck(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def test_record_stopped_with_a_clients_telemetry_stream_open_ends_it_without_a_traceback(tmp_path: Path) -> None:
    """A real v5 client holds its Telemetry stream open as long as it runs, so ``mqtck record`` is stopped with
    streams open: the stream ends and the recorder exits 0 with nothing on stderr, where grpc's own cancellation at
    the server's stop printed a CancelledError traceback (seen with the official Java PushConsumer's recorded run,
    tests/peers/test_v5_recorded.py)."""
    broker = _mqtck("broker", "--grpc", "127.0.0.1:0", "--data-dir", str(tmp_path / "b"))
    record: subprocess.Popen[str] | None = None
    try:
        assert broker.stdout is not None
        upstream = broker.stdout.readline().strip().rsplit("grpc://", 1)[1]
        record = _mqtck("record", "--protocol", "grpc", "--listen", "127.0.0.1:0", "--upstream", upstream,
                        "--trace", str(tmp_path / "t.jsonl"))
        assert record.stdout is not None
        listen = record.stdout.readline().split()[1].removeprefix("grpc://")
        settings = S.TelemetryCommand(settings=D.Settings(
            client_type=D.PUSH_CONSUMER, subscription=D.Subscription(
                group=D.Resource(name="G"), subscriptions=[D.SubscriptionEntry(topic=D.Resource(name="T"))])))
        commands: queue.Queue[Any] = queue.Queue()
        commands.put(settings)
        with grpc.insecure_channel(listen) as channel:
            stream = STUBS.grpc.MessagingServiceStub(channel).Telemetry(iter(commands.get, None),
                                                                        metadata=(("x-mq-client-id", "c@1"),))
            next(stream)  # the settings answered: the stream is open through the recorder
            record.send_signal(signal.SIGTERM)
            with contextlib.suppress(grpc.RpcError):  # ended by the stop, as a status or as the end of the stream
                for _ in stream:
                    pass
            commands.put(None)
        _, err = record.communicate(timeout=30)
    finally:
        for process in (record, broker):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.communicate(timeout=30)
    assert record.returncode == 0 and "Traceback" not in err, err
