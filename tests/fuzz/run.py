"""``python -m tests.fuzz.run TARGET|all [--runs N]``: atheris (libFuzzer for Python) on the decoders of
:mod:`tests.fuzz.targets`, starting from their seeds and the inputs kept by earlier runs.

The inputs that reach new code are kept in ``fixtures/fuzz/<target>/corpus/``. A crash (an exception the
target's contract does not allow) or a hang (``TIMEOUT_S`` on one input) stops the target; libFuzzer writes
the input to ``fixtures/fuzz/<target>/crashes/``. The test suite replays both from then on.

``all`` runs each target in its own process and prints a JSON summary: executions, seconds, executions per
second, and crashes per target. Exit 1 if any target crashed or hung.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fuzz"
#: Executions per target in ``tox -e fuzz`` (issue 20: at least a million each).
DEFAULT_RUNS = 1_000_000
#: Seconds one input may take before libFuzzer calls it a hang.
TIMEOUT_S = 10
_DONE = re.compile(r"Done (\d+) runs in (\d+) second")


def fuzz_one(name: str, runs: int) -> None:
    """Fuzz ``name`` in this process (atheris never returns: libFuzzer exits when done)."""
    import atheris

    with atheris.instrument_imports(include=["reference", "conformance", "tests.fuzz"]):
        from tests.fuzz.targets import TARGETS, seeds
    if name not in TARGETS:
        raise SystemExit(f"unknown fuzz target {name!r}; known: {', '.join(TARGETS)}, all")
    target = TARGETS[name]
    corpus, crashes = FIXTURES / name / "corpus", FIXTURES / name / "crashes"
    corpus.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds()[name]):
        (corpus / f"seed-{i}").write_bytes(seed)
    # The corpus directory is libFuzzer's working corpus: the inputs that reach new code are added to it, and
    # the repository keeps it, so the next run starts where this one ended.
    atheris.Setup([sys.argv[0], f"-runs={runs}", f"-timeout={TIMEOUT_S}", "-rss_limit_mb=2048",
                   f"-artifact_prefix={crashes}/", "-print_final_stats=1", str(corpus)], target)
    atheris.Fuzz()


def fuzz_all(names: list[str], runs: int) -> int:
    summary: dict[str, dict[str, float | int]] = {}
    for name in names:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "tests.fuzz.run", name, "--runs", str(runs)],
                              capture_output=True, text=True)
        seconds = time.monotonic() - started
        done = _DONE.search(proc.stderr)
        executions = int(done.group(1)) if done else 0
        summary[name] = {"executions": executions, "seconds": round(seconds, 1),
                         "executions_per_s": round(executions / seconds) if seconds else 0,
                         "crashed_or_hung": int(proc.returncode != 0)}
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
    print(json.dumps(summary, indent=2))
    return 1 if any(s["crashed_or_hung"] for s in summary.values()) else 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.splitlines()[0])
    parser.add_argument("target", help="frame, codec, http, record, or all")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"executions (default {DEFAULT_RUNS})")
    args = parser.parse_args()
    if args.target != "all":
        # Nothing of the code under test may be imported before this: atheris instruments modules as they
        # are first imported (fuzz_one), and coverage is what guides it.
        fuzz_one(args.target, args.runs)
    from tests.fuzz.targets import TARGETS

    return fuzz_all(list(TARGETS), args.runs)


if __name__ == "__main__":
    sys.exit(main())
