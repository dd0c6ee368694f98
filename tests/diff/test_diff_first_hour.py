"""``mqtck diff`` as a newcomer meets it: a seed repeats its search, the commands docs/diff.md quotes diverge where
the doc says, a search that finds nothing says what it ran, a served fault says what it breaks, and the replay
command and the emitted test survive the next shell and the next run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.diff.replay import read_replay
from conformance.helptext import EXAMPLES
from conformance.targets.launch import LaunchedBroker

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "diff.md"
#: A row of the doc's table of quick faults: the command, the sequence of the first divergence, the shrunk length
#: and the step that shows it.
QUICK_ROW = re.compile(r"^\| `(mqtck diff --target mutant:[^`]+)` \| (\d+) \| (\d+) \| (\w+) \|", re.M)
#: A fault that diverges within a few dozen sequences: the doc's headline.
HEADLINE = ["--target", "mutant:offset-empty-queue-keeps-offset", "--examples", "100"]


def _mqtck_diff(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "diff", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def _json_diff(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main(["diff", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_seed_repeats_its_search_in_another_process(tmp_path: Path) -> None:
    """Two processes with one seed and one pair of in-process targets draw the same sequences and shrink to the
    same program, whatever Python's string hashing (PYTHONHASHSEED) and the process id (the names' salt)."""
    found = []
    for hash_seed in ("1", "2"):
        reports = tmp_path / hash_seed
        run = _mqtck_diff(*HEADLINE, "--json", "--report-dir", str(reports),
                          env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert run.returncode == 1, run.stderr
        summary = json.loads(run.stdout)
        program, _ = read_replay(reports / "divergence.json")
        found.append((summary["sequences"], summary["steps"], summary["sequences_to_first_divergence"],
                      summary["shrunk_steps"], program.to_json()))
    assert found[0] == found[1]


def test_the_docs_quick_faults_diverge_where_the_doc_says(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Each command of docs/diff.md's table of quick faults diverges at the sequence, shrunk to the steps, at the
    step the table states; the headline example is the first row's command."""
    text = DOC.read_text(encoding="utf-8")
    rows = QUICK_ROW.findall(text)
    assert len(rows) >= 2, "docs/diff.md lost its table of quick faults"
    assert f"mqtck diff {' '.join(HEADLINE)}\n" in text.split("## What a sequence does")[0]
    assert rows[0][0] == f"mqtck diff {' '.join(HEADLINE)}"
    for n, (command, sequence, steps, kind) in enumerate(rows):
        reports = tmp_path / str(n)
        code, summary = _json_diff([*shlex.split(command)[2:], "--report-dir", str(reports)], capsys)
        assert code == 1, command
        _, document = read_replay(reports / "divergence.json")
        found = (summary["sequences_to_first_divergence"], summary["shrunk_steps"], document["divergence"]["kind"])
        assert found == (int(sequence), int(steps), kind), command


def test_the_help_examples_are_the_docs_checked_ones() -> None:
    """``mqtck diff --help`` shows only fault commands whose numbers the test above checks."""
    helped = [line for line in EXAMPLES["diff"] if re.fullmatch(r"mqtck diff --target mutant:\S+ --examples \d+", line)]
    checked = {row[0] for row in QUICK_ROW.findall(DOC.read_text(encoding="utf-8"))}
    assert helped and set(helped) <= checked, helped


def test_a_search_that_finds_nothing_says_what_it_ran(capsys: pytest.CaptureFixture[str]) -> None:
    """No divergence is no longer an empty stdout: the sequences, the steps, and how many of each kind ran, in
    the text and in the JSON alike."""
    argv = ["--target", "reference", "--examples", "12", "--max-steps", "4"]
    assert main(["diff", *argv]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no divergence: reference and reference agree on 12 sequences"), out
    listed = dict(re.findall(r"^  (\w+) +(\d+)$", out, re.M))
    code, summary = _json_diff(argv, capsys)
    kinds = summary["steps_by_kind"]
    assert code == 0 and isinstance(kinds, dict)
    assert {k: int(n) for k, n in listed.items()} == kinds and sum(kinds.values()) == summary["steps"]


@pytest.mark.req("OFFSET-1")
def test_a_served_fault_names_itself_and_its_replay_survives_a_shell(
        remoting_server: Callable[..., LaunchedBroker], tmp_path: Path) -> None:
    """``mqtck broker --mutant NAME`` says which fault it serves and what it breaks; on simulated time the diff
    finds it within seconds; the printed replay command splits back into the run's arguments (``?control=``
    quoted), and the emitted test is named without the server's throwaway port."""
    server = remoting_server("--control", "--sim-clock", "--segment-bytes", "65536",
                             "--mutant", "offset-empty-queue-keeps-offset")
    reports = tmp_path / "reports"
    run = _mqtck_diff("--target", server.url, "--examples", "100", "--report-dir", str(reports), "--emit-test")
    assert run.returncode == 1, run.stderr
    (line,) = [x for x in run.stderr.splitlines() if x.startswith("mqtck diff: replay: ")]
    argv = shlex.split(line.removeprefix("mqtck diff: replay: "))
    assert argv == ["mqtck", "diff", "--replay", str(reports / "divergence.json"), "--target", server.url,
                    "--against", "reference"]
    (test_file,) = reports.glob("test_diff_*.py")
    assert re.fullmatch(r"test_diff_pull_remoting_seed_0_seq_\d+\.py", test_file.name), test_file.name
    err = server.stop()
    assert ("mqtck broker: serving seeded fault offset-empty-queue-keeps-offset, which breaks OFFSET-1: A pull on "
            "an empty queue") in err, err


def test_a_fault_served_over_http_names_itself_too(http_server: Callable[..., LaunchedBroker]) -> None:
    server = http_server("--sim-clock", "--mutant", "flow-permits-go-negative")
    err = server.stop()
    assert "mqtck broker: serving seeded fault flow-permits-go-negative, which breaks FLOW-2: " in err, err


def test_a_usage_error_beside_a_served_fault_stays_one_line(tmp_path: Path) -> None:
    """The fault is named once every flag is checked: a bad flag beside ``--mutant`` is still one line, exit 2."""
    command = [sys.executable, "-m", "conformance.cli", "broker", "--remoting", "127.0.0.1:0", "--mutant",
               "hold-ignore-deadline", "--clean-interval-ms", "5", "--data-dir", str(tmp_path / "d")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        "mqtck broker: error: --clean-interval-ms must be >= 100"], run.stderr


def test_a_target_on_real_time_is_said_before_the_run(remoting_server: Callable[..., LaunchedBroker]) -> None:
    """A runner without --sim-clock makes the pair wait out every hold: the diff says so, and the faster way."""
    server = remoting_server("--control", "--segment-bytes", "65536")
    run = _mqtck_diff("--target", server.url, "--examples", "1", "--max-steps", "1", "--without", "restart")
    assert run.returncode == 0, run.stderr
    assert f"mqtck diff: {server.url} runs on real time (no clock control)" in run.stderr
    assert "--sim-clock" in run.stderr and "reference runs on real time" not in run.stderr
