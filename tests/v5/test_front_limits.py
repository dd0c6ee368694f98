"""The gRPC front's receive limits are settings: the proxy's defaults unless set, and set as the real proxy peer is
run (1 s invisibility, holds of 0-60 s) the suite's short invisible times and zero poll times are served."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.peers import rocketmq_proxy
from reference.net.grpc import codes
from reference.net.grpc.limits import PROXY_DEFAULTS, ReceiveLimits
from reference.net.grpc.receive import poll_time_ms
from tests.v5.front import Front, messages, receive_request, run, status_of

#: The limits the proxy peer runs with (conformance/peers/rocketmq_proxy.py).
PEER = ReceiveLimits(min_invisible_ms=rocketmq_proxy.MIN_INVISIBLE_MS, min_hold_ms=rocketmq_proxy.MIN_LONG_POLLING_MS,
                     max_hold_ms=rocketmq_proxy.MAX_LONG_POLLING_MS)


@pytest.mark.req("GRPC-11")
def test_the_defaults_are_the_proxys() -> None:
    assert (PROXY_DEFAULTS.min_invisible_ms, PROXY_DEFAULTS.min_hold_ms, PROXY_DEFAULTS.max_hold_ms) == (
        10_000, 5_000, 20_000)


@pytest.mark.req("GRPC-11")
@pytest.mark.parametrize(("asked", "default", "peer"), [(0, 5_000, 0), (2_000, 5_000, 2_000),
                                                        (45_000, 20_000, 45_000), (90_000, 20_000, 60_000)])
def test_the_hold_is_clamped_to_the_limits(asked: int, default: int, peer: int) -> None:
    request = receive_request("G", "T")
    request.long_polling_timeout.FromMilliseconds(asked)
    assert poll_time_ms(request, None, 3_000) == default
    assert poll_time_ms(request, None, 3_000, PEER) == peer


@pytest.mark.req("GRPC-11")
def test_with_no_minimum_hold_a_short_deadline_is_served_not_refused() -> None:
    request = receive_request("G", "T", poll_s=0)
    assert poll_time_ms(request, 1_000, 3_000, PEER) == 0
    with pytest.raises(Exception, match="deadline"):
        poll_time_ms(request, 1_000, 3_000)  # the default's 5 s minimum does not fit in 1 s


@pytest.mark.req("GRPC-11")
def test_with_the_peers_limits_a_short_invisible_time_is_served_and_a_zero_poll_is_answered_at_once(
        tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        empty = await asyncio.wait_for(f.receive(receive_request("G", "T", invisible_s=2, poll_s=0)), 5.0)
        assert status_of(empty).code == codes.MESSAGE_NOT_FOUND  # no clock advance: never held
        await f.send("T", b"m")
        got = messages(await f.receive(receive_request("G", "T", invisible_s=2, poll_s=0)))
        assert [m.body for m in got] == [b"m"]
        assert got[0].system_properties.invisible_duration.ToMilliseconds() == 2_000

    run(tmp_path, scenario, limits=PEER)


@pytest.mark.req("GRPC-11")
def test_under_the_defaults_a_short_invisible_time_is_refused(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        refused = await f.receive(receive_request("G", "T", invisible_s=2))
        assert status_of(refused).code == codes.ILLEGAL_INVISIBLE_TIME
        assert status_of(refused).message.startswith("invisible_duration: must be in [10000, ")

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-11")
@pytest.mark.parametrize(("flags", "said"), [
    (["--remoting", "0", "--grpc-min-hold-ms", "0"], "--grpc-min-hold-ms needs --grpc"),
    (["--remoting", "0", "--grpc", "0", "--grpc-min-hold-ms", "30000"], "--grpc-min-hold-ms: must not exceed"),
    (["--remoting", "0", "--grpc", "0", "--grpc-min-invisible-ms", "-1"], "--grpc-min-invisible-ms: must not be"),
])
def test_a_limit_the_front_cannot_honour_is_a_usage_error_naming_its_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str) -> None:
    assert main(["broker", *flags, "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "d").exists()  # refused before the store opened


@pytest.mark.req("GRPC-11")
def test_conform_target_grpc_launches_the_reference_under_the_proxy_peers_limits() -> None:
    flags = dict(zip(rocketmq_proxy.REFERENCE_FLAGS[::2], rocketmq_proxy.REFERENCE_FLAGS[1::2], strict=True))
    assert flags == {"--grpc-min-invisible-ms": str(PEER.min_invisible_ms),
                     "--grpc-min-hold-ms": str(PEER.min_hold_ms), "--grpc-max-hold-ms": str(PEER.max_hold_ms)}
