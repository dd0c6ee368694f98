"""``mqtck strategy check`` on the built-ins (exit 0) and on seeded faults (exit 1, each caught by the
property it breaks, with the default profile)."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.strategy.adapters import PythonStrategyUnderTest
from conformance.strategy.declaration import Declaration
from conformance.strategy.engine import DEFAULT_EXAMPLES, CheckSettings, run_check
from conformance.strategy.report import FAIL, PASS, REPORTED
from tests.allocation import alloc_faulty

FAULTY = "tests.allocation.alloc_faulty"


@pytest.mark.req("ALLOC-10", "ALLOC-11", "ALLOC-12")
def test_averagely_passes_the_default_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", "averagely", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    statuses = {p["name"]: p["status"] for p in report["properties"]}
    assert statuses == {"validity": PASS, "partition": PASS, "balance": PASS, "stickiness": REPORTED,
                        "determinism": PASS}
    assert all(p["examples"] == DEFAULT_EXAMPLES for p in report["properties"])
    assert report["maxExamples"] == DEFAULT_EXAMPLES and report["exitCode"] == 0


@pytest.mark.req("ALLOC-13", "ALLOC-14", "ALLOC-15")
@pytest.mark.parametrize("name", ["by_circle", "consistent_hash", "machine_room", "machine_room_nearby",
                                  "by_config", "pop_share"])
def test_every_other_builtin_exits_0(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # A smaller budget than the default keeps the suite quick; properties/allocation goes deeper.
    assert main(["strategy", "check", name, "--examples", "40", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and all(p["status"] in (PASS, REPORTED) for p in report["properties"])


#: Fault → (the declaration it is checked with, the property that must catch it).
SEEDED = {
    "AssignsTwice": (Declaration(), "partition"),
    "DropsRemainder": (Declaration(), "partition"),
    "QueueIdsAreUnique": (Declaration(), "partition"),
    "SixteenSlots": (Declaration(), "partition"),
    "OutsiderIsFirst": (Declaration(), "partition"),
    "OrdersByHash": (Declaration(), "determinism"),
    "RemainderToLast": (Declaration(balance_bound=1), "balance"),
    "ModuloHash": (Declaration(stickiness_bound=0), "stickiness"),
    # Stateful or time-dependent: their answers depend on what ran before, so the whole suite runs.
    "Shuffles": (Declaration(), "determinism"),
    "FollowsTheClock": (Declaration(), "determinism"),
    "RemembersFirstAnswer": (Declaration(), "validity"),
}
#: Faults whose answers depend on the order of calls: checked with every property, as by default.
STATEFUL = {"Shuffles", "FollowsTheClock", "RemembersFirstAnswer"}


@pytest.mark.req("ALLOC-10", "ALLOC-11", "ALLOC-12", "ALLOC-13")
@pytest.mark.parametrize("fault", list(SEEDED))
def test_seeded_fault_is_caught_with_the_default_profile(fault: str) -> None:
    """Default examples and seed. A stateless fault is run with just its property: each property's
    search is independent of the others (same seed, own examples), so the verdict is the one the
    full default run gives, at a fraction of the time."""
    declaration, catcher = SEEDED[fault]
    strategy = PythonStrategyUnderTest(getattr(alloc_faulty, fault), spec=f"{FAULTY}:{fault}")
    only = () if fault in STATEFUL else (catcher,)
    report = run_check(strategy, declaration, CheckSettings(properties=only))
    assert report.exit_code == 1
    result = next(r for r in report.results if r.name == catcher)
    assert result.status == FAIL and result.failure is not None
    assert result.failure.rows, "the counterexample lists the consumers"


@pytest.mark.req("ALLOC-10")
def test_the_cli_prints_the_shrunk_group_as_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", f"{FAULTY}:DropsRemainder", "--property", "partition",
                 "--shrink-seconds", "600"]) == 1
    out = capsys.readouterr().out
    assert "partition" in out and "fail" in out
    assert "is owned by nobody" in out and "(nobody)" in out and "cidAll (2)" in out
    assert "--seed 0" in out


def test_json_output_carries_the_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    # The time budget is raised so that the shrink ends by its call budget, not by a loaded machine's clock:
    # with the default 4 s, a CI run under load reported a counterexample not yet shrunk to one shared queue.
    assert main(["strategy", "check", f"{FAULTY}:AssignsTwice", "--property", "partition", "--json",
                 "--shrink-seconds", "600"]) == 1
    report = json.loads(capsys.readouterr().out)
    (partition,) = report["properties"]
    example = partition["counterexample"]
    assert partition["status"] == FAIL and example["problems"]
    owners = [row["consumer"] for row in example["rows"] if "also owned by" in row["note"]]
    assert len(owners) == 2
    assert set(owners) <= set(example["scenario"]["cidAll"])


def test_the_same_seed_gives_the_same_counterexample() -> None:
    def shrunk():
        strategy = PythonStrategyUnderTest(alloc_faulty.DropsRemainder)
        settings = CheckSettings(seed=7, properties=("partition",), shrink_seconds=600)  # ended by calls, not time
        report = run_check(strategy, Declaration(), settings)
        return report.results[0].failure.scenario

    assert shrunk() == shrunk()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["strategy", "check"], "name a strategy"),
        (["strategy", "check", "averagely", "--exec", "true"], "not both"),
        (["strategy", "check", "fastest"], "unknown strategy 'fastest'"),
        (["strategy", "check", "no_such_module_xyz:Strategy"], "cannot import"),
        (["strategy", "check", "json:dumps"], "no allocate method"),
        (["strategy", "check", "averagely", "--params", "{"], "--params is not JSON"),
        (["strategy", "check", "averagely", "--property", "pop-share"], "does not apply"),
        (["strategy", "check", "averagely", "--seed", "soon"], "--seed must be"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, message, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_list_names_every_builtin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("averagely", "by_circle", "consistent_hash", "machine_room_nearby", "pop_share"):
        assert name in out


def test_a_property_failure_reads_as_a_table_of_consumers() -> None:
    from conformance.strategy.context import CheckContext
    from conformance.strategy.properties import check_partition
    from conformance.strategy.render import failure_text
    from conformance.strategy.scenario import Scenario
    from reference.allocation import MessageQueue

    scenario = Scenario("g", (MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)), ("c1", "c2"))
    ctx = CheckContext(PythonStrategyUnderTest(alloc_faulty.AssignsTwice), Declaration())
    failure = check_partition(ctx, scenario)
    assert failure is not None
    text = failure_text("partition", failure)
    assert "mqAll (2): T/b:0-1" in text and "cidAll (2): c1, c2" in text
    assert "│ c1 " in text and "b:0-1" in text and "T/b/1 also owned by c2" in text


class _EveryoneGetsEverything:
    name = "BROADCAST"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        return list(mq_all)


@pytest.mark.req("ALLOC-10")
def test_broadcasting_is_a_different_promise_from_clustering() -> None:
    def verdicts(declaration: Declaration) -> dict[str, str]:
        strategy = PythonStrategyUnderTest(_EveryoneGetsEverything())
        report = run_check(strategy, declaration, CheckSettings(examples=30))
        return {r.name: r.status for r in report.results}

    assert verdicts(Declaration(model="broadcasting"))["broadcast"] == PASS
    assert verdicts(Declaration())["partition"] == FAIL


@pytest.mark.req("ALLOC-10")
def test_an_interface_defect_is_reported_once_by_validity_not_again_as_its_consequences() -> None:
    """A strategy returning a queue instead of a list: validity fails on it; partition, balance, stickiness and
    determinism do not also fail (no unowned queue, no "another process answered differently" for it)."""
    strategy = PythonStrategyUnderTest(alloc_faulty.ReturnsOneQueue, spec=f"{FAULTY}:ReturnsOneQueue")
    report = run_check(strategy, Declaration(), CheckSettings())
    statuses = {r.name: r.status for r in report.results}
    assert statuses["validity"] == FAIL and report.exit_code == 1
    assert statuses["partition"] == PASS and statuses["determinism"] == PASS, statuses
    failure = next(r for r in report.results if r.name == "validity").failure
    assert failure is not None and "not a list" in failure.summary
