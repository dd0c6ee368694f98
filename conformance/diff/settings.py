"""How ``mqtck diff`` runs the in-process reference against one implementation: the ``[[reference]]`` entries of
its expectations file, each checked to be a field of ``reference.store.config.MessageStoreConfig`` with a value of
that field's type.

The check lives here, with the one command that uses these entries, and not in :mod:`conformance.expectations`:
the expectations are read by every ``mqtck conform --expect`` run and by the report, which never import the
reference (contract ``report-not-reference``). :mod:`conformance.expectations` checks what needs no reference
(every field there, an entry per setting); an entry naming no field, or a value of the wrong type, is refused here,
when ``mqtck diff`` is about to use it.
"""

from __future__ import annotations

import dataclasses

from conformance import expectations
from conformance.expectations import ExpectationError
from reference.store.config import MessageStoreConfig


def settings_for(expect: str | None) -> dict[str, object]:
    """The MessageStoreConfig fields an in-process reference takes when diffed against the implementation of
    ``expect`` (its ``[[reference]]`` entries; none for None); ExpectationError naming the file and the entry when
    one is not a field of MessageStoreConfig or not of its type."""
    if expect is None:
        return {}
    entries = expectations.load(expect).reference
    fields = {f.name for f in dataclasses.fields(MessageStoreConfig)}
    defaults = MessageStoreConfig()
    where = expectations.resolve(expect)
    for n, entry in enumerate(entries, 1):
        if entry.setting not in fields:
            raise ExpectationError(f"{where}: reference entry {n}: setting {entry.setting!r} is not a "
                                   "MessageStoreConfig field")
        kind = type(getattr(defaults, entry.setting))
        if type(entry.value) is not kind:
            raise ExpectationError(f"{where}: reference entry {n}: field 'value' must be a {kind.__name__}")
    return {entry.setting: entry.value for entry in entries}
