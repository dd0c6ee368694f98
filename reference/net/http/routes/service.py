"""What the front is: its liveness probe and the capabilities a conformance run reads before choosing its tests."""

from __future__ import annotations

from fastapi import APIRouter

from reference.net.http import models as m
from reference.net.http.state import Front

#: Capabilities every instance of the front offers; ``long_poll`` only with long polling on,
#: ``clock_control`` only with a simulated clock.
BASE_CAPABILITIES = (
    "pull", "query_offset", "commit_offset", "consumer_registry", "retention_control", "allocation",
    "pop", "flow_permits", "restart", "store_layout", "flow_refusals",
)

router = APIRouter(tags=["admin"])


@router.get("/health", operation_id="health", response_model=m.Done)
async def health() -> m.Done:
    return m.Done()


@router.get("/capabilities", operation_id="capabilities", response_model=m.Capabilities)
async def capabilities(front: Front) -> m.Capabilities:
    caps = [
        *BASE_CAPABILITIES, *(("clock_control",) if front.sim else ()),
        *(("long_poll",) if front.broker.config.long_polling_enable else ()),
    ]
    return m.Capabilities(name=front.name, clock="sim" if front.sim else "real", capabilities=sorted(caps))
