"""Turn a strategy's name into a strategy under test: a built-in or a Python object by import path."""

from __future__ import annotations

import importlib
import os
import sys

from conformance.strategy.adapters import PythonStrategyUnderTest
from conformance.strategy.declaration import BUILTIN_DECLARATIONS, Declaration
from reference.allocation import BUILTIN_NAMES
from reference.allocation.registry import BuiltinStrategy


class LoadError(Exception):
    """The name does not resolve to a strategy. One line."""


def load_python(spec: str) -> PythonStrategyUnderTest:
    """``averagely`` (a built-in) or ``package.module:Name`` (a class or an instance).

    The current directory is importable, as with ``python -m``, so a strategy next to the user's
    code needs no installation.
    """
    if ":" not in spec:
        if spec not in BUILTIN_NAMES:
            raise LoadError(
                f"unknown strategy {spec!r}: use a built-in ({', '.join(BUILTIN_NAMES)}), "
                "package.module:Name, or --exec CMD"
            )
        return PythonStrategyUnderTest(BuiltinStrategy(spec), spec=spec, label=spec)
    module_name, _, attr_path = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raises while importing
        raise LoadError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    for part in attr_path.split("."):
        if not hasattr(target, part):
            raise LoadError(f"{module_name!r} has no attribute {attr_path!r}")
        target = getattr(target, part)
    if not hasattr(target, "allocate"):
        raise LoadError(f"{spec!r} has no allocate method; it is not a strategy")
    return PythonStrategyUnderTest(target, spec=spec, label=spec)


def builtin_declaration(spec: str | None) -> Declaration:
    """What a built-in promises; nothing beyond the basics for anything else."""
    return BUILTIN_DECLARATIONS.get(spec or "", Declaration())
