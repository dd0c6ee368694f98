"""mqtck's user-facing side, by the job each folder serves.

==========================  ===================================================================================
CI gating                   ``spec/`` (requirements with IDs), ``suite/`` (the tests), ``targets/`` (the interface
                            and one adapter per wire; ``targets/registry.py`` opens one by address), ``mutants/``
                            (seeded faults the suite must kill), ``peers/`` (real brokers from Maven Central),
                            ``expectations/`` (reviewed deviations), ``client_check/`` (judging clients),
                            ``diff/`` (two targets in lockstep, the first divergence shrunk)
property-testing strategies ``strategy/``
trace audits                ``audit/`` (PySpark; reads only ``reference.rules`` of the reference)
reports                     ``report/`` (JUnit, JSON, HTML, the results matrix)
CLI                         ``cli.py``, ``commands/`` (one module per ``mqtck`` command), ``bench/``, ``cliargs.py``
==========================  ===================================================================================

The folders stay where they are rather than under a ``gating/`` package: ``conformance.suite`` (``pytest --pyargs
conformance.suite``) and ``conformance.targets.Target`` are contracts users depend on.
"""
