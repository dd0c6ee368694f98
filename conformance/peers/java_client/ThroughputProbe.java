/*
 * `mqtck bench record`'s load: Apache RocketMQ's Java client (rocketmq-client from Maven Central) producing and then
 * consuming a topic as fast as it can, against the name server it is given (directly, or `mqtck record` in front).
 *
 * Run with `java -cp <rocketmq-client classpath> ThroughputProbe.java NAMESRV TOPIC MESSAGES THREADS BODY_BYTES`
 * (JEP 330). THREADS producer threads each send their share with synchronous sends (one DefaultMQProducer, as an
 * application shares one); then a DefaultLitePullConsumer of a fresh group, from the first offset, polls until it
 * has every message. Prints one JSON line: messages, seconds and messages/s of each phase.
 *
 * Whatever fails, the JVM exits: an exception out of main would leave the clients' non-daemon threads running and
 * the probe waiting for ever (a CI run once waited 900 s on a warm-up).
 */

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class ThroughputProbe {
    /** How long the consumer may take to get every message before the probe gives up (it then reports it). */
    static final long CONSUME_TIMEOUT_MS = 300_000;
    /** The first send sets up the route and the connection (and the broker creates the topic): on a loaded machine
     *  that can take longer than the client's default 3 s send timeout, which the measured sends keep. */
    static final long WARM_SEND_TIMEOUT_MS = 60_000;

    public static void main(String[] args) {
        int code = 0;
        try {
            run(args);
        } catch (Throwable e) {
            e.printStackTrace();
            code = 1;
        }
        System.exit(code);
    }

    static void run(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1];
        int messages = Integer.parseInt(args[2]), threads = Integer.parseInt(args[3]);
        byte[] body = new byte[Integer.parseInt(args[4])];
        String nonce = UUID.randomUUID().toString().substring(0, 8);

        DefaultMQProducer producer = new DefaultMQProducer("mqtck_probe_producer_" + nonce);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("probe-" + nonce);
        producer.start();
        producer.send(new Message(topic, "warm", body), WARM_SEND_TIMEOUT_MS); // route and connection, outside the clock
        AtomicLong failed = new AtomicLong();
        List<Thread> senders = new ArrayList<>();
        long started = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            int share = messages / threads + (t < messages % threads ? 1 : 0);
            Thread sender = new Thread(() -> {
                for (int i = 0; i < share; i++) {
                    try {
                        if (producer.send(new Message(topic, "A", body)).getSendStatus() != SendStatus.SEND_OK) {
                            failed.incrementAndGet();
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
            });
            sender.start();
            senders.add(sender);
        }
        for (Thread sender : senders) {
            sender.join();
        }
        double produceS = (System.nanoTime() - started) / 1e9;
        producer.shutdown();

        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("mqtck_probe_consumer_" + nonce);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("probe-" + nonce);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.start();
        long want = messages + 1, got = 0;
        started = System.nanoTime();
        long deadline = System.currentTimeMillis() + CONSUME_TIMEOUT_MS;
        while (got < want && System.currentTimeMillis() < deadline) {
            List<MessageExt> polled = consumer.poll(1000);
            got += polled.size();
        }
        double consumeS = (System.nanoTime() - started) / 1e9;
        consumer.shutdown();
        System.out.printf("{\"messages\": %d, \"send_failures\": %d, \"produce_s\": %.3f, \"produce_msgs_per_s\": %.1f, "
                + "\"consumed\": %d, \"consume_s\": %.3f, \"consume_msgs_per_s\": %.1f}%n", messages, failed.get(),
                produceS, messages / produceS, got, consumeS, got / consumeS);
    }
}
