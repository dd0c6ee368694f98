"""Control of the broker a conformance run needs and a client never does: retention now, the store's layout,
the simulated clock, a restart."""

from __future__ import annotations

from fastapi import APIRouter

from reference.clock import SimClock
from reference.net.http import models as m
from reference.net.http.errors import CLOCK_NOT_CONTROLLABLE, ERRORS
from reference.net.http.state import Front
from reference.rules.errors import InvalidRequest

router = APIRouter(tags=["admin"])


@router.post("/admin/retention", operation_id="runRetention", response_model=m.Done)
async def run_retention(front: Front) -> m.Done:
    front.broker.run_retention(manual=True)
    return m.Done()


@router.get("/admin/store-layout", operation_id="storeLayout", response_model=m.StoreLayout,
            description="The store's segment sizes: a conformance test sizes its data from them, so that a broker "
                        "started with its default (large) segments is judged as it runs, or told not applicable.")
async def store_layout(front: Front) -> m.StoreLayout:
    config = front.broker.store.config
    return m.StoreLayout(commitLogSegmentBytes=config.commit_log_segment_bytes,
                         consumeQueueSegmentUnits=config.consume_queue_units_per_segment,
                         cleanIntervalMs=config.clean_resource_interval_ms)


@router.get("/admin/clock", operation_id="clock", response_model=m.ClockState)
async def clock(front: Front) -> m.ClockState:
    return m.ClockState(clock="sim" if front.sim else "real", nowMs=front.clock.now_ms())


@router.post("/admin/clock/advance", operation_id="advanceClock", response_model=m.ClockState, responses=ERRORS)
async def advance(front: Front, body: m.AdvanceClock) -> m.ClockState:
    if not isinstance(front.clock, SimClock):
        raise InvalidRequest("ms", "the broker runs on real time; start it with --sim-clock", CLOCK_NOT_CONTROLLABLE)
    front.clock.advance(body.ms)
    return m.ClockState(clock="sim", nowMs=front.clock.now_ms())


@router.post("/admin/restart", operation_id="restartBroker", response_model=m.Done,
             description="Shut the broker down cleanly and open it again on the same data directory. Held "
                         "requests end with an empty body and consumers must register and subscribe again.")
async def restart(front: Front) -> m.Done:
    front.restart()
    return m.Done()
