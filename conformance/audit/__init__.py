"""Trace audits on Spark: every derivation of trace schema v1 (``docs/trace-schema.md``), as PySpark
DataFrame code, over traces far larger than memory.

Theory of operation
-------------------
``load`` reads Parquet or JSON Lines into typed schema-v1 columns and notes what is wrong with a row at
the format level; ``validate`` decides, per row, whether it is good (``badrows`` reports the rest).
``frames`` builds a small *catalog* (runs and their horizons, who recorded what, subscriptions) on the
driver and gives every derivation its events through *views* (one recorder per operation).

Each derivation family is one module returning rows of the findings schema (``schema``): ``messages``
(lost, expired, pending), ``commits`` (unsafe commit), ``drops`` (pull and commit after drop) and
``long_poll`` read the *queue pass* (``queues``: one shuffle per consumer and queue, four window scans
over narrow rows); ``offsets`` derives its Spark expression from the reference's correction table;
``ownership``, ``pop``, ``permits`` and ``duplicates`` (over ``consumption``) have their own scans.
``derive`` unions them; ``metrics`` adds the numbers the plots need, in the same Spark action.
``categories`` names each anomaly and the requirement it breaks; ``report`` writes summary.json and the
self-contained report.html (``svg`` draws the plots); ``job`` runs it all (also under spark-submit) and
``progress`` shows it. ``synth`` writes large synthetic traces with exactly the injected faults.

No Python runs per row: the only collected data are the catalog, the findings and the plot metrics.
"""
