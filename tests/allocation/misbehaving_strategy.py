"""Programs that break the exec protocol, one per mode, for the tests of exit 2:

* ``crash``: reads one request, complains on stderr, exits 3;
* ``crash-later``: answers two requests correctly (nothing), then exits 3;
* ``hang``: reads requests and never answers;
* ``not-json``: answers with a line that is not JSON;
* ``bad-queue``: answers with a queue object that lacks ``queueId``;
* ``chatty``: answers with an object that is neither ``{"result"}`` nor ``{"error"}``;
* ``coin``: well-formed answers, but every queue or none at the toss of a coin (not deterministic).
"""

import json
import random
import sys
import time

#: How long ``hang`` sleeps per request: far longer than any test's timeout.
HANG_SECONDS = 600


def main(mode: str) -> int:
    for answered, line in enumerate(sys.stdin):
        request = json.loads(line)
        if mode == "crash" or (mode == "crash-later" and answered == 2):
            print("strategy exploded: boom", file=sys.stderr)
            return 3
        if mode == "hang":
            time.sleep(HANG_SECONDS)
        reply = {
            "not-json": "allocation done!",
            "bad-queue": json.dumps({"result": [{"topic": "T", "brokerName": "b"}]}),
            "chatty": json.dumps({"status": "ok"}),
            "coin": json.dumps({"result": request["mqAll"] if random.random() < 0.5 else []}),
        }.get(mode, json.dumps({"result": []}))
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
