"""``mqtck peer install`` is never silent while Maven downloads: Maven's own lines, read as they come, become a
running count of files and bytes. The parser is checked on lines recorded from a real cold resolution (Maven
3.8.7, batch mode, output not a terminal), and the streaming on a real child process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.peers import PeerError
from conformance.peers.build import run_build
from conformance.peers.maven import DownloadTally

#: Lines of ``mvn -B dependency:build-classpath`` into an empty local repository (recorded 2026-11-28).
RECORDED = (Path(__file__).resolve().parents[1] / "fixtures" / "maven" / "cold-resolution.log").read_text("utf-8")


def test_finished_downloads_are_counted_with_their_sizes() -> None:
    tally = DownloadTally("rocketmq-client-4.9.8")
    counted = [tally.feed(line) for line in RECORDED.splitlines()]
    assert counted == [False, False, True, False, True, True, False]
    assert tally.files == 3
    assert tally.bytes == 18_000 + 4_400_000 + 815
    assert tally.last_file == "plexus-component-annotations-1.5.5.pom"
    assert tally.summary() == "3 files, 4.4 MB"


def test_a_download_in_progress_is_not_counted() -> None:
    tally = DownloadTally("x")
    assert not tally.feed("[INFO] Downloading from central: https://repo.maven.apache.org/maven2/a/b/1/b-1.jar")
    assert tally.files == 0


def test_a_build_step_hands_over_each_line_as_it_comes() -> None:
    seen: list[str] = []
    program = "import sys\nfor i in range(3):\n    print(f'line {i}', flush=True)\nprint('to stderr', file=sys.stderr)"
    run_build([sys.executable, "-c", program], step="the test program", timeout_s=60, on_line=seen.append)
    assert seen[:3] == ["line 0", "line 1", "line 2"]
    assert "to stderr" in seen


def test_a_streamed_step_that_fails_still_names_its_first_error() -> None:
    program = "print('[INFO] working'); print('[ERROR] no such artifact'); raise SystemExit(1)"
    with pytest.raises(PeerError, match=r"the test program failed: \[ERROR\] no such artifact"):
        run_build([sys.executable, "-c", program], step="the test program", timeout_s=60, on_line=lambda line: None,
                  first_error=lambda text: next(line for line in text.splitlines() if "ERROR" in line))
