"""Errors a strategy raises for arguments it refuses, worded as RocketMQ's exceptions.

RocketMQ strategies throw ``IllegalArgumentException`` with fixed messages; the golden vectors record
them as ``"<java class>: <message>"``. :class:`AllocationError` carries both parts so that
``str(error)`` is exactly that line, which lets a differential test compare errors as text and lets
the exec protocol forward them unchanged.
"""

from __future__ import annotations

ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
NULL_POINTER = "java.lang.NullPointerException"
INDEX_OUT_OF_BOUNDS = "java.lang.ArrayIndexOutOfBoundsException"

#: The messages of ``AbstractAllocateMessageQueueStrategy.check`` (and of the POP broker's own check).
CURRENT_CID_EMPTY = "currentCID is empty"
MQ_ALL_EMPTY = "mqAll is null or mqAll empty"
CID_ALL_EMPTY = "cidAll is null or cidAll empty"


class AllocationError(Exception):
    """A strategy refused its arguments. ``java_class`` names the exception RocketMQ throws."""

    def __init__(self, message: str, java_class: str = ILLEGAL_ARGUMENT) -> None:
        super().__init__(message)
        self.message = message
        self.java_class = java_class

    def __str__(self) -> str:
        return f"{self.java_class}: {self.message}"
