"""The allocation properties, as plain functions of a check context and one scenario.

Each returns ``None`` when the property holds for the scenario and a :class:`~.report.Failure`
otherwise. They are written once and used twice: by the engine behind ``mqtck strategy check`` and by
the pytest suite in ``properties/allocation`` (against every built-in strategy).

An input is *well-formed* when ``mq_all`` and ``cid_all`` are non-empty and the current id is not
empty. A member of the group must get an answer for well-formed input; anything else (an empty queue
list, an outsider, an empty id) may be refused, as RocketMQ refuses it, but must never yield queues
it should not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hypothesis import target

from conformance.strategy.context import CheckContext, Evaluation
from conformance.strategy.declaration import (
    BROADCASTING,
    CLUSTERING,
    CONFIGURED,
    POP_SHARE,
    ROOM_BY_IDC,
    ROOM_NEARBY,
    Declaration,
)
from conformance.strategy.model import Outcome
from conformance.strategy.report import Failure, Row
from conformance.strategy.scenario import Scenario
from reference.allocation import MessageQueue, strategy_from_params
from reference.allocation.machine_room import broker_room
from reference.allocation.pop import POP_ALL_QUEUE_ID, shares_everything

#: Shown in a row whose consumer may be refused or get nothing.
NOTHING = "nothing (or a refusal)"


def _share(outcome: Outcome) -> frozenset[MessageQueue]:
    return frozenset(outcome.queues)


def _rows(scenario: Scenario, evaluation: Evaluation, notes: dict[str, str] | None = None) -> tuple[Row, ...]:
    notes = notes or {}
    return tuple(Row(cid, None, evaluation[cid], notes.get(cid, "")) for cid in scenario.asked)


def _outsider_note(scenario: Scenario, cid: str) -> str:
    return "" if cid in scenario.cid_all else "not in cidAll"


def _room_of_client(cid: str) -> str:
    """Nearby convention: the text before the first ``-`` (as ``DashPrefixResolver``)."""
    return cid.split("-", 1)[0]


def _room_of_queue(mq: MessageQueue) -> str:
    return mq.broker_name.split("-", 1)[0]


# --- validity ---------------------------------------------------------------------------------


def check_validity(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """Every share is a list of queues of ``mq_all`` without repeats; members of a well-formed group
    are answered; the arguments are left unchanged."""
    evaluation = ctx.evaluate(scenario)
    pop = ctx.declaration.model == POP_SHARE
    allowed = set(scenario.mq_all)
    if pop:  # "pop every queue of this broker"
        allowed |= {MessageQueue(mq.topic, mq.broker_name, POP_ALL_QUEUE_ID) for mq in scenario.mq_all}
    well_formed = bool(scenario.mq_all) and bool(scenario.cid_all)
    problems: list[str] = []
    notes: dict[str, str] = {}
    for cid in scenario.asked:
        outcome = evaluation[cid]
        if outcome.defect:
            problem = outcome.defect
        elif outcome.refused:
            member = cid in scenario.cid_all
            problem = f"refused a well-formed request: {outcome.error}" if well_formed and member else ""
        elif not scenario.mq_all and outcome.queues:
            problem = "got queues although mqAll is empty"
        elif foreign := [mq for mq in outcome.queues if mq not in allowed]:
            problem = f"got {len(foreign)} queue(s) that are not in mqAll"
        elif not pop and len(set(outcome.queues)) != len(outcome.queues):
            problem = "got the same queue more than once"
        else:
            problem = ""
        if problem:
            notes[cid] = problem
            problems.append(f"{cid}: {problem}")
    if not problems:
        return None
    return Failure(problems[0], scenario, _rows(scenario, evaluation, notes), tuple(problems))


# --- group-level models -----------------------------------------------------------------------


def _coverable(declaration: Declaration, scenario: Scenario) -> list[MessageQueue]:
    """Queues the group must cover: all, or (by IDC) those of brokers in the group's rooms."""
    if declaration.machine_room == ROOM_BY_IDC:
        rooms = set(scenario.params.get("consumeridcs", ()))
        return [mq for mq in scenario.mq_all if broker_room(mq.broker_name) in rooms]
    return list(scenario.mq_all)


def check_partition(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """Clustering: every queue to exactly one member; nothing to a consumer outside the group."""
    evaluation = ctx.evaluate(scenario)
    owners: dict[MessageQueue, list[str]] = defaultdict(list)
    for cid in scenario.cid_all:
        for mq in _share(evaluation[cid]):
            owners[mq].append(cid)
    problems: list[str] = []
    notes: dict[str, list[str]] = defaultdict(list)
    unowned = [mq for mq in _coverable(ctx.declaration, scenario) if not owners.get(mq)] if scenario.cid_all else []
    problems += [f"{_q(mq)} is owned by nobody" for mq in unowned]
    for mq, cids in owners.items():
        if len(cids) > 1:
            problems.append(f"{_q(mq)} is owned by {len(cids)} consumers: {', '.join(cids)}")
            for cid in cids:
                notes[cid].append(f"{_q(mq)} also owned by {', '.join(c for c in cids if c != cid)}")
    for cid in scenario.outsiders:
        if evaluation[cid].queues:
            problems.append(f"{cid!r} is not in cidAll but got {len(evaluation[cid].queues)} queue(s)")
            notes[cid].append("not in cidAll: must get nothing")
    if not problems:
        return None
    rows = _rows(scenario, evaluation, {cid: "; ".join(n) for cid, n in notes.items()})
    if unowned:
        rows += (Row("(nobody)", None, Outcome(queues=tuple(unowned)), "owned by no member"),)
    return Failure(problems[0], scenario, rows, tuple(problems))


def _expect_each(
    scenario: Scenario, evaluation: Evaluation, expected: dict[str, frozenset[MessageQueue] | None]
) -> tuple[list[str], tuple[Row, ...]]:
    """Compare shares as sets, for the consumers in ``expected`` (``None``: "nothing, or a refusal");
    the others are listed for context only."""
    problems: list[str] = []
    rows: list[Row] = []
    for cid in scenario.asked:
        got = evaluation[cid]
        if cid not in expected:
            rows.append(Row(cid, None, got, _outsider_note(scenario, cid)))
            continue
        want = expected[cid]
        ok = (got.refused or not got.queues) if want is None else (not got.refused and _share(got) == want)
        shown: Outcome | str = NOTHING if want is None else Outcome(queues=_sorted(want))
        rows.append(Row(cid, shown, got, "" if ok else "differs"))
        if not ok:
            problems.append(f"{cid}: share differs from the expected one")
    return problems, tuple(rows)


def check_broadcast(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """Broadcasting: every member gets every queue."""
    evaluation = ctx.evaluate(scenario)
    everything = frozenset(scenario.mq_all) or None
    problems, rows = _expect_each(scenario, evaluation, dict.fromkeys(scenario.cid_all, everything))
    return Failure(problems[0], scenario, rows, tuple(problems)) if problems else None


def check_configured(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """Configured: every member gets exactly the configured ``messageQueueList``."""
    evaluation = ctx.evaluate(scenario)
    listed = scenario.params.get("messageQueueList") or []
    configured = frozenset(MessageQueue.from_json(q) for q in listed)
    problems, rows = _expect_each(scenario, evaluation, dict.fromkeys(scenario.cid_all, configured))
    return Failure(problems[0], scenario, rows, tuple(problems)) if problems else None


def expected_pop_shares(scenario: Scenario) -> dict[str, frozenset[MessageQueue] | None]:
    """The POP rules (seed 004 §4.1.2), stated from scratch over the inner strategy's own shares."""
    params = scenario.params
    k = int(params["popShareQueueNum"])
    mq_all, cid_all, n = scenario.mq_all, scenario.cid_all, len(scenario.cid_all)
    if shares_everything(k, n):  # members only: whether an outsider may pop everything is not specified
        every = frozenset(MessageQueue(mq.topic, mq.broker_name, POP_ALL_QUEUE_ID) for mq in mq_all)
        return dict.fromkeys(cid_all, every or None)
    expected: dict[str, frozenset[MessageQueue] | None] = dict.fromkeys(scenario.outsiders)  # nothing
    if n > len(mq_all):  # popShareQueueNum ignored: one queue each, by position
        for i, cid in enumerate(cid_all):
            expected[cid] = frozenset({mq_all[i % len(mq_all)]}) if mq_all else None
        return expected
    inner = strategy_from_params(params["innerStrategy"], {})
    own = {cid: frozenset(inner.allocate(scenario.consumer_group, cid, list(mq_all), list(cid_all))) for cid in cid_all}
    for i, cid in enumerate(cid_all):
        expected[cid] = frozenset().union(*(own[cid_all[(i + j) % n]] for j in range(k + 1)))
    return expected


def check_pop_share(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """POP: own share plus the shares of the popShareQueueNum members after it (wrapping); all
    queues as id −1 when popShareQueueNum ≤ 0 or ≥ n − 1; one queue each when n > queues."""
    evaluation = ctx.evaluate(scenario)
    problems, rows = _expect_each(scenario, evaluation, expected_pop_shares(scenario))
    if not problems:
        return None
    k = scenario.params["popShareQueueNum"]
    return Failure(f"popShareQueueNum={k}: {problems[0]}", scenario, rows, tuple(problems))


# --- measured: balance and stickiness ---------------------------------------------------------

#: The observation made when one consumer got every queue of a group and the others none (value: the queues).
ALL_TO_ONE = "balance: all to one"


def check_balance(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """Largest share minus smallest share, over the members, within the declared bound."""
    if not scenario.cid_all:
        return None
    evaluation = ctx.evaluate(scenario)
    sizes = {cid: len(_share(evaluation[cid])) for cid in scenario.cid_all}
    spread = max(sizes.values()) - min(sizes.values())
    ctx.observe("balance", spread)
    if len(sizes) > 1 and len(scenario.mq_all) > 1 and spread == len(scenario.mq_all):
        # Every queue on one consumer, none on the others: valid and a partition, yet no sharing at all.
        ctx.observe(ALL_TO_ONE, len(scenario.mq_all))
    bound = ctx.declaration.balance_bound
    if bound is None:
        target(spread, label="balance spread")
        return None
    if spread <= bound:
        return None
    notes = {cid: f"{size} queue(s)" for cid, size in sizes.items()}
    summary = f"shares range from {min(sizes.values())} to {max(sizes.values())} queues (bound {bound})"
    return Failure(summary, scenario, _rows(scenario, evaluation, notes), (summary,))


def _collateral(
    before: Evaluation, after: Evaluation, stable: Iterable[str], joining: bool
) -> dict[str, frozenset[MessageQueue]]:
    """Queues a consumer that stays gained (on a join) or lost (on a leave): moves that the join or
    leave did not make necessary, since only the newcomer should take and only the leaver give."""
    moved = {}
    for cid in stable:
        old, new = _share(before[cid]), _share(after[cid])
        delta = new - old if joining else old - new
        if delta:
            moved[cid] = delta
    return moved


def check_stickiness(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """When one consumer joins or leaves, the others should not trade queues among themselves."""
    if not scenario.mq_all or not scenario.cid_all:
        return None
    base = ctx.evaluate(scenario)
    worst: tuple[int, bool, Scenario, dict[str, frozenset[MessageQueue]]] | None = None
    for changed, joining in ((scenario.after_join(), True), (scenario.after_leave(), False)):
        if changed is None:
            continue
        stable = [cid for cid in scenario.cid_all if cid in changed.cid_all]
        moved = _collateral(base, ctx.evaluate(changed), stable, joining)
        count = len(frozenset().union(*moved.values())) if moved else 0
        if worst is None or count > worst[0]:
            worst = (count, joining, changed, moved)
    if worst is None:
        return None
    count, joining, changed, moved = worst
    ctx.observe("stickiness", count)
    bound = ctx.declaration.stickiness_bound
    if bound is None:
        target(count, label="collateral moves")
        return None
    if count <= bound:
        return None
    after = ctx.evaluate(changed)
    event = f"{scenario.joiner} joined" if joining else f"{scenario.leaver} left"
    verb = "gained" if joining else "lost"
    empty = Outcome()
    rows = tuple(
        Row(cid, base.get(cid, empty), after.get(cid, empty), f"{verb} {_qs(moved[cid])}" if cid in moved else "")
        for cid in dict.fromkeys((*scenario.cid_all, *changed.cid_all))
    )
    summary = f"after {event}, {count} queue(s) moved between consumers that stayed (bound {bound})"
    return Failure(summary, scenario, rows, (summary,), ("before", f"after {event}"))


# --- machine rooms ----------------------------------------------------------------------------


def check_machine_room(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """By IDC: only queues of the group's rooms. Nearby: a queue goes to a consumer of its own room
    whenever that room has consumers (rooms without consumers are covered by partition)."""
    evaluation = ctx.evaluate(scenario)
    notes: dict[str, str] = {}
    if ctx.declaration.machine_room == ROOM_BY_IDC:
        rooms = set(scenario.params.get("consumeridcs", ()))
        for cid in scenario.cid_all:
            foreign = [mq for mq in evaluation[cid].queues if broker_room(mq.broker_name) not in rooms]
            if foreign:
                notes[cid] = f"got {_qs(foreign)}, outside rooms {sorted(rooms)}"
    else:
        staffed = {_room_of_client(cid) for cid in scenario.cid_all}
        for cid in scenario.cid_all:
            mine = _room_of_client(cid)
            foreign = [mq for mq in evaluation[cid].queues if _room_of_queue(mq) in staffed - {mine}]
            if foreign:
                notes[cid] = f"in room {mine} but got {_qs(foreign)} of a room with its own consumers"
    if not notes:
        return None
    problems = tuple(f"{cid}: {note}" for cid, note in notes.items())
    return Failure(problems[0], scenario, _rows(scenario, evaluation, notes), problems)


# --- determinism ------------------------------------------------------------------------------


def check_determinism(ctx: CheckContext, scenario: Scenario) -> Failure | None:
    """The same request gives the same share: asked twice in a row, compared with the answer an
    earlier property got (which catches clocks and hidden state), and asked of a second process
    (which catches ``hash()`` and set order)."""
    earlier = ctx.earlier(scenario)
    first = ctx.evaluate(scenario, fresh=True)
    second = ctx.evaluate(scenario, fresh=True)
    failure = _compare(scenario, first, second, "asked twice, the strategy answered differently",
                       ("first call", "second call"))
    if failure is None and earlier is not None:
        failure = _compare(scenario, earlier, first, "asked again later, the strategy answered differently",
                           ("earlier call", "later call"))
    if failure is not None:
        return failure
    other = ctx.evaluate_in_twin(scenario)
    if other is None:
        return None
    return _compare(scenario, first, other, "another process answered differently",
                    ("this process", "other process"))


def _compare(
    scenario: Scenario, one: Evaluation, two: Evaluation, summary: str, columns: tuple[str, str]
) -> Failure | None:
    differs = [cid for cid in scenario.asked if one[cid].normalized() != two[cid].normalized()]
    if not differs:
        return None
    rows = tuple(Row(cid, one[cid], two[cid], "differs" if cid in differs else "") for cid in scenario.asked)
    problems = tuple(f"{cid}: {summary}" for cid in differs)
    return Failure(f"{summary} ({differs[0]})", scenario, rows, problems, columns)


# --- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Property:
    name: str
    summary: str
    check: Callable[[CheckContext, Scenario], Failure | None]
    applies: Callable[[Declaration], bool]
    required: Callable[[Declaration], bool]


def _always(_: Declaration) -> bool:
    return True


def _on_valid_answers(check: Callable[[CheckContext, Scenario], Failure | None]
                      ) -> Callable[[CheckContext, Scenario], Failure | None]:
    """``check``, judged only where every answer keeps the interface: an answer that is not a list of queues is
    validity's finding, and counted again as an unowned queue, an odd share or a process that "answered
    differently" it would only bury the one cause under its consequences."""

    def guarded(ctx: CheckContext, scenario: Scenario) -> Failure | None:
        if any(outcome.defect for outcome in ctx.evaluate(scenario).values()):
            return None
        return check(ctx, scenario)

    guarded.__doc__ = check.__doc__
    return guarded


PROPERTIES: tuple[Property, ...] = (
    Property("validity", "shares are queues of mqAll, no repeats, well-formed input answered",
             check_validity, _always, _always),
    Property("partition", "each queue to exactly one member, nothing to outsiders",
             _on_valid_answers(check_partition), lambda d: d.model == CLUSTERING, _always),
    Property("broadcast", "every member gets every queue",
             _on_valid_answers(check_broadcast), lambda d: d.model == BROADCASTING, _always),
    Property("configured", "every consumer gets its configured list",
             _on_valid_answers(check_configured), lambda d: d.model == CONFIGURED, _always),
    Property("pop-share", "own share + the next popShareQueueNum members' (POP)",
             _on_valid_answers(check_pop_share), lambda d: d.model == POP_SHARE, _always),
    Property("machine-room", "queues stay in the consumer's machine room",
             _on_valid_answers(check_machine_room), lambda d: d.machine_room in (ROOM_BY_IDC, ROOM_NEARBY), _always),
    Property("balance", "largest minus smallest share within the bound",
             _on_valid_answers(check_balance), lambda d: d.model == CLUSTERING, lambda d: d.balance_bound is not None),
    Property("stickiness", "queues moved between staying consumers on a join or leave",
             _on_valid_answers(check_stickiness), _always, lambda d: d.stickiness_bound is not None),
    Property("determinism", "same input, same share: twice, and in another process",
             _on_valid_answers(check_determinism), _always, _always),
)
PROPERTY_NAMES = tuple(p.name for p in PROPERTIES)


def applicable(declaration: Declaration) -> list[Property]:
    return [p for p in PROPERTIES if p.applies(declaration)]


# --- compact text for queues (used in problems; render.py uses the same) ---------------------------


def _sorted(queues: Iterable[MessageQueue]) -> tuple[MessageQueue, ...]:
    return tuple(sorted(queues, key=lambda mq: mq.sort_key))


def _q(mq: MessageQueue) -> str:
    return f"{mq.topic}/{mq.broker_name}/{mq.queue_id}"


def _qs(queues: Iterable[MessageQueue]) -> str:
    return ", ".join(_q(mq) for mq in _sorted(queues))
