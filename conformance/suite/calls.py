"""The calls a test made on its target, kept so that a failure can show the requests that produced it.

The suite's ``target`` fixture hands each test a :class:`RecordedTarget`: the target itself for every attribute,
with each public method call remembered (its name, its arguments and what it answered, shortened), the last
:data:`KEPT_CALLS` of them. When the test fails, they are attached to its result (``record_property("calls",
…)``) and the report lists them under the failure's cause, next to the observed and expected values.
"""

from __future__ import annotations

import collections
import reprlib
from typing import Any

#: How many of a test's last calls a failure shows.
KEPT_CALLS = 12
#: How long a shown argument list or answer may be.
SHOWN_CHARS = 240

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 160
_short.maxlist = _short.maxtuple = 6


class Call:
    """One remembered call; a call that returned a pending answer (a held pull, a pop) is completed when the
    test asks for the answer."""

    def __init__(self, request: str, answer: str) -> None:
        self.request, self.answer = request, answer

    def __str__(self) -> str:
        return f"{self.request} -> {self.answer}"[:SHOWN_CHARS]


class _RecordedPending:
    """A pending answer whose ``result()`` completes its :class:`Call`."""

    def __init__(self, pending: Any, call: Call) -> None:
        self._pending, self._call = pending, call

    def result(self, *args: Any, **kwargs: Any) -> Any:
        try:
            answer = self._pending.result(*args, **kwargs)
        except BaseException as error:
            self._call.answer = f"raised {type(error).__name__}: {error}"
            raise
        self._call.answer = _short.repr(answer)
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pending, name)


class RecordedTarget:
    """A target whose public method calls are remembered (the last :data:`KEPT_CALLS`)."""

    def __init__(self, target: Any) -> None:
        self.__dict__["_target"] = target
        self.__dict__["calls"] = collections.deque(maxlen=KEPT_CALLS)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value

        def recorded(*args: Any, **kwargs: Any) -> Any:
            shown = ", ".join([*(_short.repr(a) for a in args), *(f"{k}={_short.repr(v)}" for k, v in kwargs.items())])
            call = Call(f"{name}({shown})", "(pending)")
            self.calls.append(call)
            try:
                answer = value(*args, **kwargs)
            except BaseException as error:
                call.answer = f"raised {type(error).__name__}: {error}"
                raise
            if callable(getattr(answer, "result", None)) and callable(getattr(answer, "done", None)):
                return _RecordedPending(answer, call)
            call.answer = _short.repr(answer)
            return answer

        return recorded

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)
