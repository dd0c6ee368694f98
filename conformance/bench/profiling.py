"""The cProfile summary the benches print: where the time went, as JSON rows."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path


def top_functions(profile: cProfile.Profile, limit: int) -> list[dict[str, object]]:
    """The ``limit`` functions with the most own time (not cumulative: that names the callers, not the cost)."""
    stats = pstats.Stats(profile)
    rows = []
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((tottime, f"{Path(filename).name}:{line}({name})", calls, cumtime))
    rows.sort(reverse=True)
    return [
        {"function": fn, "calls": calls, "own_s": round(own, 4), "cumulative_s": round(cum, 4)}
        for own, fn, calls, cum in rows[:limit]
    ]
