"""What a newcomer's mistakes get from ``mqtck``: one line on stderr and exit 2 (or the SIGPIPE code when the
reader of stdout went away), never a traceback; and ``mqtck --version``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.cli import BROKEN_PIPE_EXIT
from conformance.progress import EVERY_ENV


def mqtck(*args: str, timeout: float = 120, progress_every_s: float | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if progress_every_s is not None:
        env[EVERY_ENV] = str(progress_every_s)
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def one_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture()
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_version_is_the_installed_distribution_s() -> None:
    from importlib.metadata import version

    result = mqtck("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"mqtck {version('mqtck')}")


@pytest.mark.parametrize("command", [
    ("conform", "--only", "PULL-1"),
    ("audit", "trace.jsonl"),
    ("diff", "--target", "reference", "--examples", "1"),
    ("gate", "rocketmq-4.9.7"),
])
def test_a_report_dir_that_is_a_file_is_a_usage_error(tmp_path: Path, command: tuple[str, ...]) -> None:
    a_file = tmp_path / "reports"
    a_file.write_text("not a directory")
    one_line(mqtck(*command, "--report-dir", str(a_file)), "--report-dir", "is a file, not a directory")


@pytest.mark.parametrize("transport", ["--remoting", "--http"])
def test_a_busy_port_is_a_usage_error_naming_the_option(tmp_path: Path, busy_port: int, transport: str) -> None:
    result = mqtck("broker", transport, f"127.0.0.1:{busy_port}", "--data-dir", str(tmp_path / "d"))
    one_line(result, transport, f"127.0.0.1:{busy_port}", "address already in use")


def test_a_busy_broker_port_is_a_usage_error_naming_the_option(tmp_path: Path, busy_port: int) -> None:
    result = mqtck("broker", "--remoting", "127.0.0.1:0", "--broker-port", str(busy_port), "--data-dir",
                   str(tmp_path / "d"))
    one_line(result, "--broker-port", "address already in use")


@pytest.mark.parametrize(("command", "says"), [
    ("no-such-client-program --flag", "'no-such-client-program' is not on PATH"),
    ("./no/such/client.sh", "'./no/such/client.sh' is not an executable file"),
    ("GROUP=g 'unterminated", "is not a shell command"),
])
def test_a_client_command_that_cannot_start_is_a_usage_error(tmp_path: Path, command: str, says: str) -> None:
    one_line(mqtck("conform", "--client", command, "--report-dir", str(tmp_path)), "--client", says)


def test_a_closed_pipe_ends_quietly_with_the_sigpipe_code(tmp_path: Path) -> None:
    """``mqtck conform --json | head``: the reader has gone before the JSON is written; no traceback follows,
    and the reports are written all the same."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "conform", "--only", "PULL-1", "--json",
                             "--report-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == BROKEN_PIPE_EXIT, stderr.decode()[-2000:]
    assert b"Traceback" not in stderr and b"BrokenPipeError" not in stderr, stderr.decode()[-2000:]
    assert json.loads((tmp_path / "latest" / "summary.json").read_text())["verdict"] == "pass"


def test_what_tox_leaves_in_the_checkout_is_ignored() -> None:
    """tox 4 writes a ``.venv`` *file* (the path of its last environment) into the checkout: git ignores it."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not applicable: not a git checkout")
    for name in (".venv", "reports/x"):
        assert subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=root).returncode == 0, name


def test_without_a_terminal_long_commands_print_plain_progress_lines(tmp_path: Path) -> None:
    """tox and CI have no TTY: a rich bar draws nothing there, so conform says where it is in plain lines."""
    result = mqtck("conform", "--only", "PULL-1", "LPOLL-4", "-n", "2", "--report-dir", str(tmp_path),
                   "--mutants", "hold-ignore-deadline", timeout=300, progress_every_s=0)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("mqtck conform: ")]
    assert any(line.startswith("mqtck conform: tests on several workers") for line in lines), result.stderr
    assert any(line.startswith("mqtck conform: seeded faults 1/1 ") and line.endswith("done") for line in lines), lines
    assert "\x1b[" not in result.stderr, "no terminal control sequences in a log"


def test_a_ticker_prints_nothing_for_a_short_run_and_lines_at_its_interval(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from conformance.progress import Ticker

    console = Console(stderr=True, force_terminal=False)
    with Ticker("audit", "reading", console=console) as ticker:
        ticker.total(3)
        for item in ("a", "b", "c"):
            ticker.advance(item)  # within the interval of the start: no line
        ticker.phase("deriving findings")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(EVERY_ENV, "0")
    with Ticker("audit", "reading", console=console) as ticker:
        ticker.total(2)
        ticker.advance("a")
        ticker.phase("deriving findings")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "mqtck audit: reading 1/2", "mqtck audit: deriving findings", "mqtck audit: deriving findings"]
    assert lines[-1].endswith("done")


def test_only_reports_what_was_selected_not_the_rest_as_not_covered(tmp_path: Path) -> None:
    result = mqtck("conform", "--only", "LPOLL-4", "--report-dir", str(tmp_path), "--json", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    requirements = json.loads(result.stdout)["requirements"]
    ids = {r["id"] for r in requirements}
    assert "LPOLL-4" in ids and "CGRP-1" not in ids and "FLOW-1" not in ids
    assert all(r["tests"] for r in requirements), "every requirement listed was judged by a test that ran"


def test_strategy_check_names_each_property_as_it_starts_without_a_terminal() -> None:
    quick = mqtck("strategy", "check", "averagely", "--examples", "20")
    assert quick.returncode == 0 and quick.stderr == "", "a run shorter than the interval prints no progress"
    result = mqtck("strategy", "check", "averagely", "--examples", "20", progress_every_s=0)
    assert result.returncode == 0, result.stderr[-2000:]
    started = [line.split(" (")[0] for line in result.stderr.splitlines() if line.startswith("mqtck strategy check: ")]
    assert started[:5] == [f"mqtck strategy check: {p}" for p in
                           ("validity", "partition", "balance", "stickiness", "determinism")], result.stderr


def test_a_command_imports_only_its_own_module() -> None:
    """``mqtck audit`` (or any command) parses with its own module only: importing every command's module pulls in
    the conformance suite, the mutants, Hypothesis and pytest, about 0.7 s before an audit could start its JVM.
    ``mqtck --help`` still lists every command, and an unknown one is refused with the full list."""
    probe = ("import sys; from conformance.cli import main;"
             " code = main(['audit', 'no-such-trace', '--report-dir', 'r']);"
             " print(code, sorted(m for m in ('hypothesis', 'pytest', 'conformance.suite', 'conformance.mutants',"
             " 'conformance.commands.conform') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split("\n")[0] == "2 []", (out.stdout, out.stderr[-2000:])
    listed = mqtck("--help")
    assert listed.returncode == 0 and all(f"    {name} " in listed.stdout for name in ("conform", "audit", "matrix"))
    refused = mqtck("no-such-command")
    one_line(refused, "invalid choice", "'conform'", "'matrix'")


def test_conform_options_default_as_the_parser_does() -> None:
    """``mqtck gate`` runs conform with a ConformOptions, not with words for conform's parser: each option it leaves
    out must default as on the command line, and each it sets must be what the flag would have given."""
    from conformance.cli import build_parser
    from conformance.commands.conform import ConformOptions

    def parsed(*words: str) -> ConformOptions:
        return ConformOptions.from_args(build_parser("conform").parse_args(["conform", *words]))

    assert parsed() == ConformOptions()
    assert parsed("--target", "remoting://127.0.0.1:9876", "--report-dir", "r", "--implementation", "x", "-n", "2",
                  "--expect", "x", "--junit", "j.xml", "--only", "PULL-1", "PULL-2", "--json", "--slow") == \
        ConformOptions(target="remoting://127.0.0.1:9876", report_dir="r", implementation="x", workers=2, expect="x",
                       junit="j.xml", only=["PULL-1", "PULL-2"], json=True, slow=True)
    assert parsed("--client", "./c", "--report-dir", "r") == ConformOptions(client="./c", report_dir="r")
