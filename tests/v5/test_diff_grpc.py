"""``mqtck diff --against grpc``: the reference served over its gRPC front (under the proxy peer's receive limits,
as ``peer:rocketmq-proxy-5.5.0`` runs) is a diff target, started for the run and stopped after it. The control:
it agrees with the in-process reference on every step the grpc:// wire carries. ``members`` is left out here: a
gRPC pop registers its consumer through its Telemetry settings (GRPC-7, as the proxy does), which a pop in-process
does not, so the member lists differ by the wire; reference-over-gRPC against the proxy compares them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.req("GRPC-11", "POP-12")
def test_the_reference_over_grpc_agrees_with_itself_in_process(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "diff", "--target", "grpc", "--against",
                           "reference", "--examples", "4", "--max-steps", "5", "--without", "restart", "members",
                           "--report-dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "diff.json").read_text())
    assert summary["target"].startswith("grpc://") and "remoting=" in summary["target"]
    assert summary["sequences"] == 4 and not summary["diverged"]
    assert "the reference serves grpc://" in done.stderr


@pytest.mark.req("CGRP-4.clustering")
def test_two_grpc_targets_in_one_process_name_their_consumers_alike(tmp_path: Path) -> None:
    """Found by ``mqtck diff --target peer:rocketmq-proxy-5.5.0 --against grpc``: the consumers' client ids were
    numbered by a counter of the process, so the second target's first consumer was ``conformance-1`` and the
    members of a group differed between two brokers that agreed."""
    from conformance.peers.rocketmq_proxy import REFERENCE_FLAGS
    from conformance.targets.grpc import GrpcTarget
    from conformance.targets.launch import launch_broker

    server = launch_broker("grpc", tmp_path / "data", *REFERENCE_FLAGS)
    try:
        address, _, query = server.url.removeprefix("grpc://").partition("?remoting=")
        members = []
        for _ in range(2):
            target = GrpcTarget(address, query)
            try:
                target.create_topic("T", 1)
                assert target.pop("G", "T", -1, 32, 30_000, 0).result().code == "POLLING_TIMEOUT"
                members.append(target.consumer_ids("G"))
            finally:
                target.close()
        assert members[0] == members[1] == ["conformance-G-T"]
    finally:
        server.stop()


@pytest.mark.req("CGRP-4.clustering")
def test_a_consumer_keeps_its_client_id_through_a_restart_whatever_was_opened_between(tmp_path: Path) -> None:
    """Found by ``mqtck diff --target peer:rocketmq-proxy-5.5.0 --against grpc`` (seed 2, with restarts): client ids
    numbered by the sessions a target had opened named one consumer ``conformance-21`` on the proxy and
    ``conformance-20`` on the reference. A consumer is now named by its group and topic, kept through a restart
    as a v5 client keeps its client id when it reconnects."""
    from conformance.peers.rocketmq_proxy import REFERENCE_FLAGS
    from conformance.targets.grpc import GrpcTarget
    from conformance.targets.launch import launch_broker
    from conformance.targets.registry import parse_target

    server = launch_broker("grpc", tmp_path / "data", "--control", *REFERENCE_FLAGS)
    try:
        spec = parse_target(server.url)
        target = GrpcTarget(spec.arg, spec.options["remoting"], control=spec.options["control"])
        try:
            for topic in ("T", "U"):
                target.create_topic(topic, 1)
            assert target.pop("G", "T", -1, 32, 30_000, 0).result().code == "POLLING_TIMEOUT"
            target.restart()
            for topic in ("U", "T"):  # a new consumer first, then the first one again
                assert target.pop("G", topic, -1, 32, 30_000, 0).result().code == "POLLING_TIMEOUT"
            assert target.consumer_ids("G") == ["conformance-G-T", "conformance-G-U"]
        finally:
            target.close()
    finally:
        server.stop()


def test_the_served_reference_takes_the_expectations_reference_settings_and_refuses_one_it_cannot(
        tmp_path: Path) -> None:
    """Found by ``mqtck diff --target peer:rocketmq-proxy-5.5.0 --against grpc`` (seed 4): the served reference
    ignored the proxy's OFFSET-4 setting, and a pop after a commit past the end diverged at once. A setting with no
    ``mqtck broker`` flag is a usage error naming it, not silently dropped."""
    import contextlib

    from conformance.cliargs import UsageError
    from conformance.commands.diff import _serve_grpc_reference
    from conformance.targets.registry import open_target

    with contextlib.ExitStack() as stack:
        url = _serve_grpc_reference(stack, {"offset_overflow_to_max": True})
        target = open_target(url, str(tmp_path / "t"))
        stack.callback(target.close)
        target.create_topic("T", 1)
        target.send("T", 0, b"m", "A")
        reply = target.start_pull("G", "T", 0, 5).result()  # type: ignore[attr-defined]
        assert (reply.status, reply.next_begin_offset) == ("OFFSET_OVERFLOW_BADLY", 1)  # to the max, not back to 0
        with pytest.raises(UsageError, match="commit_log_segment_bytes=4096"):
            _serve_grpc_reference(stack, {"commit_log_segment_bytes": 4096})
