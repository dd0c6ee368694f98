/*
 * Client-conformance subject: Apache RocketMQ's Java DefaultMQPushConsumer (rocketmq-client from Maven Central),
 * clustering, subscribed to MQTCK_TOPIC with "*", as an application writes it (docs/client-conformance.md).
 *
 * Run with `java -cp <rocketmq-client classpath> JavaPushConsumer.java` (JEP 330); `mqtck gate
 * java-client-4.9.8` resolves the classpath, compiles it once and runs it through the client check. The listener sleeps
 * MQTCK_CONSUME_DELAY_MS per message and returns CONSUME_SUCCESS; the consumer runs MQTCK_DURATION_S or until
 * SIGTERM (a shutdown hook), then shuts down, which persists its offsets and unregisters. Nothing is tuned: the
 * point is to observe the library's own defaults. Each message the listener finished is reported on a line
 * `mqtck-consume {...}` (the client check's consumption reports: CCLIENT-5 judges the cache by them).
 */

import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

public class JavaPushConsumer {
    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    public static void main(String[] args) throws Exception {
        long delayMs = Long.parseLong(env("MQTCK_CONSUME_DELAY_MS", "0"));
        long durationMs = (long) (Double.parseDouble(env("MQTCK_DURATION_S", "10")) * 1000);
        AtomicLong consumed = new AtomicLong();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(env("MQTCK_GROUP", "mqtck_group"));
        consumer.setNamesrvAddr(env("MQTCK_NAMESRV", "127.0.0.1:9876"));
        consumer.subscribe(env("MQTCK_TOPIC", "mqtck_topic"), "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            if (delayMs > 0) {
                try {
                    Thread.sleep(delayMs * msgs.size());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            Instant now = Instant.now();
            long tsUs = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
            for (MessageExt msg : msgs) {
                System.out.printf("mqtck-consume {\"ts\": %d, \"topic\": \"%s\", \"queue_id\": %d, \"offset\": %d}%n",
                        tsUs, msg.getTopic(), msg.getQueueId(), msg.getQueueOffset());
            }
            consumed.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        AtomicBoolean closed = new AtomicBoolean();
        Runnable close = () -> {
            if (closed.compareAndSet(false, true)) {
                consumer.shutdown();
                System.out.println("JavaPushConsumer: consumed " + consumed.get() + " message(s)");
                System.out.flush();
                done.countDown();
            }
        };
        // SIGTERM runs the hooks: shut the consumer down as the application would, then let the JVM exit.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.countDown();
            close.run();
            try {
                done.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        consumer.start();
        System.out.println("JavaPushConsumer: started as " + consumer.buildMQClientId());
        System.out.flush();
        stop.await(durationMs, TimeUnit.MILLISECONDS);
        close.run();
        System.exit(0);
    }
}
