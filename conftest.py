"""Project-wide pytest set-up: Hypothesis profiles.

* ``ci`` (default under ``tox -e ci``): fast, derandomized so CI is reproducible, no example database.
* ``dev`` (default otherwise): Hypothesis defaults, random, with the local database.
* ``deep``: many more examples, for ``tox -e deep`` and nightly runs.

Pick one with ``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE``.

The commands the tests start print no plain progress lines (``MQTCK_PROGRESS_EVERY_S`` an hour): many tests assert
that an error is the one line on stderr, and a slow machine would otherwise put a progress line before it. The
tests of progress itself set the variable they need.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile(
    "deep", max_examples=2_000, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
os.environ.setdefault("MQTCK_PROGRESS_EVERY_S", "3600")
