"""schemathesis hooks of the fuzz run (``SCHEMATHESIS_HOOKS=fuzz_hooks``, set by test_schemathesis).

The fuzzed server runs on the real clock. A pop that finds nothing is held for its ``pollTimeMs``,
which the schema lets be up to an hour, so most generated pops would outlive the client's request
timeout and be reported as network errors without testing anything more. Just before each call, an
in-range poll time is lowered to :data:`FUZZ_MAX_POLL_MS`: still a valid value (the case stays
positive or negative as generated) and still a held pop, answered within the client's timeout. This
is what ``--short-polling`` does for pulls on the server side.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from reference.broker.pop.config import PopConfig

#: Longest a fuzzed pop is held.
FUZZ_MAX_POLL_MS = 200


def _valid_poll_time(value: object) -> bool:
    """An integer the schema accepts (JSON ``116932.0`` is one too; ``1.5`` or ``true`` are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer() and 0 <= value <= PopConfig.max_poll_time_ms


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    body = case.body
    if isinstance(body, dict) and _valid_poll_time(body.get("pollTimeMs")) and body["pollTimeMs"] > FUZZ_MAX_POLL_MS:
        body["pollTimeMs"] = FUZZ_MAX_POLL_MS
