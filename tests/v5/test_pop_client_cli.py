"""The POP client check's command line and the v5 client peers' entries, without starting a client: bad input is
exit 2 and one line naming the option, a v5 peer's gate says where it runs when its package is missing, and the
catalogue names the three official clients (the gates themselves are in tests/peers and the interop-v5 env)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.peers import CATALOGUE, PeerError, peer_info
from conformance.peers.clients_v5 import V5_SUBJECTS, is_v5, python_client_installed, v5_client_command


def mqtck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_catalogue_has_the_three_v5_clients() -> None:
    assert set(V5_SUBJECTS) <= set(CATALOGUE)
    for name in V5_SUBJECTS:
        info = peer_info(name)
        assert info.kind == "client" and is_v5(info) and info.title
    assert not is_v5(peer_info("java-client-4.9.8"))


@pytest.mark.parametrize(("args", "says"), [
    (("conform", "--client", "true", "--client-protocol", "grpc", "--client-scenarios", "rebalance"),
     "--client-scenarios: unknown scenario(s) rebalance for --client-protocol grpc"),
    (("conform", "--client", "true", "--client-protocol", "grpc", "--client-duration-s", "5"),
     "--client-duration-s and --rebalance-grace-s are the remoting check's"),
    (("conform", "--client", "no-such-program-here", "--client-protocol", "grpc"),
     "--client: command 'no-such-program-here' is not on PATH"),
    (("peer", "install", "python-client-v5-5.1.2"), "comes from PyPI"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    result = mqtck(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_python_client_gate_says_where_it_runs(tmp_path: Path) -> None:
    """Without its package (every env but interop-v5) the gate is exit 2 naming the tox env; with it, the command
    runs the subject module with HOME in the given directory."""
    info = peer_info("python-client-v5-5.1.2")
    if not python_client_installed():
        with pytest.raises(PeerError, match="interop-v5 tox env"):
            v5_client_command(info, tmp_path / "home")
        result = mqtck("gate", "python-client-v5-5.1.2")
        assert result.returncode == 2 and "needs the PyPI package rocketmq-python-client==5.1.2" in result.stderr
    else:
        command = v5_client_command(info, tmp_path / "home")
        assert command.startswith(f"HOME={tmp_path / 'home'} ") and "rocketmq_v5_consumer" in command
