"""A divergence for people and for tools: the numbered side-by-side listing, the replay file, the pytest test.

The replay file is JSON (``REPLAY_FORMAT``): the two targets, the seed, the expectations used and the shrunk
program; ``mqtck diff --replay FILE --target A --against B`` runs its program once, and the emitted test
(``--emit-test``) embeds it so that it reproduces the divergence without the file.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from conformance.diff.avoid import from_document, to_document
from conformance.diff.program import Program
from conformance.diff.runner import Divergence, Lockstep, open_pair
from conformance.expectations import Avoidance, DiffRule

REPLAY_FORMAT = "mqtck-diff-replay/1"


def _value(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def listing(divergence: Divergence, label_a: str, label_b: str) -> str:
    """The program up to its divergent step as a numbered list: each step with the requirements it touches,
    the steps before with their (equal) observations, the divergent one field by field, side by side."""
    width = max(len(label_a), len(label_b), 4)
    lines = []
    for index, step in enumerate(divergence.program.steps[: divergence.index + 1]):
        lines.append(f"{index + 1:>3}. {step.describe()}   [{' '.join(step.touches) or '-'}]")
        if index < divergence.index:
            a, _ = divergence.before[index]
            if a:
                lines.append(f"       {'both':<{width}}  {_value(a)}")
            continue
        keys = sorted(set(divergence.a) | set(divergence.b))
        key_width = max((len(k) for k in keys), default=4)
        lines.append(f"       {'':<{key_width}}  {label_a:<{width}}  |  {label_b}")
        for key in keys:
            mark = "  <<< differs" if key in divergence.difference.fields else ""
            lines.append(f"       {key:<{key_width}}  {_value(divergence.a.get(key)):<{width}}  |  "
                         f"{_value(divergence.b.get(key))}{mark}")
    return "\n".join(lines)


def replay_document(divergence: Divergence, target: str, against: str, seed: int | None,
                    expect: str | None, avoid: tuple[Avoidance, ...] = ()) -> dict[str, Any]:
    """The replay file of ``divergence``; ``avoid``: what the search stepped around, which its replay then steps
    around too (a shrunk program may hold steps the search never ran)."""
    return {
        "format": REPLAY_FORMAT,
        "target": target,
        "against": against,
        "seed": seed,
        "expect": expect,
        "avoid": to_document(avoid),
        "program": divergence.program.to_json(),
        "divergence": {
            "step": divergence.index + 1,
            "kind": divergence.step.kind,
            "touches": list(divergence.step.touches),
            "fields": list(divergence.difference.fields),
            "target": divergence.a,
            "against": divergence.b,
        },
    }


def read_replay(path: Path) -> tuple[Program, dict[str, Any]]:
    """The program of a replay file and the whole document (its ``avoid`` list checked); ValueError naming the field
    that is wrong."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable JSON replay file: {error}") from None
    if not isinstance(document, dict) or document.get("format") != REPLAY_FORMAT:
        raise ValueError(f"{path}: format: expected {REPLAY_FORMAT!r}")
    try:
        from_document(document.get("avoid"))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    try:
        return Program.from_json(document.get("program") or {}), document
    except ValueError as error:
        raise ValueError(f"{path}: program.{error}") from None


def replay(program: Program, target: str, against: str, rules: tuple[DiffRule, ...] = (),
           store_settings: dict[str, object] | None = None, avoid: tuple[Avoidance, ...] = ()) -> Divergence | None:
    """Open both targets (an in-process reference with ``store_settings``), run ``program`` once in lockstep (the
    steps of ``avoid``'s behaviours on neither), close them; the divergence or None."""
    with tempfile.TemporaryDirectory(prefix="mqtck-diff-") as workdir:
        a, b = open_pair(target, against, Path(workdir), store_settings)
        try:
            return Lockstep(a, b, rules, avoid=avoid).run(program)
        finally:
            a.close()
            b.close()


TEST_TEMPLATE = '''"""Reproduces a divergence found by ``mqtck diff`` (step {step}, {kind}: {fields}).

Run with pytest; the targets default to the run's and can be changed with MQTCK_DIFF_TARGET and
MQTCK_DIFF_AGAINST (a remoting or HTTP target must be serving). It passes once the targets agree.
"""

import json
import os

import pytest

from conformance.diff.avoid import from_document
from conformance.diff.program import Program
from conformance.diff.replay import listing, replay
from conformance.diff.compare import rules_for
from conformance.diff.settings import settings_for

PROGRAM = json.loads({program!r})
#: What the search stepped around (its [[avoid]] entries), stepped around here too.
AVOID = from_document(json.loads({avoid!r}))
TARGET = os.environ.get("MQTCK_DIFF_TARGET", {target!r})
AGAINST = os.environ.get("MQTCK_DIFF_AGAINST", {against!r})


@pytest.mark.req({touches})
def test_{name}_targets_agree() -> None:
    divergence = replay(Program.from_json(PROGRAM), TARGET, AGAINST, rules_for({expect!r}), settings_for({expect!r}),
                        AVOID)
    assert divergence is None, "\\n" + listing(divergence, TARGET, AGAINST)
'''


def test_name(kind: str, target: str, seed: int, sequence: int | None) -> str:
    """The name of an emitted test (``test_diff_<name>.py``, ``test_<name>_targets_agree``): the divergent step,
    what the target is (its kind, and the fault or peer it names) and where the search found it (seed and
    sequence). Never the host or port: a served target's port changes every run, and a name that changes with it
    makes each run's file a new one."""
    scheme, _, rest = target.partition(":")
    what = f"{scheme} {rest}" if scheme in ("mutant", "peer") else scheme
    found = f"seed {seed} seq {sequence}" if sequence is not None else f"seed {seed}"
    return re.sub(r"[^a-z0-9]+", "_", f"{kind} {what} {found}".lower()).strip("_")


def emit_test(divergence: Divergence, target: str, against: str, expect: str | None, name: str,
              avoid: tuple[Avoidance, ...] = ()) -> str:
    """The source of a pytest test that replays the shrunk program (stepping around ``avoid``, as its search did)
    and fails while the targets diverge."""
    return TEST_TEMPLATE.format(
        avoid=json.dumps(to_document(avoid)),
        step=divergence.index + 1, kind=divergence.step.kind, fields=", ".join(divergence.difference.fields),
        program=json.dumps(divergence.program.to_json()), target=target, against=against, expect=expect,
        touches=", ".join(repr(r) for r in divergence.step.touches), name=name,
    )
