"""Counter-based randomness: a value is a hash of (seed, what it is for, where it is), not a draw from
a stream.

The synthesiser writes a trace in chunks of rounds and must produce the same trace whatever the chunk
size, and it must be able to recompute a value of an earlier or later round (the pull that waits
across a round boundary needs both rounds' timings). A stateless hash (splitmix64's finaliser, the
mixer of java.util.SplittableRandom) over the coordinates gives that, vectorised over numpy arrays.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def hash64(seed: int, purpose: int, *coords: np.ndarray | int) -> np.ndarray:
    """A 64-bit hash of ``(seed, purpose, *coords)``, broadcast over the coordinate arrays."""
    with np.errstate(over="ignore"):
        h = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN + np.uint64(purpose))
        for c in coords:
            h = _mix(h ^ (np.asarray(c).astype(np.int64).astype(np.uint64) + _GOLDEN))
    return h


def uniform(seed: int, purpose: int, *coords: np.ndarray | int) -> np.ndarray:
    """Uniform floats in [0, 1)."""
    return (hash64(seed, purpose, *coords) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def below(seed: int, purpose: int, n: int | np.ndarray, *coords: np.ndarray | int) -> np.ndarray:
    """Integers in [0, n)."""
    return (uniform(seed, purpose, *coords) * n).astype(np.int64)
