"""The ``grpc://`` target's address and its reading of v5 answers: no server needed.

Against a real deployment it runs in tests/peers/test_rocketmq_proxy.py (the Apache proxy) and through
``mqtck gate rocketmq-proxy-5.5.0``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.targets.grpc import RECEIVE_OUTCOMES, settings_error, target_error
from conformance.targets.registry import parse_target


def test_parse_grpc_target() -> None:
    spec = parse_target("grpc://127.0.0.1:8081?remoting=127.0.0.1:9876&control=127.0.0.1:7000")
    assert (spec.kind, spec.arg) == ("grpc", "127.0.0.1:8081")
    assert spec.options == {"remoting": "127.0.0.1:9876", "control": "127.0.0.1:7000"}


@pytest.mark.parametrize(("text", "says"), [
    ("grpc://127.0.0.1:8081", "needs remoting=HOST:PORT"),
    ("grpc://127.0.0.1?remoting=127.0.0.1:9876", "not HOST:PORT"),
    ("grpc://127.0.0.1:8081?remoting=nameserver", "remoting address 'nameserver' is not HOST:PORT"),
    ("grpc://127.0.0.1:8081?remoting=127.0.0.1:9876&remoting=127.0.0.1:9877", "options are one remoting"),
    ("grpc://127.0.0.1:8081?remoting=127.0.0.1:9876&namesrv=127.0.0.1:1", "got 'namesrv=127.0.0.1:1'"),
])
def test_bad_grpc_targets_are_refused_with_the_rule(text: str, says: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_target(text)
    assert says in str(err.value)


def test_a_bad_grpc_target_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "grpc://127.0.0.1:8081", "--report-dir",
         str(tmp_path)], capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2 and "remoting=HOST:PORT" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_receive_outcomes_use_the_pop_codes_names() -> None:
    """The suite's PopReply codes are the remoting POP answer's: MESSAGE_NOT_FOUND is a poll that found nothing."""
    assert RECEIVE_OUTCOMES == {"OK": "SUCCESS", "MESSAGE_NOT_FOUND": "POLLING_TIMEOUT",
                                "TOO_MANY_REQUESTS": "POLLING_FULL"}


def test_refusals_name_the_field() -> None:
    # The reference's front writes "field: rule"; the Apache proxy writes prose, and the code says the field.
    err = target_error("BAD_REQUEST", "maxMsgNums: must be in [1, 32]")
    assert (err.code, err.field, err.rule) == ("BAD_REQUEST", "maxMsgNums", "must be in [1, 32]")
    err = target_error("ILLEGAL_INVISIBLE_TIME", "invisible_duration: must be in [1000, 43200000] ms, got 0")
    assert (err.code, err.field) == ("ILLEGAL_INVISIBLE_TIME", "invisibleTime"), "v5 field names, the suite's names"
    err = target_error("ILLEGAL_INVISIBLE_TIME", "the invisibleTime is too small. min is 1000")
    assert (err.code, err.field) == ("ILLEGAL_INVISIBLE_TIME", "invisibleTime")
    err = target_error("CONSUMER_GROUP_NOT_FOUND", "group not found")
    assert (err.code, err.field) == ("SUBSCRIPTION_GROUP_NOT_EXIST", "consumerGroup")
    assert target_error("INVALID_RECEIPT_HANDLE", "bad").field == "receiptHandle"
    err = settings_error("INVALID_ARGUMENT", "The specified group: x y, contains illegal characters")
    assert (err.code, err.field) == ("INVALID_ARGUMENT", "consumerGroup")
