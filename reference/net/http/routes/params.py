"""The path parameters the routes share: one spelling of each name's rule, so every path documents it alike."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from reference.net.http import models as m

TopicPath = Annotated[str, Path(pattern=m.NAME_PATTERN, examples=["TopicA"])]
GroupPath = Annotated[str, Path(pattern=m.NAME_PATTERN, examples=["GroupA"])]
QueuePath = Annotated[int, Path(ge=0, le=m.INT32_MAX, examples=[0])]
ConnPath = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$", examples=["conn-1"])]
ClientPath = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f/]+$", examples=["c1"])]
