"""The seeded broker faults served over the wire: ``mqtck broker --remoting --control --mutant NAME`` and
``mqtck conform --target <its remoting:// target> --only <what the fault breaks>``.

Every broker fault of the catalogue (a ``Mutant`` whose ``components`` swap a broker part) is either caught over
the wire (exit 1, a broken requirement fails) or listed in :data:`UNREACHABLE` with the reason the remoting
protocol and the control channel cannot reach it. Those are run too and must survive: when a new test catches
one, this module says so, and the fault moves to the caught ones. A fault whose case arises on wall time only by
chance is served on simulated time (:data:`SIMULATED_TIME`), so that its catch does not depend on the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.mutants import CATALOGUE
from conformance.spec import requirements
from conformance.targets.launch import launch_broker

pytestmark = pytest.mark.slow

_NO_PERMITS = "Pulsar-style permits are not a RocketMQ remoting feature (the in-process and HTTP targets test them)"
#: Broker faults the suite cannot catch through ``remoting://`` with a control channel, and why.
UNREACHABLE = {
    "flow-batch-counts-as-one-permit": _NO_PERMITS,
    "flow-permits-go-negative": _NO_PERMITS,
    "flow-filter-sends-every-entry": _NO_PERMITS,
    "flow-ignores-dispatch-rate": _NO_PERMITS,
    "flow-unacked-released-below-limit": _NO_PERMITS,
    "hold-answers-twice": "the remoting front writes a held request's answer once (RemotingConnection._deliver forgets "
                          "the request with its answer), so the core's second answer never reaches the wire; the "
                          "in-process trace shows it (LPOLL-1.once)",
}
#: Broker faults served on simulated time (``--sim-clock``), and why: on wall time the case they break arises by
#: chance only, and a loaded machine can make it not arise at all.
SIMULATED_TIME = {
    "pop-change-keeps-the-instant": "PACK-9's case is a change of invisible time within its pop's millisecond; a pop "
                                    "and its change take 1-2 ms on loopback, and beside CI's other tests none of 200 "
                                    "tries landed in one",
}
#: The runner as gating uses it: 1 MiB commit-log segments, the clean service every second; and silent consumer
#: channels expiring within seconds, so that CGRP-6's expiry is judged over the wire.
GATING_STORE = ("--segment-bytes", str(1 << 20), "--clean-interval-ms", "1000", "--channel-expired-ms", "3000",
                "--channel-scan-ms", "1000")
BROKER_FAULTS = sorted(name for name, mutant in CATALOGUE.items() if mutant.is_broker_fault)
CAUGHT = [name for name in BROKER_FAULTS if name not in UNREACHABLE]


def test_every_broker_fault_is_caught_or_explained() -> None:
    assert set(UNREACHABLE) <= set(BROKER_FAULTS), "UNREACHABLE names a fault that is not a broker fault"
    assert set(SIMULATED_TIME) <= set(CAUGHT), "SIMULATED_TIME names a fault that is not caught over the wire"
    assert CAUGHT, "no broker fault is caught over the wire"


def _conform_over_wire(name: str, tmp_path: Path) -> tuple[int, dict[str, str]]:
    """Serve the fault, run the suite's tests of what it breaks: (exit code, status per broken ID)."""
    mutant = CATALOGUE[name]
    clock = ("--sim-clock",) if name in SIMULATED_TIME else ()
    server = launch_broker("remoting", tmp_path / "data", "--control", *clock, "--mutant", name, *GATING_STORE)
    try:
        assert "?control=" in server.url, server.url
        result = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "conform", "--target", server.url, "--only", *mutant.breaks,
             "--report-dir", str(tmp_path / "reports"), "--json"],
            capture_output=True, text=True, timeout=600,
        )
    finally:
        err = server.stop()
    assert "Traceback" not in err, err
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert "restart" in doc["capabilities"] and "retention_expire" in doc["capabilities"], doc["capabilities"]
    return result.returncode, {r["id"]: r["status"] for r in doc["requirements"] if r["id"] in mutant.breaks}


@pytest.mark.parametrize("name", CAUGHT)
def test_broker_fault_is_caught_over_the_wire(name: str, tmp_path: Path) -> None:
    code, statuses = _conform_over_wire(name, tmp_path)
    # Caught: a requirement it breaks fails (exit 1 when that is a MUST; a fault that breaks a SHOULD only, as PACK-9's,
    # may still break a MUST on its way, as pull-no-match-not-found's wrong code does to the pulls that follow).
    must = any(requirements()[r].level == "MUST" for r in CATALOGUE[name].breaks)
    assert "fail" in statuses.values() and code in ((1,) if must else (0, 1)), (
        f"{name} ({', '.join(CATALOGUE[name].breaks)}) survived the suite over remoting: {statuses}"
    )


@pytest.mark.parametrize("name", sorted(UNREACHABLE))
def test_unreachable_broker_fault_survives(name: str, tmp_path: Path) -> None:
    code, statuses = _conform_over_wire(name, tmp_path)
    assert code == 0 and "fail" not in statuses.values(), (
        f"{name} is now caught over remoting ({statuses}): move it from UNREACHABLE to the caught faults"
    )
