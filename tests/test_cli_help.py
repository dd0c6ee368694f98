"""Every ``mqtck … --help`` page reads as a newcomer needs it: a description in plain, finished sentences, then
``examples:`` that are real command lines of that command (each one parses)."""

from __future__ import annotations

import re
import shlex

import pytest

from conformance.cli import build_parser, help_pages, main
from conformance.helptext import DESCRIPTIONS, EXAMPLES

PAGES = dict(help_pages(build_parser()))


def test_every_command_and_subcommand_has_a_description_and_examples_and_nothing_else_does() -> None:
    assert set(DESCRIPTIONS) == set(PAGES)
    assert set(EXAMPLES) == set(PAGES)


@pytest.mark.parametrize("words", sorted(PAGES), ids=lambda words: words or "mqtck")
def test_a_help_page_is_plain_text_ending_with_examples(words: str) -> None:
    page = PAGES[words].format_help()
    description = PAGES[words].description or ""
    assert description.rstrip().endswith("."), f"{words!r}: the description stops mid-sentence"
    assert "``" not in page, f"{words!r}: reStructuredText literal in --help"
    assert not re.search(r"::\s*$", page, re.MULTILINE), f"{words!r}: reStructuredText block marker in --help"
    head, sep, examples = page.partition("\nexamples:\n")
    assert sep, f"{words!r}: no examples: section"
    first = shlex.split(examples.splitlines()[0], comments=True)
    assert first[:1 + len(words.split())] == ["mqtck", *words.split()], f"{words!r}: the first example is another's"


@pytest.mark.parametrize(("words", "example"), [(w, e) for w in sorted(EXAMPLES) for e in EXAMPLES[w]],
                         ids=lambda value: value or "mqtck")
def test_every_example_is_a_command_line_that_parses(words: str, example: str) -> None:
    argv = shlex.split(example, comments=True)
    assert argv[0] == "mqtck"
    build_parser().parse_args(argv[1:])  # a wrong option or a missing argument exits 2 here


def test_the_command_list_says_what_broker_serves(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    listing = capsys.readouterr().out
    assert "--remoting" in listing.split("broker", 1)[1].splitlines()[0]
    assert listing.rstrip().splitlines()[-1].startswith("  mqtck ")


def test_gate_help_describes_the_whole_run(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "stop it, and write the usual reports." in out
