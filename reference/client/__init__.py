"""The reference client: RocketMQ's push and pull consumers as sans-I/O state machines.

Theory of operation
-------------------
A client never reads a socket or the wall clock. Time comes from a :class:`~reference.clock.Clock`
(every "later" is a timer on it) and the broker is reached only through a
:class:`~reference.client.gateway.BrokerGateway`, so the same code runs over an in-process broker
(:mod:`reference.client.inprocess`), inside the deterministic simulator (:mod:`reference.sim`) and,
later, over the network transports.

One module per rule, named after the RocketMQ class it mirrors:

==============================  =====================================================================
``gateway``                     BrokerGateway: the one interface to the broker; GatewayError
``inprocess``                   InProcessGateway over an in-process Broker, through a Link
``config``                      ClientConfig and ConsumerConfig: the seeds' constants as defaults
``client_instance``             MQClientInstance: heartbeat, rebalance and persist schedules
``push_consumer``               DefaultMQPushConsumer: the pull loop, flow control, pull results
``pull_consumer``               DefaultMQPullConsumer: the application pulls at its own offsets
``pull_service``                PullMessageService: runs PullRequests on the clock
``pull_request``                PullRequest: one queue's pull-loop token
``pull_result``                 PullResult: response codes to pull statuses, client tag re-check
``process_queue``               ProcessQueue: cached messages, the commit point, the dropped flag
``rebalance``                   RebalanceImpl: allocation and the drop / create rules
``rebalance_service``           RebalanceService: every 20 s and when woken
``consume_service``             ConsumeMessageConcurrentlyService: listener calls, results, retry
``executor``                    the consume thread pool on the clock
``offset_store``                the OffsetStore interface
``remote_offset_store``         RemoteBrokerOffsetStore (clustering)
``local_offset_store``          LocalFileOffsetStore (broadcasting)
``components``                  ClientComponents: the swappable classes (for seeded faults)
``pop``, ``permits``            POP and permit consumers (their own packages)
==============================  =====================================================================

Every step records trace schema v1 rows under the source ``client:<clientId>``: SUBSCRIBE, ASSIGN,
REVOKE, PULL_REQ, PULL_RESP, DELIVER, CONSUME, COMMIT (and UNSUBSCRIBE at shutdown).
"""
