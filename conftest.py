"""Project-wide pytest set-up: Hypothesis profiles.

* ``ci`` (default under ``tox -e ci``): fast, derandomized so CI is reproducible, no example database.
* ``dev`` (default otherwise): Hypothesis defaults, random, with the local database.
* ``deep``: many more examples, for ``tox -e deep`` and nightly runs.

Pick one with ``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE``.
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
