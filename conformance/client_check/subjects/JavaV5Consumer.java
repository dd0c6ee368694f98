// Client-conformance subject for RocketMQ 5 (gRPC, POP): the official Java client (rocketmq-client-java, from
// Maven Central) as an application writes it, a SimpleConsumer or a PushConsumer (docs/client-conformance.md,
// "RocketMQ 5 clients").
//
// `mqtck gate java-client-v5-5.2.0` compiles this file against the client's classpath (conformance/peers/java.py)
// and runs it through the POP client check. Configuration comes from the environment:
//   MQTCK_ENDPOINTS        the gRPC access point, host:port
//   MQTCK_TOPIC, MQTCK_GROUP
//   MQTCK_MODE             "simple" (receive, ack, changeInvisibleDuration), "push" (a listener), or "produce"
//                          (the official Producer sends MQTCK_COUNT messages with bodies m-0, m-1, ..., one
//                          {"event":"sent","body":...,"message_id":...} line each: a recorded run's producer)
//   MQTCK_FAIL             comma-separated message bodies the application fails ...
//   MQTCK_FAIL_ATTEMPTS    ... on their first N deliveries (default 1): simple mode changes the invisible
//                          duration to MQTCK_RETRY_INVISIBLE_S, push mode returns FAILURE
//   MQTCK_EXTEND           simple mode: comma-separated bodies whose invisible time the application extends
//                          (changeInvisibleDuration to MQTCK_INVISIBLE_S) before it consumes them
//   MQTCK_COUNT            stop after this many successful consumptions (0: run until the duration ends)
//   MQTCK_INVISIBLE_S      simple mode: the invisible duration of a receive (default 10)
//   MQTCK_RETRY_INVISIBLE_S simple mode: the invisible duration after a failure (default 2)
//   MQTCK_AWAIT_S          simple mode: the long-polling await duration (default 5)
//   MQTCK_BATCH            simple mode: max messages per receive (default 16)
//   MQTCK_CONSUME_DELAY_MS how long consuming one message takes (default 0)
//   MQTCK_DURATION_S       stop after this long (default 30), or at SIGTERM
// Every consumption is one JSON line on stdout: {"event":"consumed","body":...,"message_id":...,"attempt":N,
// "result":"SUCCESS"|"FAILURE","ts_ms":...}; "started" and "stopped" lines frame them. Nothing else is tuned: the
// point is to observe the library's own defaults.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

public class JavaV5Consumer {
    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    static int envInt(String name, String fallback) {
        try {
            return Integer.parseInt(env(name, fallback));
        } catch (NumberFormatException e) {
            System.err.println(name + ": not an integer");
            System.exit(2);
            return 0;
        }
    }

    static final Set<String> FAIL = new HashSet<>();
    static final Set<String> EXTEND = new HashSet<>();
    static int failAttempts;
    static int delayMs;
    static int count;
    static final AtomicInteger SUCCEEDED = new AtomicInteger();
    static final CountDownLatch DONE = new CountDownLatch(1);
    /** Counted down once the consumer is closed: SIGTERM's shutdown hook waits for it (a graceful close sends
     * NotifyClientTermination), since the JVM halts as soon as its hooks return. */
    static final CountDownLatch CLOSED = new CountDownLatch(1);
    static volatile boolean terminated;

    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    static synchronized void line(String json) {
        System.out.println(json);
        System.out.flush();
    }

    /** The application's verdict on one delivery, printed before the client acts on it. */
    static boolean consume(MessageView view) {
        if (delayMs > 0) {
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        String body = StandardCharsets.UTF_8.decode(view.getBody().duplicate()).toString();
        boolean ok = !(FAIL.contains(body) && view.getDeliveryAttempt() <= failAttempts);
        line("{\"event\":\"consumed\",\"body\":" + quote(body) + ",\"message_id\":"
             + quote(view.getMessageId().toString()) + ",\"attempt\":" + view.getDeliveryAttempt()
             + ",\"result\":\"" + (ok ? "SUCCESS" : "FAILURE") + "\",\"ts_ms\":" + System.currentTimeMillis() + "}");
        if (ok && count > 0 && SUCCEEDED.incrementAndGet() >= count) {
            DONE.countDown();
        }
        return ok;
    }

    /** Send MQTCK_COUNT messages one after another with the official Producer, a line per message sent. */
    static void produce(ClientServiceProvider provider, ClientConfiguration config, String topic) throws Exception {
        Producer producer = provider.newProducerBuilder().setClientConfiguration(config).setTopics(topic).build();
        line("{\"event\":\"started\",\"mode\":\"produce\"}");
        int sent = 0;
        for (int i = 0; i < count && !terminated; i++) {
            String body = "m-" + i;
            SendReceipt receipt = producer.send(provider.newMessageBuilder().setTopic(topic)
                .setBody(body.getBytes(StandardCharsets.UTF_8)).build());
            line("{\"event\":\"sent\",\"body\":" + quote(body) + ",\"message_id\":"
                 + quote(receipt.getMessageId().toString()) + ",\"ts_ms\":" + System.currentTimeMillis() + "}");
            sent++;
        }
        producer.close();
        line("{\"event\":\"stopped\",\"sent\":" + sent + "}");
        CLOSED.countDown();
        if (!terminated) {
            System.exit(0);
        }
    }

    public static void main(String[] args) throws Exception {
        String endpoints = env("MQTCK_ENDPOINTS", "127.0.0.1:8081");
        String topic = env("MQTCK_TOPIC", "mqtck_topic");
        String group = env("MQTCK_GROUP", "mqtck_group");
        String mode = env("MQTCK_MODE", "push");
        String fail = env("MQTCK_FAIL", "");
        if (!fail.isEmpty()) {
            FAIL.addAll(Arrays.asList(fail.split(",")));
        }
        String extend = env("MQTCK_EXTEND", "");
        if (!extend.isEmpty()) {
            EXTEND.addAll(Arrays.asList(extend.split(",")));
        }
        failAttempts = envInt("MQTCK_FAIL_ATTEMPTS", "1");
        delayMs = envInt("MQTCK_CONSUME_DELAY_MS", "0");
        count = envInt("MQTCK_COUNT", "0");
        double durationS;
        try {
            durationS = Double.parseDouble(env("MQTCK_DURATION_S", "30"));
        } catch (NumberFormatException e) {
            System.err.println("MQTCK_DURATION_S: not a number");
            System.exit(2);
            return;
        }
        if (!mode.equals("simple") && !mode.equals("push") && !mode.equals("produce")) {
            System.err.println("MQTCK_MODE: must be simple, push or produce, not " + mode);
            System.exit(2);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            terminated = true;
            DONE.countDown();
            try {
                CLOSED.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        // Plaintext: the client's default is TLS, which the reference front does not speak (the proxy accepts both).
        ClientConfiguration config = ClientConfiguration.newBuilder().setEndpoints(endpoints).enableSsl(false).build();
        if (mode.equals("produce")) {
            produce(provider, config, topic);
            return;
        }
        Map<String, FilterExpression> subscriptions = Collections.singletonMap(topic, FilterExpression.SUB_ALL);
        long deadline = System.nanoTime() + (long) (durationS * 1e9);
        if (mode.equals("push")) {
            PushConsumer consumer = provider.newPushConsumerBuilder().setClientConfiguration(config)
                .setConsumerGroup(group).setSubscriptionExpressions(subscriptions)
                .setMessageListener(view -> consume(view) ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE).build();
            line("{\"event\":\"started\",\"mode\":\"push\"}");
            DONE.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            consumer.close();
        } else {
            int invisibleS = envInt("MQTCK_INVISIBLE_S", "10");
            int retryInvisibleS = envInt("MQTCK_RETRY_INVISIBLE_S", "2");
            int batch = envInt("MQTCK_BATCH", "16");
            SimpleConsumer consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(config)
                .setConsumerGroup(group).setSubscriptionExpressions(subscriptions)
                .setAwaitDuration(Duration.ofSeconds(envInt("MQTCK_AWAIT_S", "5"))).build();
            line("{\"event\":\"started\",\"mode\":\"simple\"}");
            while (DONE.getCount() > 0 && System.nanoTime() < deadline) {
                List<MessageView> views;
                try {
                    views = consumer.receive(batch, Duration.ofSeconds(invisibleS));
                } catch (Exception e) {
                    line("{\"event\":\"error\",\"call\":\"receive\",\"message\":" + quote(String.valueOf(e)) + "}");
                    Thread.sleep(1000);
                    continue;
                }
                for (MessageView view : views) {
                    try {
                        String body = StandardCharsets.UTF_8.decode(view.getBody().duplicate()).toString();
                        if (EXTEND.contains(body)) {
                            consumer.changeInvisibleDuration(view, Duration.ofSeconds(invisibleS));
                        }
                        if (consume(view)) {
                            consumer.ack(view);
                        } else {
                            consumer.changeInvisibleDuration(view, Duration.ofSeconds(retryInvisibleS));
                        }
                    } catch (Exception e) {
                        line("{\"event\":\"error\",\"call\":\"ack\",\"message\":" + quote(String.valueOf(e)) + "}");
                    }
                }
            }
            consumer.close();
        }
        line("{\"event\":\"stopped\",\"succeeded\":" + SUCCEEDED.get() + "}");
        CLOSED.countDown();
        if (!terminated) {
            System.exit(0);  // the client's threads are not daemons
        }
    }
}
