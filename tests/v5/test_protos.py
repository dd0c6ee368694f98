"""The v5 stubs come from the pinned npm tarball, checked by its integrity, and carry the whole MessagingService."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.net.grpc import protos


def test_stubs_carry_every_messaging_service_rpc() -> None:
    stubs = protos.load()
    methods = {m.name for m in stubs.service.DESCRIPTOR.services_by_name["MessagingService"].methods}
    assert {"QueryRoute", "Heartbeat", "SendMessage", "QueryAssignment", "ReceiveMessage", "AckMessage",
            "ChangeInvisibleDuration", "ForwardMessageToDeadLetterQueue", "NotifyClientTermination",
            "Telemetry", "EndTransaction", "RecallMessage"} <= methods
    assert (protos.stubs_dir() / "SOURCE").read_text().startswith(protos.PROTO_ARTIFACT.url)


def test_a_tarball_that_fails_its_integrity_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    forged = protos.NpmArtifact(protos.PROTO_ARTIFACT.name, protos.PROTO_ARTIFACT.version, "sha512-AAAA")
    monkeypatch.setattr(protos, "PROTO_ARTIFACT", forged)
    with pytest.raises(protos.ProtoError, match="integrity mismatch"):
        protos.generate(tmp_path / "stubs")
    assert not (tmp_path / "stubs").exists()
