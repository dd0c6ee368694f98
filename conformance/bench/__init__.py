"""Benchmarks behind ``mqtck bench NAME``. Each module here exposes:

* ``HELP``: one line for ``mqtck bench --help``;
* ``add_arguments(parser)``: its own flags;
* ``run(args) -> dict``: does the work and returns the JSON-serialisable result, which always
  includes the parameters it ran with (so a figure can be reproduced from its own output).

Timing goals live here, never in timed tests.
"""

#: Benchmark modules by name (``mqtck bench NAME``).
BENCHES: dict[str, str] = {
    "audit": "conformance.bench.audit",
    "store": "conformance.bench.store",
    "strategy": "conformance.bench.strategy",
    "conform": "conformance.bench.conform",
    "sim": "conformance.bench.sim",
    "remoting": "conformance.bench.remoting",
    "diff": "conformance.bench.diff",
    "held": "conformance.bench.held",
    "record": "conformance.bench.record",
    "e2e": "conformance.bench.e2e",
    "pop-wake": "conformance.bench.pop_wake",
    "disk": "conformance.bench.disk",
}
