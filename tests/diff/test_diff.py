"""``mqtck diff``: the control (the reference against itself over the wire agrees), a seeded fault diverges and
shrinks, the replay file and the emitted test reproduce it, and bad input is one line with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from conformance import expectations
from conformance.diff import steps as s
from conformance.diff.avoid import avoid_for
from conformance.diff.compare import compare, rules_for
from conformance.diff.program import Program
from conformance.diff.replay import listing, read_replay, replay
from conformance.diff.runner import Lockstep, open_pair, search
from conformance.diff.settings import settings_for
from conformance.expectations import ExpectationError
from conformance.targets.launch import LaunchedBroker
from conformance.targets.reference import ReferenceTarget


def mqtck_diff(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "diff", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def _search(target: str, against: str, examples: int, tmp_path: Path, max_steps: int = 12):  # type: ignore[no-untyped-def]
    a, b = open_pair(target, against, tmp_path)
    try:
        return search(Lockstep(a, b), a.capabilities & b.capabilities, examples, seed=0, max_steps=max_steps)
    finally:
        a.close()
        b.close()


@pytest.mark.req("OFFSET-1", "OFFSET-2", "QOFF-13.min-above-zero", "CGRP-4.clustering", "PULL-1")
def test_the_reference_agrees_with_itself_over_remoting(remoting_server: Callable[..., LaunchedBroker],
                                                         tmp_path: Path) -> None:
    """The control: every step the wire can carry answers the same in-process and over remoting."""
    server = remoting_server("--control", "--segment-bytes", "65536")
    result = _search(server.url, "reference", 12, tmp_path, max_steps=6)
    assert result.divergence is None, listing(result.divergence, server.url, "reference")
    assert result.stats.sequences == 12 and result.stats.steps >= 12


@pytest.mark.req("LPOLL-3", "LPOLL-4", "CGRP-6.closed", "CGRP-6.expiry", "REVIVE-2.copy")
def test_the_reference_agrees_with_itself_over_remoting_on_simulated_time(
        remoting_server: Callable[..., LaunchedBroker], tmp_path: Path) -> None:
    """``mqtck broker --remoting --control --sim-clock``: the wire gets clock control, so the instant of a held
    answer is compared too and the steps that need time to pass (a channel's expiry, a revive) run over it."""
    server = remoting_server("--control", "--sim-clock", "--segment-bytes", "65536")
    a, b = open_pair(server.url, "reference", tmp_path)
    try:
        assert "clock_control" in a.capabilities & b.capabilities
        result = search(Lockstep(a, b), a.capabilities & b.capabilities, 20, seed=0, max_steps=8)
    finally:
        a.close()
        b.close()
    assert result.divergence is None, listing(result.divergence, server.url, "reference")
    assert result.stats.sequences == 20


def test_clocked_programs_start_at_one_phase_so_a_timing_divergence_shrinks(tmp_path: Path) -> None:
    """Every program on a clocked pair starts at a multiple of PHASE_MS since the broker started: a divergence
    that depends on where the hold service's 5 s check falls replays the same later in the search, and
    shrinks to the one step that shows it instead of ending as 'did not reproduce'."""
    result = _search("mutant:hold-wake-any-arrival", "reference", 1000, tmp_path)
    d = result.divergence
    assert d is not None and not result.flaky
    assert d.step.kind == "long_poll" and "held_ms" in d.difference.fields and d.index == 0, listing(
        d, "mutant", "reference")


@pytest.mark.req("LPOLL-2", "LPOLL-3", "LPOLL-4")
def test_the_reference_agrees_with_itself_over_http_on_simulated_time(http_server: Callable[..., LaunchedBroker],
                                                                      tmp_path: Path) -> None:
    """With clock control on both sides the instant of a held answer is compared too (held_ms)."""
    server = http_server("--sim-clock", "--segment-bytes", "65536")
    # Found by mqtck diff: the HTTP front's schema refused the expression "A || B" that the core and the wire
    # accept (RocketMQ trims the pieces).
    for expression in ("A || B", " A||B ", "*"):
        spaced = Program((1,), (s.Heartbeat(0, 0, 1, expression), s.Send(0, 0, "B"),
                                s.Pull(0, 0, 0, 0, 32, expression)))
        assert replay(spaced, server.url, "reference") is None, expression
    result = _search(server.url, "reference", 15, tmp_path, max_steps=6)
    assert result.divergence is None, listing(result.divergence, server.url, "reference")


@pytest.mark.req("OFFSET-1")
def test_a_seeded_fault_diverges_and_shrinks_to_the_step_that_shows_it(tmp_path: Path) -> None:
    result = _search("mutant:offset-empty-queue-keeps-offset", "reference", 300, tmp_path)
    d = result.divergence
    assert d is not None, "the mutant answers a pull on an empty queue with the requested offset"
    assert d.step.kind == "pull" and d.difference.fields == ("next",)
    assert d.index + 1 <= 2, f"shrunk to {d.index + 1} steps"
    assert result.stats.first_at is not None and result.stats.first_at <= result.stats.sequences
    text = listing(d, "mutant", "reference")
    assert "<<< differs" in text and "OFFSET-1" in text


def test_the_cli_writes_a_replay_and_a_test_that_reproduce_the_divergence(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    target = "mutant:registry-no-notify-on-unregister"
    run = mqtck_diff("--target", target, "--examples", "1500", "--report-dir", str(reports), "--emit-test")
    assert run.returncode == 1, run.stderr
    assert "divergence after" in run.stdout and "<<< differs" in run.stdout and "CGRP-5" in run.stdout
    summary = json.loads((reports / "diff.json").read_text())
    assert summary["diverged"] and summary["shrunk_steps"] <= 4
    program, document = read_replay(reports / "divergence.json")
    assert document["divergence"]["kind"] == "unregister" and document["divergence"]["fields"] == ["notified"]
    assert len(program.steps) >= summary["shrunk_steps"]
    # The replay diverges again on the mutant, and agrees where both sides are the reference.
    again = mqtck_diff("--replay", str(reports / "divergence.json"), "--target", target)
    assert again.returncode == 1 and "<<< differs" in again.stdout
    same = mqtck_diff("--replay", str(reports / "divergence.json"), "--target", "reference")
    assert same.returncode == 0, same.stderr
    # The emitted test fails while the divergence is there.
    (test_file,) = reports.glob("test_diff_*.py")
    emitted = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert emitted.returncode == 1 and "<<< differs" in emitted.stdout, emitted.stdout[-2000:]


def test_a_diff_rule_excuses_its_field_and_names_its_requirement(tmp_path: Path) -> None:
    rules_file = tmp_path / "impl.toml"
    rules_file.write_text(
        'implementation = "X"\nversion = "1"\n\n[[diff]]\nstep = "pull"\nfield = "next"\nkind = "deviation"\n'
        'id = "OFFSET-1"\nreason = "keeps the offset"\nsource = "somewhere"\n'
    )
    rules = rules_for(str(rules_file))
    assert [(r.step, r.field, r.kind, r.id) for r in rules] == [("pull", "next", "deviation", "OFFSET-1")]
    difference = compare("pull", {"next": 0, "max": 0}, {"next": 5, "max": 0}, rules)
    assert difference.fields == () and difference.excused == rules
    assert compare("query_offset", {"next": 0}, {"next": 5}, rules).fields == ("next",)
    conditional = replace(rules[0], when="status=OFFSET_TOO_SMALL")
    assert compare("pull", {"next": 0, "status": "FOUND"}, {"next": 5, "status": "FOUND"}, (conditional,)).fields
    too_small = {"status": "OFFSET_TOO_SMALL"}
    assert not compare("pull", {"next": 0, **too_small}, {"next": 5, **too_small}, (conditional,)).fields
    program = Program((1,), (s.Pull(0, 0, 0, 5),))
    assert replay(program, "mutant:offset-empty-queue-keeps-offset", "reference", rules) is None
    assert replay(program, "mutant:offset-empty-queue-keeps-offset", "reference") is not None


#: A queue emptied by retention: queue 1 gets two messages, queue 0 large ones until both are in expired segments.
EMPTIED_QUEUE = Program((2,), (s.Send(0, 1, count=2), s.Send(0, 0, large=True, count=6), s.Retention(),
                               s.MinMax(0, 1), s.Pull(0, 0, 1, 0), s.QueryOffset(1, 0, 1)))


#: Commits of 2 then 1 on one queue (the second smaller: rocketmq-rust drops it, QOFF-1), one on another queue, a query.
SMALLER_COMMIT = Program((2,), (s.Send(0, 0, count=3), s.CommitOffset(0, 0, 0, 2), s.CommitOffset(0, 0, 1, 0),
                                s.CommitOffset(0, 0, 0, 1), s.LongPoll(0, 0, 0, commit_during=0),
                                s.QueryOffset(0, 0, 0)))


@pytest.mark.req("QOFF-1")
def test_an_avoided_behaviour_runs_on_neither_target_and_is_counted(tmp_path: Path) -> None:
    """rocketmq-rust's ``[[avoid]]`` entry: a commit below one the sequence already made for the same group and queue
    (a commit step, or a long poll's commit during its hold) runs on neither target, is observed as avoided on both and
    counted; a smaller commit of another queue is not one. Without the entry the same program commits 1."""
    avoid = avoid_for("rocketmq-rust-1.0.0")
    assert [(a.behaviour, a.id) for a in avoid] == [("smaller-commit", "QOFF-1")]
    for given, stored in ((avoid, 2), ((), 0)):
        a, b = ReferenceTarget(str(tmp_path / f"a{stored}")), ReferenceTarget(str(tmp_path / f"b{stored}"))
        try:
            lockstep = Lockstep(a, b, avoid=given)
            assert lockstep.run(SMALLER_COMMIT) is None
            prefix = f"d{lockstep._salt}s1-"
            assert {t.query_offset(f"{prefix}G0", f"{prefix}T0", 0) for t in (a, b)} == {("SUCCESS", stored)}
        finally:
            a.close()
            b.close()
        assert lockstep.stats.avoided == ({avoid[0]: 2} if given else {})
        assert lockstep.stats.steps == len(SMALLER_COMMIT.steps) - (2 if given else 0)


@pytest.mark.req("RETAIN-12", "RETAIN-9")
def test_reference_settings_run_the_reference_as_the_expectations_say(tmp_path: Path) -> None:
    """4.9.7's ``[[reference]]`` entry keeps an emptied queue's min: the reference run that way diverges from the
    reference as it is (RETAIN-9) at the emptied queue's min offset, and agrees with itself run that way."""
    settings = settings_for("rocketmq-4.9.7")
    assert settings == {"raise_min_of_emptied_queue": False, "offset_overflow_to_max": True}
    assert replay(EMPTIED_QUEUE, "reference", "reference", (), settings) is None
    a, b = ReferenceTarget(str(tmp_path / "a"), store_settings=settings), ReferenceTarget(str(tmp_path / "b"))
    try:
        divergence = Lockstep(a, b).run(EMPTIED_QUEUE)
    finally:
        a.close()
        b.close()
    assert divergence is not None and divergence.step.kind == "min_max", divergence
    assert (divergence.a["max"], divergence.b["min"]) == (2, 2) and divergence.a["min"] < 2


#: An expectations entry an [[avoid]] entry may name.
EXPECTED_QOFF_1 = '[[expected]]\nid = "QOFF-1"\nreason = "r"\nsource = "s"\nrepro = "x"\n\n'


@pytest.mark.parametrize(("body", "message"), [
    ('[[reference]]\nsetting = "no_such"\nvalue = 1\nid = "RETAIN-9"\nreason = "r"\nsource = "s"\n',
     "setting 'no_such' is not a MessageStoreConfig field"),
    ('[[reference]]\nsetting = "raise_min_of_emptied_queue"\nvalue = "no"\nid = "RETAIN-9"\nreason = "r"\n'
     'source = "s"\n', "field 'value' must be a bool"),
    ('[[reference]]\nsetting = "raise_min_of_emptied_queue"\nvalue = false\nid = "RETAIN-9"\nsource = "s"\n',
     "field 'reason' is required"),
    ('[[diff]]\nstep = "pull"\nfield = "next"\nkind = "maybe"\nid = "OFFSET-1"\nreason = "r"\nsource = "s"\n',
     "kind 'maybe' is not one of allowed, deviation"),
    ('[[diff]]\nstep = "pul"\nfield = "next"\nkind = "allowed"\nid = "OFFSET-1"\nreason = "r"\nsource = "s"\n',
     "step 'pul' is not one of"),
    ('[[diff]]\nstep = "pull"\nfield = "next"\nkind = "allowed"\nid = "NOPE-1"\nreason = "r"\nsource = "s"\n',
     "id 'NOPE-1' is not a requirement"),
    ('[[diff]]\nstep = "pull"\nkind = "allowed"\nid = "OFFSET-1"\nreason = "r"\nsource = "s"\n',
     "field 'field' is required"),
    (EXPECTED_QOFF_1 + '[[avoid]]\nbehaviour = "smaller-commit"\nid = "QOFF-2"\nreason = "r"\nsource = "s"\n',
     "avoid entry 1: id 'QOFF-2' is no \\[\\[expected\\]\\] entry of this file"),
    (EXPECTED_QOFF_1 + '[[avoid]]\nbehaviour = "smaller-commit"\nid = "QOFF-1"\nsource = "s"\n',
     "avoid entry 1: field 'reason' is required"),
    (EXPECTED_QOFF_1 + '[[avoid]]\nbehaviour = "fly"\nid = "QOFF-1"\nreason = "r"\nsource = "s"\n',
     "avoid entry 1: behaviour 'fly' is not one of smaller-commit"),
])
def test_bad_diff_and_reference_entries_name_the_entry_and_the_rule(tmp_path: Path, body: str, message: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(body)
    with pytest.raises(ExpectationError, match=message):
        rules_for(str(bad))
        settings_for(str(bad))
        avoid_for(str(bad))


@pytest.mark.req("OFFSET-1")
def test_a_hand_written_replay_that_diverges_is_recorded_for_keeping(tmp_path: Path) -> None:
    """``--replay FILE --report-dir D``: a repro written by hand (one pull of an empty queue at offset 5) that
    diverges is written to D as a replay file recording its divergence, the form fixtures/diff keeps, and that file
    replays alike."""
    hand = tmp_path / "repro.json"
    hand.write_text(json.dumps({"format": "mqtck-diff-replay/1", "program": {"queues": [1], "steps": [
        {"kind": "pull", "group": 0, "topic": 0, "queue": 0, "offset": 5, "max_nums": 32, "expression": "*"}]}}))
    target = "mutant:offset-empty-queue-keeps-offset"
    run = mqtck_diff("--replay", str(hand), "--target", target, "--report-dir", str(tmp_path / "out"))
    assert run.returncode == 1 and "<<< differs" in run.stdout, run.stderr
    program, document = read_replay(tmp_path / "out" / "divergence.json")
    assert document["target"] == target and document["against"] == "reference"
    assert document["divergence"]["kind"] == "pull" and document["divergence"]["fields"] == ["next"]
    assert len(program.steps) == 1
    again = mqtck_diff("--replay", str(tmp_path / "out" / "divergence.json"), "--target", target)
    assert again.returncode == 1 and "<<< differs" in again.stdout


def test_replay_files_are_checked_field_by_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for document, message in (
        ("{", "not a readable JSON replay file"),
        ('{"format": "other"}', "format: expected"),
        ('{"format": "mqtck-diff-replay/1", "program": {"queues": [], "steps": []}}', "program.queues"),
        ('{"format": "mqtck-diff-replay/1", "program": {"queues": [1], "steps": [{"kind": "fly"}]}}',
         "step kind 'fly'"),
        ('{"format": "mqtck-diff-replay/1", "program": {"queues": [1], "steps": [{"kind": "pull", "x": 1}]}}',
         "step pull:"),
        ('{"format": "mqtck-diff-replay/1", "avoid": [{"behaviour": "fly", "id": "QOFF-1"}], '
         '"program": {"queues": [1], "steps": []}}', "avoid: expected a list"),
    ):
        bad.write_text(document)
        with pytest.raises(ValueError, match=message):
            read_replay(bad)


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "reference", "--examples", "0"], "--examples must be >= 1"),
    (["--target", "nowhere"], "unknown target 'nowhere'"),
    (["--target", "reference", "--emit-test"], "--emit-test needs --report-dir"),
    (["--target", "reference", "--expect", "no-such-impl"], "no expectations named 'no-such-impl'"),
    (["--target", "remoting://127.0.0.1:1"], "127.0.0.1:1"),
])
def test_usage_errors_are_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    run = mqtck_diff(*args, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mqtck diff: error:") and message in lines[0], run.stderr


def test_replay_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    run = mqtck_diff("--replay", str(tmp_path / "none.json"), "--target", "reference")
    assert run.returncode == 2 and "not a readable JSON replay file" in run.stderr


def test_every_step_kind_round_trips_through_json() -> None:
    for cls in s.STEP_KINDS.values():
        step = cls()
        assert s.step_from_json(json.loads(json.dumps(step.to_json()))) == step


class _GarbledPulls(ReferenceTarget):
    """A reference whose pull answers do not decode, as RocketMQ 4.9.7's pull of a removed record at commit-log
    offset 0 does (it reads the first remaining segment instead): the harness's seeded protocol fault."""

    def start_pull(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        from conformance.targets import MalformedAnswer

        raise MalformedAnswer("PULL_MESSAGE body does not decode: record at byte 0: body length 524288 runs past")


def test_an_answer_outside_the_protocol_is_observed_and_listed_not_raised(tmp_path: Path) -> None:
    a, b = _GarbledPulls(str(tmp_path / "a")), ReferenceTarget(str(tmp_path / "b"))
    try:
        divergence = Lockstep(a, b).run(Program((1,), (s.Send(0, 0, count=1), s.Pull(0, 0, 0, 0))))
    finally:
        a.close()
        b.close()
    assert divergence is not None and divergence.step.kind == "pull"
    assert divergence.a == {"malformed": "PULL_MESSAGE body does not decode: record at byte 0: body length 524288 "
                                         "runs past"}
    assert "malformed" in listing(divergence, "garbled", "reference")


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "diff"


@pytest.mark.parametrize("replay_file", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_the_divergences_found_on_real_brokers_are_kept_as_replays(replay_file: Path) -> None:
    """Each divergence found against a real broker (docs/diff.md) is a replay file naming its peer and its
    expectations; the reference run as those expectations say agrees with itself on it, and the rules excuse the
    divergence the file recorded."""
    program, document = read_replay(replay_file)
    assert document["target"].startswith("peer:") and document["expect"] == document["target"].split(":", 1)[1]
    rules, settings = rules_for(document["expect"]), settings_for(document["expect"])
    assert replay(program, "reference", "reference", rules, settings) is None
    recorded = document["divergence"]
    step = program.steps[recorded["step"] - 1]
    assert step.kind == recorded["kind"]
    excused = compare(step.kind, recorded["target"], recorded["against"], rules, vars(step))
    if "repro_of" in document:
        # The minimal repro of a reviewed deviation the gate found (an [[expected]] entry whose repro names this
        # file): no rule excuses it, so a diff search stops at it unless the expectations step around it ([[avoid]]);
        # the repro itself avoids nothing.
        entries = expectations.load(document["expect"]).entries
        for rid in document["repro_of"]:
            assert rid in entries and replay_file.name in entries[rid].repro, rid
        assert excused.fields == tuple(recorded["fields"]), excused
        return
    # past-max, entries-per-permit: resolved by a [[reference]] setting, not a rule
    assert excused.fields == () or replay_file.stem.endswith(("past-max", "entries-per-permit")), excused


def test_a_given_rule_excuses_a_whole_step_only_for_the_inputs_it_names(tmp_path: Path) -> None:
    """``given = "FIELD~REGEX"`` holds on what the step asked, not on what was answered: a whole-step rule for a tag
    list written with blanks (rocketmq-rust's PULL-8) excuses that pull and no other filter's divergence."""
    rules_file = tmp_path / "impl.toml"
    rules_file.write_text(
        'implementation = "X"\nversion = "1"\n\n[[diff]]\nstep = "pull"\nfield = "*"\nkind = "deviation"\n'
        "given = 'expression~ \\|\\||\\|\\| '\n"
        'id = "PULL-8"\nreason = "blanks"\nsource = "somewhere"\n'
    )
    (rule,) = rules_for(str(rules_file))
    found = {"status": "FOUND", "messages": [0], "next": 1}
    unmatched = {"status": "NO_MATCHED_MESSAGE", "messages": [], "next": 1}
    assert compare("pull", found, unmatched, (rule,), {"expression": "A || B"}).excused == (rule,)
    assert compare("pull", found, unmatched, (rule,), {"expression": "A || B"}).fields == ()
    for other in ({"expression": "A||B"}, {"expression": "A"}, None):
        assert compare("pull", found, unmatched, (rule,), other).fields == ("messages", "status"), other
    assert compare("pull", found, found, (rule,), {"expression": "A || B"}).excused == ()
    # Refused at load: a whole-step rule without a condition on the inputs, and a condition that is not FIELD~REGEX.
    for bad, message in (("", "needs a 'given'"), ("given = 'expression'\n", "FIELD~REGEX"),
                         ("given = 'expression~('\n", "not a regular expression")):
        rules_file.write_text(
            'implementation = "X"\nversion = "1"\n\n[[diff]]\nstep = "pull"\nfield = "*"\nkind = "deviation"\n'
            f'{bad}id = "PULL-8"\nreason = "blanks"\nsource = "somewhere"\n')
        with pytest.raises(ExpectationError, match=message):
            rules_for(str(rules_file))


def test_a_malformed_rule_excuses_the_whole_step_only_when_one_side_is_malformed(tmp_path: Path) -> None:
    rules = rules_for("rocketmq-4.9.7")
    malformed = {"malformed": "PULL_MESSAGE body does not decode"}
    answered = {"code": "PULL_RETRY_IMMEDIATELY", "next": 2}
    assert compare("pull", malformed, answered, rules).fields == ()
    assert [r.id for r in compare("pull", malformed, answered, rules).excused] == ["OFFSET-7"]
    assert compare("pull", {"code": "SUCCESS", "next": 3}, answered, rules).fields == ("code", "next")


def test_bench_diff_reports_speed_and_finds_served_faults(capsys: pytest.CaptureFixture[str]) -> None:
    """``mqtck bench diff``: a control over the wire with no divergence, and a served fault found and shrunk: the
    #7358 race over remoting (race control through the runner's channel)."""
    from conformance.cli import main

    argv = ["bench", "diff", "--examples", "100", "--transports", "remoting", "--faults", "hold-no-recheck-7358"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    (control,) = result["controls"]
    assert control["divergences"] == 0 and control["sequences"] == 100 and control["steps_per_s"] > 0
    (fault,) = result["faults"]
    assert result["faults_found"] == "1/1" and fault["over"] == "remoting", fault
    assert fault["reproduced"] and fault["shrunk_steps"] == 1 and fault["step"] == "raced_long_poll", fault


def test_bench_diff_refuses_a_fault_that_is_not_a_served_one() -> None:
    command = [sys.executable, "-m", "conformance.cli", "bench", "diff", "--faults", "client-pulls-dropped-queue"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--faults: client-pulls-dropped-queue: not a broker fault" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


class _RestartNeverReturns(ReferenceTarget):
    """A reference whose runner cannot bring the broker back, as a proxy whose port was taken while it was down
    answered ``POST /restart: 500``: the harness's seeded runner fault."""

    def restart(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        from conformance.targets.control import ControlError

        raise ControlError("POST /restart: 500 restart failed: PeerError: the broker exited with 1")


def test_a_restart_that_fails_ends_the_search_as_a_broken_target_not_a_divergence(tmp_path: Path) -> None:
    from conformance.diff.runner import TargetBroken

    a, b = _RestartNeverReturns(str(tmp_path / "a")), ReferenceTarget(str(tmp_path / "b"))
    try:
        with pytest.raises(TargetBroken, match="ControlError: POST /restart: 500 restart failed"):
            search(Lockstep(a, b), a.capabilities & b.capabilities, 60, seed=0, max_steps=6)
    finally:
        a.close()
        b.close()
