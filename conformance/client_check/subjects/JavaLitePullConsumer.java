/*
 * Client-conformance subject: Apache RocketMQ's Java DefaultLitePullConsumer (rocketmq-client from Maven Central),
 * clustering, subscribed to MQTCK_TOPIC with "*" (so the library rebalances), with its default auto commit, as an
 * application writes it (docs/client-conformance.md).
 *
 * Run with `java -cp <rocketmq-client classpath> JavaLitePullConsumer.java` (JEP 330); `mqtck gate
 * java-lite-pull-4.9.8` resolves the classpath, compiles it once and runs it through the client check. Each polled message takes
 * MQTCK_CONSUME_DELAY_MS; the loop runs MQTCK_DURATION_S or until SIGTERM (a shutdown hook), then the consumer
 * shuts down, which commits and persists its offsets and unregisters. Nothing is tuned.
 */

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.message.MessageExt;

public class JavaLitePullConsumer {
    /** How long one poll waits for messages: short, so that a stop is seen within it. */
    static final long POLL_TIMEOUT_MS = 200;

    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    public static void main(String[] args) throws Exception {
        long delayMs = Long.parseLong(env("MQTCK_CONSUME_DELAY_MS", "0"));
        long durationMs = (long) (Double.parseDouble(env("MQTCK_DURATION_S", "10")) * 1000);
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(env("MQTCK_GROUP", "mqtck_group"));
        consumer.setNamesrvAddr(env("MQTCK_NAMESRV", "127.0.0.1:9876"));
        consumer.subscribe(env("MQTCK_TOPIC", "mqtck_topic"), "*");
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch done = new CountDownLatch(1);
        // SIGTERM runs the hooks: ask the poll loop to stop and wait until it shut the consumer down.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.set(true);
            try {
                done.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        consumer.start();
        System.out.println("JavaLitePullConsumer: started");
        System.out.flush();
        long consumed = 0;
        long deadline = System.currentTimeMillis() + durationMs;
        try {
            while (!stop.get() && System.currentTimeMillis() < deadline) {
                List<MessageExt> messages = consumer.poll(POLL_TIMEOUT_MS);
                for (MessageExt message : messages) {
                    if (delayMs > 0) {
                        Thread.sleep(delayMs);
                    }
                    consumed++;
                }
            }
        } finally {
            consumer.shutdown();
            System.out.println("JavaLitePullConsumer: consumed " + consumed + " message(s)");
            System.out.flush();
            done.countDown();
        }
        System.exit(0);
    }
}
