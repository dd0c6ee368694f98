"""Serve a Python strategy over the exec protocol: ``python -m conformance.strategy.serve SPEC``.

SPEC is a built-in name (``averagely``) or ``package.module:Name``. The checker uses this to run a
Python strategy's twin in a second process (with another hash seed, which exposes strategies that
depend on ``hash()`` or set order), the benchmark uses it to measure the protocol, and a team can use
it to compare a Python strategy with a program in another language request by request.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from conformance.strategy.adapters import PythonStrategyUnderTest
from conformance.strategy.loader import LoadError, load_python
from conformance.strategy.model import Outcome
from conformance.strategy.protocol import decode_request, encode_response


def serve(strategy: PythonStrategyUnderTest, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer every request line on ``stdin``; a malformed line is answered with an error line."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            outcome = strategy.allocate(decode_request(line))
        except ValueError as exc:
            outcome = Outcome(error=f"bad request: {exc}")
        stdout.write(encode_response(outcome))
        stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m conformance.strategy.serve NAME|package.module:Name", file=sys.stderr)
        return 2
    try:
        strategy = load_python(args[0])
    except LoadError as exc:
        print(f"serve: error: {exc}", file=sys.stderr)
        return 2
    return serve(strategy, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
