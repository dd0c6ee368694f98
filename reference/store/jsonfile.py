"""Small JSON state files (topic table, consumer offsets), replaced atomically.

Written to a temporary file in the same directory, fsync'ed, then renamed over the old one
(os.replace is atomic on POSIX), so a crash leaves either the old table or the new one, never half.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json_atomic(path: Path, document: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(document, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> object | None:
    """The document at ``path``, or None if there is none yet."""
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
