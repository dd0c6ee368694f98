"""What ``mqtck … --help`` says about each command and subcommand: a description and the examples it ends with.

Kept in one table, keyed by the command's words (``""`` for ``mqtck`` itself, ``"strategy check"``), so that every
help page reads the same way: plain sentences (no reStructuredText markup, which argparse prints as it is), then
``examples:`` with what a newcomer types first. ``tests/test_cli_help.py`` walks the parser and holds every page to
that; only ``conformance/cli.py`` reads this module.
"""

from __future__ import annotations

#: The description of each command: what it does, then what its exit code means where that is not the usual
#: contract (0 everything required passed, 1 a requirement failed, 2 usage or environment error).
DESCRIPTIONS: dict[str, str] = {
    "": "mqtck: a conformance kit for message-queue consumption (RocketMQ pull, rebalance and POP; Pulsar "
        "permits). Exit codes: 0 everything required passed, 1 a requirement failed, 2 a usage or environment "
        "error, named in one line on stderr.",
    "conform": "Run the conformance suite against a target (the in-process reference by default, an HTTP or "
               "RocketMQ-protocol broker, a Pulsar broker (pulsar://HOST:PORT: the FLOW family), a seeded mutant, or "
               "your own client program with --client) and write "
               "per-requirement verdicts: JSON, JUnit and an HTML report.",
    "broker": "Serve the reference broker: over stdin/stdout (--stdio), the HTTP front (--http) or the RocketMQ "
              "4.x remoting protocol (--remoting, a name server and a broker), optionally with a control channel "
              "(--control) and on simulated time (--sim-clock); or the Pulsar binary protocol over the permit "
              "dispatcher (--pulsar, for pulsar-client and the pulsar:// target). --grpc serves the RocketMQ 5 gRPC "
              "front (MessagingService, docs/grpc.md), alone or beside --remoting or --http on the same broker and "
              "store; --grpc-min-invisible-ms, --grpc-min-hold-ms and --grpc-max-hold-ms set its receive limits "
              "(the proxy's minInvisibleTimeMillsForRecv and grpcClientConsumerMin/MaxLongPollingTimeoutMillis). "
              "--log-level info logs each connection and each unsupported or refused request (code and reason); "
              "--segment-bytes sets the commit-log segment size (smaller for small machines, docs/drop-in.md).",
    "bench": "Measure one timing goal and print the result as JSON; timing goals live here, never in the tests.",
    "bench audit": "Synthesize --events trace rows with faults and audit them on Spark: events per second, phase "
                   "times and the driver's peak memory.",
    "bench disk": "Write small messages over many topics into a reference store and report the data directory's "
                  "size: allocated bytes (what du counts) and file lengths, per part (issue 41's 334 MB case).",
    "bench store": "Append to and pull from the reference store: messages and MiB per second, with a cProfile "
                   "summary.",
    "bench strategy": "Time an allocation strategy check: examples per second in-process, requests per second over "
                      "the exec protocol.",
    "bench conform": "Time mqtck conform on the reference in-process (-n 2) and over HTTP (goals: 60 s and 120 s).",
    "bench sim": "Measure the simulator's throughput in trace events per second, with a cProfile summary.",
    "bench remoting": "Run the real C++ client over loopback against the reference: end-to-end throughput and "
                      "long-poll wake latency (needs the PyPI rocketmq==0.4.4 package).",
    "bench diff": "Time mqtck diff (controls in-process, over remoting and over HTTP) and, with --faults, check "
                  "that each broker fault of the catalogue is found.",
    "bench held": "Hold thousands of long polls over HTTP and remoting: all woken, wake latency p50 and p99, the "
                  "broker's memory (goal 1 GiB).",
    "bench record": "Measure the recorder's overhead: the Java client's produce and consume throughput direct and "
                    "through mqtck record.",
    "bench pop-wake": "POP wake latency over gRPC: a held ReceiveMessage woken by a send, p50/p99/max per target, "
                      "one after the other in one run: the reference (mqtck broker --remoting --grpc, launched "
                      "under the proxy peer's receive limits), each --peer (a proxy of mqtck peer list, started) "
                      "and each --target (a running deployment: its gRPC port and its name server). The topic "
                      "and the consumer are made on each through the grpc target, by their wire names.",
    "bench e2e": "Audit a recorded deployment: a producer and consumers (Java, Go or C++) through mqtck record, "
                 "one consumer killed and one added on the way.",
    "spec": "Render SPEC.md from requirements.toml (render), or check that every requirement ID is covered by a "
            "test and every test names a known ID (check).",
    "strategy": "Property-test a queue allocation strategy (check), list the built-in strategies (list), or serve "
                "a Python strategy over the JSON-lines exec protocol (serve). A strategy is a built-in name, a "
                "Python object (package.module:Name) or any program (--exec CMD); see docs/strategy-check.md.",
    "strategy check": "Run the allocation properties (validity, partition, balance, stickiness, determinism, "
                      "machine room, POP sharing) against a strategy. Flags declare what it promises: balance and "
                      "stickiness are only reported unless a bound is given. Exit 0 every declared property "
                      "holds, 1 one does not, 2 a usage error or a program that broke the protocol.",
    "strategy list": "List the built-in strategies, the RocketMQ class each one mirrors and what it promises.",
    "strategy serve": "Serve a Python strategy over the exec protocol on stdin and stdout, to compare it with a "
                      "port in another language.",
    "audit": "Audit a recorded trace (trace schema v1, Parquet or JSON Lines; docs/trace-schema.md) on Spark and "
             "write a summary, the findings with the events that prove them, and an HTML report. Exit 0 no MUST "
             "violated, 1 some finding violates one, 2 the trace cannot be read or Spark cannot start.",
    "spark": "Spark tools for the audit: serve runs a warm Spark Connect server that mqtck audit --remote uses.",
    "spark serve": "Run a warm Spark Connect server (Spark's own, from pip's pyspark) with the audit driver's "
                   "settings until Ctrl-C, so that repeated audits (mqtck audit --remote sc://HOST:PORT) pay neither "
                   "the JVM's start nor its warm-up. The server reads traces and writes reports itself: give "
                   "paths it can see.",
    "trace": "Tools for trace schema v1 files: synth writes a synthetic trace with the faults you ask for.",
    "trace synth": "Write a synthetic workload trace (partitioned Parquet) and its manifest.json, with exactly the "
                   "injected faults asked for, to test the auditor or your own tooling.",
    "record": "Record a deployment's traffic as a trace (schema v1) from a proxy in front of its name server "
              "(remoting), of its RocketMQ 5 gRPC endpoint (--protocol grpc) or of a Pulsar broker (--protocol "
              "pulsar): point the clients at --listen instead. SIGTERM or SIGINT ends the trace and prints a JSON "
              "summary.",
    "peer": "Real brokers, clients and strategies, installed by name and version from their registries (Maven "
            "Central, the Go module proxy, PyPI) and run on loopback.",
    "peer list": "List the known peers, one line each: name, kind, version, description.",
    "peer install": "Resolve a peer's jars from Maven Central into the local caches (~/.m2 and ~/.cache/mqtck); a "
                    "first install downloads tens of MB and shows its progress on stderr. rocketmq-rust is built "
                    "from crates.io with cargo into ~/.cache/mqtck/peers (tens of minutes the first time).",
    "peer run": "Serve a peer on loopback in the foreground until SIGTERM or SIGINT; once it is usable, print one "
                "line on stdout: ready remoting://127.0.0.1:PORT?control=127.0.0.1:CPORT (a proxy peer: ready "
                "grpc://127.0.0.1:GPORT?remoting=127.0.0.1:PORT&control=127.0.0.1:CPORT).",
    "gate": "Install a peer if needed, start it, run the conformance suite against it with its reviewed "
            "expectations, stop it, and write the usual reports. Exit 2 when the peer cannot be had or started.",
    "diff": "Run two targets in lockstep on random operation sequences (drawn from the capabilities both have) and "
            "shrink the first divergence, printed side by side and written as a replay file. Exit 0 no "
            "unexplained divergence, 1 one was found, 2 a usage error or an unusable target. A run repeats for the "
            "same --seed, --examples and targets when both are on simulated time (in-process, or a runner served "
            "with --sim-clock); see docs/diff.md, Repeating a run.",
    "matrix": "Write the results matrix of several conform runs: one HTML page and matrix.json, one column per "
              "run. With --update, fold runs into the published matrix: an --only run fills its rows of its "
              "column, a new implementation adds a column.",
}

#: What each help page ends with, under ``examples:``: what a newcomer types first.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("mqtck conform", "mqtck conform --target remoting://127.0.0.1:9876 --junit ci.xml",
         "mqtck gate rocketmq-4.9.7", "mqtck strategy check averagely", "mqtck peer install rocketmq-4.9.7"),
    "conform": ("mqtck conform", "mqtck conform --only LPOLL-4 --json",
                "mqtck conform --target remoting://127.0.0.1:9876?control=127.0.0.1:7000 --junit ci.xml",
                "mqtck conform --target 'grpc://127.0.0.1:8081?remoting=127.0.0.1:9876' --only POP-1",
                "mqtck conform --mutants",
                "mqtck conform --client './my-consumer'  # reads MQTCK_NAMESRV, MQTCK_TOPIC, MQTCK_GROUP",
                "mqtck conform --client './my-v5-consumer' --client-protocol grpc  # reads MQTCK_ENDPOINTS"),
    "broker": ("mqtck broker --http 0 --data-dir /tmp/b", "mqtck broker --remoting 0 --control --data-dir /tmp/b",
               "mqtck broker --remoting 0 --grpc 0 --data-dir /tmp/b",
               "mqtck broker --remoting 0 --grpc 0 --grpc-min-invisible-ms 1000 --grpc-min-hold-ms 0 --data-dir /tmp/b",
               "mqtck broker --http 0 --sim-clock --segment-bytes 65536 --data-dir /tmp/b",
               "mqtck broker --pulsar 0 --data-dir /tmp/b",
               "mqtck broker --remoting 9876 --log-level info --segment-bytes 16777216 --data-dir /tmp/b"),
    "bench": ("mqtck bench store", "mqtck bench strategy", "mqtck bench audit --events 1000000"),
    "bench audit": ("mqtck bench audit --events 1000000", "mqtck bench audit --events 200000 --baseline duckdb"),
    "bench disk": ("mqtck bench disk", "mqtck bench disk --segment-bytes 16777216"),
    "bench store": ("mqtck bench store", "mqtck bench store --messages 50000 --body-bytes 4096 --out store.json"),
    "bench strategy": ("mqtck bench strategy", "mqtck bench strategy --exec 'java -jar alloc.jar'"),
    "bench conform": ("mqtck bench conform", "mqtck bench conform --skip-http"),
    "bench sim": ("mqtck bench sim", "mqtck bench sim --events 200000 --faults --no-profile"),
    "bench remoting": ("mqtck bench remoting", "mqtck bench remoting --messages 5000 --through-recorder"),
    "bench diff": ("mqtck bench diff", "mqtck bench diff --examples 1000 --faults --out diff.json"),
    "bench held": ("mqtck bench held", "mqtck bench held --http 1000 --remoting 0"),
    "bench record": ("mqtck bench record --peer rocketmq-4.9.7", "mqtck bench record --messages 20000 --rounds 1"),
    "bench pop-wake": ("mqtck bench pop-wake --rounds 200",
                       "mqtck bench pop-wake --peer rocketmq-proxy-5.5.0 --rounds 100",
                       "mqtck bench pop-wake --target proxy=grpc://127.0.0.1:8081?remoting=127.0.0.1:9876"),
    "bench e2e": ("mqtck bench e2e --peer rocketmq-4.9.7", "mqtck bench e2e --peer reference --client go"),
    "spec": ("mqtck spec check", "mqtck spec render"),
    "strategy": ("mqtck strategy list", "mqtck strategy check averagely",
                 "mqtck strategy check mypkg.zones:ZoneAware", "mqtck strategy check --exec 'java -jar alloc.jar'"),
    "strategy check": ("mqtck strategy check averagely", "mqtck strategy check mypkg.zones:ZoneAware --balance-bound 1",
                       "mqtck strategy check --exec 'java -jar alloc.jar' --balance-bound 1 --json",
                       "mqtck strategy check consistent_hash --property determinism --seed random"),
    "strategy list": ("mqtck strategy list",),
    "strategy serve": ("mqtck strategy serve mypkg.zones:ZoneAware",
                       "mqtck strategy check --exec 'mqtck strategy serve mypkg.zones:ZoneAware'"),
    "audit": ("mqtck audit trace.jsonl --report-dir reports/audit",
              "mqtck audit traces/ --report-dir out --master spark://head:7077",
              "mqtck audit trace.jsonl --report-dir out --remote sc://127.0.0.1:15002",
              "mqtck audit trace.jsonl --report-dir out --engine comet"),
    "spark": ("mqtck spark serve",),
    "spark serve": ("mqtck spark serve", "mqtck spark serve --port 15003 --driver-memory 2g",
                    "mqtck audit trace.jsonl --report-dir out --remote sc://127.0.0.1:15002"),
    "trace": ("mqtck trace synth --events 100000 --out /tmp/trace",),
    "trace synth": ("mqtck trace synth --events 100000 --out /tmp/trace", "mqtck trace synth --list-kinds",
                    "mqtck trace synth --events 50000 --inject lost=3,unsafe-commit=2 --out /tmp/trace"),
    "record": ("mqtck record --listen 127.0.0.1:9877 --upstream 127.0.0.1:9876 --trace recorded.jsonl",
               "mqtck record --protocol grpc --listen 127.0.0.1:8082 --upstream 127.0.0.1:8081 --trace v5.jsonl",
               "mqtck record --protocol pulsar --listen 127.0.0.1:6651 --upstream 127.0.0.1:6650 --trace p.jsonl"),
    "peer": ("mqtck peer list", "mqtck peer install rocketmq-4.9.7", "mqtck peer run rocketmq-5.5.0"),
    "peer list": ("mqtck peer list",),
    "peer install": ("mqtck peer install rocketmq-4.9.7", "mqtck peer install java-client-4.9.8",
                     "mqtck peer install rocketmq-rust-1.0.0"),
    "peer run": ("mqtck peer run rocketmq-4.9.7", "mqtck peer run rocketmq-5.5.0 --listen 127.0.0.1:9876 --verbose"),
    "gate": ("mqtck gate rocketmq-4.9.7", "mqtck gate rocketmq-5.5.0 --only REVIVE-6 --junit gate.xml",
             "mqtck gate java-client-4.9.8", "mqtck gate java-client-v5-5.2.0"),
    "diff": ("mqtck diff --target mutant:offset-empty-queue-keeps-offset --examples 100",
             "mqtck diff --target remoting://127.0.0.1:9876 --against reference --examples 1000 --report-dir d",
             "mqtck diff --target peer:rocketmq-4.9.7 --examples 500 --without restart --report-dir d",
             "mqtck diff --target peer:rocketmq-proxy-5.5.0 --against grpc --examples 300",
             "mqtck diff --replay d/divergence.json --target peer:rocketmq-4.9.7"),
    "matrix": ("mqtck matrix --out docs/matrix reports/gate",
               "mqtck matrix --out docs/matrix --update 'rocketmq-5.5.0=reports/gate-only' reports/new-peer"),
}
