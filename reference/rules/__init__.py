"""The specification in executable form: tables and pure functions every part of the kit reads.

Theory of operation
-------------------
A rule lives here when more than the reference's core needs it: the store status of a pull at an offset and
the offset correction (:mod:`.status`), status to response code and the response codes themselves
(:mod:`.codes`), tag filtering and subscription parsing (:mod:`.filter`), the names of system topics and of
the properties a retried or revived message carries (:mod:`.topics`), the trace schema
(:mod:`.trace_schema`), the broker's named constants (:mod:`.constants`) and the error every rule raises
for bad input (:mod:`.errors`).

This package is a leaf: it imports nothing else of the project (an import-linter contract in
``pyproject.toml`` keeps it so). The core, the transports, the targets, the simulator and the auditor read
it; the auditor reads nothing else of the reference, so it judges any implementation's trace by the same
rules the reference runs on, never by the reference's code.
"""
