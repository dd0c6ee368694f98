"""The broker's named constants from the seeds: what the core defaults to and what the auditor judges by.

They live here, not in :mod:`reference.broker.config`, because the auditor reads them too (the long-poll
timing checks) and the auditor reads nothing of the reference outside :mod:`reference.rules`.
"""

from __future__ import annotations

#: Seed 000: PullRequestHoldService waits 5 s between checks when long polling is on.
LONG_POLLING_CHECK_INTERVAL_MS = 5_000
#: Seed 000: shortPollingTimeMills, both the hold time and the check interval when long polling is off.
SHORT_POLLING_TIME_MS = 1_000
#: RocketMQ's ClientHousekeepingService scans for idle channels every 10 s.
CHANNEL_SCAN_INTERVAL_MS = 10_000
#: RocketMQ's channelExpiredTimeout: a channel with no heartbeat for 120 s is removed.
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000
#: Largest pull batch a request may ask for (RocketMQ clients refuse pullBatchSize above 1024).
MAX_PULL_BATCH = 1_024
#: Longest suspend a request may ask for; seed 000's client asks 15 s and times out at 30 s.
MAX_SUSPEND_TIMEOUT_MS = 3_600_000
#: Seed 001 §4: in a rebalance round, updateProcessQueueTableInRebalance marks a removed queue's ProcessQueue
#: dropped and removeUnnecessaryMessageQueue then persists that queue's progress (what was consumed before the
#: drop). So for this long after a client's REVOKE (recorded when its round decided), a COMMIT of the queue is that
#: hand-over and a pull the broker receives may have been sent before the drop (a pull already sent is not
#: recalled): neither is a commit or pull after drop (REBAL-4, REBAL-5). Apache RocketMQ's Java client 4.9.8 does
#: both 2-9 ms after the round decided (mqtck bench e2e); in-flight results the dropped queue discards are never
#: persisted, and it checks the dropped flag before each new pull, so anything later still counts.
DROP_GRACE_MS = 500
