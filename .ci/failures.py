"""What failed in a test-command run, read from its JUnit files: the last tox environment of the test command.

Why: the test command runs its environments three at a time (``tox -p 3``), and tox prints a failing environment's
whole output when it ends, in the middle of the log. A CI log is read from its tail, and a long one may be shown
cut in the middle, so the one failure that decided the run could be out of view. This runs after every other
environment and prints each failed test again, with its message and the end of its traceback, and names every
environment that wrote no JUnit file (it stopped before its end). It exits 1 when anything there gates the run,
0 otherwise (tox then shows only its OK line).

A testcase gates unless it carries the JUnit property ``gates`` = ``false`` (``mqtck conform`` marks a failed
SHOULD so: reported, not gating). Standard library only: it reads files, so the environment installs nothing.

Usage: ``python .ci/failures.py DIR NAME...``: DIR holds ``NAME.xml`` for each expected NAME.
"""

from __future__ import annotations

import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

#: Lines of a failure's text printed: the end of a traceback, where the assertion is.
TAIL_LINES = 15
#: A failure message longer than this is cut (a conformance message carries the requirement's sentence).
MESSAGE_CHARS = 400


def _failures(path: Path) -> tuple[int, list[tuple[bool, str]]]:
    """The file's testcase count, and (gates, printed text) for each failed or erroring testcase."""
    root = ET.parse(path).getroot()
    cases = list(root.iter("testcase"))
    out = []
    for case in cases:
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is None:
            continue
        gates = all(p.get("value") != "false" for p in case.iter("property") if p.get("name") == "gates")
        message = (bad.get("message") or "").strip()
        if len(message) > MESSAGE_CHARS:
            message = message[:MESSAGE_CHARS] + " ..."
        tail = (bad.text or "").rstrip().splitlines()[-TAIL_LINES:]
        word = "ERROR (not judged: its setup failed)" if bad.tag == "error" else "FAIL"
        text = [f"{word if gates else word + ' (does not gate)'} {path.stem}: {case.get('classname')}::"
                f"{case.get('name')}", f"    {message}", *(f"    | {line}" for line in tail)]
        out.append((gates, "\n".join(text)))
    return len(cases), out


#: How a skipped test says that a peer was not gated at all (tests/peers/test_rocketmq_rust.py): repeated at the tail.
NOT_GATED = "NOT GATED"


def _not_gated(path: Path) -> list[str]:
    """The skip messages of the file's testcases that say a peer was not gated (not a failure, but a CI log reader
    must see that the peer's verdicts are missing, not passing)."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        skipped = case.find("skipped")
        message = (skipped.get("message") or "") if skipped is not None else ""
        if NOT_GATED in message:
            out.append(f"{message[message.index(NOT_GATED):]} ({path.stem}: {case.get('name')})")
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: failures.py DIR NAME...: DIR holds NAME.xml for each expected NAME", file=sys.stderr)
        return 2
    directory, names = Path(argv[0]), argv[1:]
    missing, found, cases, not_gated = [], [], 0, []
    for name in names:
        path = directory / f"{name}.xml"
        if not path.is_file():
            missing.append(name)
            continue
        try:
            count, failures = _failures(path)
        except ET.ParseError as exc:
            missing.append(f"{name} (its file does not parse: {exc})")
            continue
        cases += count
        not_gated.extend(_not_gated(path))
        age = time.time() - path.stat().st_mtime
        found.extend((gates, f"{text}\n    (from {path}, written {age / 60:.0f} min ago)") for gates, text in failures)
    # Non-gating failures first, the gating ones last: the tail of a log is what is read.
    for _, text in sorted(found, key=lambda f: f[0]):
        print(text)
    for name in missing:
        print(f"NO JUNIT FILE from {name}: it did not run, or stopped before its end (its own output, above, says why)")
    for line in not_gated:
        print(line)
    gating = sum(g for g, _ in found)
    print(f"failures: {gating} gating, {len(found) - gating} not gating, in {cases} testcases of "
          f"{len(names) - len(missing)} JUnit files; {len(missing)} expected file(s) missing")
    return 1 if gating or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
