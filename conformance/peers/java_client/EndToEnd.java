/*
 * `mqtck bench e2e`'s clients: Apache RocketMQ's Java client (rocketmq-client from Maven Central) as a deployment runs
 * it, writing what only a client sees as trace schema v1 rows, to be audited with the broker's view that `mqtck
 * record` takes off the wire.
 *
 *   java -cp <rocketmq-client classpath> EndToEnd.java produce NAMESRV TOPIC MESSAGES PER_SECOND
 *   java -cp <rocketmq-client classpath> EndToEnd.java consume NAMESRV TOPIC GROUP TRACE_FILE RUN
 *
 * produce: one DefaultMQProducer sends MESSAGES messages (synchronous sends, tag A) at about PER_SECOND, then prints
 * a JSON line with what was acknowledged.
 *
 * consume: a DefaultMQPushConsumer, clustering, subscribed to TOPIC with "*", from the first offset of a new group,
 * with the default allocation (AllocateMessageQueueAveragely) wrapped so that every rebalance round is written as
 * ASSIGN and REVOKE rows, and a listener that writes a CONSUME row (status OK) for every message before it returns
 * CONSUME_SUCCESS. Rows are written unbuffered (each row reaches the file before the listener returns), so a
 * SIGKILL loses none of the consumptions the client reported to the broker. SIGTERM shuts the consumer down.
 */

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class EndToEnd {
    /** A send's timeout: 10 s, not the client's 3 s. CI runs this beside another lane on 2 cores, where a send
     *  through the recorder once took longer than 3 s; what the run judges is consumption, not send latency. */
    static final int SEND_TIMEOUT_MS = 10_000;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("produce")) {
            produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        } else if (args.length > 0 && args[0].equals("consume")) {
            consume(args[1], args[2], args[3], args[4], args[5]);
        } else {
            System.err.println("usage: EndToEnd produce NAMESRV TOPIC MESSAGES PER_SECOND | "
                    + "consume NAMESRV TOPIC GROUP TRACE_FILE RUN");
            System.exit(2);
        }
    }

    static void produce(String namesrv, String topic, int messages, int perSecond) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("mqtck_e2e_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.start();
        long started = System.nanoTime();
        int acked = 0, failed = 0;
        for (int i = 0; i < messages; i++) {
            long due = started + (long) (i * 1e9 / perSecond);
            long wait = due - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            try {
                Message message = new Message(topic, "A", ("m" + i).getBytes(StandardCharsets.UTF_8));
                SendStatus status = producer.send(message).getSendStatus();
                if (status == SendStatus.SEND_OK) {
                    acked++;
                } else {
                    failed++;
                    System.err.println("send " + i + ": " + status);
                }
            } catch (Exception e) {
                failed++;
                System.err.println("send " + i + " failed: " + e);
            }
        }
        producer.shutdown();
        System.out.printf("{\"acked\": %d, \"failed\": %d, \"seconds\": %.1f}%n", acked, failed,
                (System.nanoTime() - started) / 1e9);
        System.exit(0);
    }

    /** Trace rows of one client, written as they happen. */
    static final class TraceWriter {
        private final FileOutputStream out;
        private final String run;
        private String source;
        private long seq;

        TraceWriter(String path, String run) throws IOException {
            this.out = new FileOutputStream(path, true);
            this.run = run;
        }

        synchronized void row(String clientId, String event, String columns) {
            if (source == null) {
                source = "client:" + clientId;
            }
            String line = "{\"schema_version\":1,\"run\":" + quote(run) + ",\"ts\":" + System.currentTimeMillis() * 1000
                    + ",\"source\":" + quote(source) + ",\"seq\":" + (++seq) + ",\"event\":" + quote(event)
                    + ",\"client_id\":" + quote(clientId) + columns + "}\n";
            try {
                out.write(line.getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        static String quote(String text) {
            return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        }
    }

    static String queueColumns(String group, MessageQueue mq) {
        return ",\"group\":" + TraceWriter.quote(group) + ",\"topic\":" + TraceWriter.quote(mq.getTopic())
                + ",\"broker\":" + TraceWriter.quote(mq.getBrokerName()) + ",\"queue_id\":" + mq.getQueueId();
    }

    /** AllocateMessageQueueAveragely, recording each round's changes for this client as ASSIGN and REVOKE. */
    static final class RecordedAllocation implements AllocateMessageQueueStrategy {
        private final AllocateMessageQueueAveragely inner = new AllocateMessageQueueAveragely();
        private final TraceWriter trace;
        private final Set<MessageQueue> owned = new HashSet<>();
        private long epoch;
        volatile String clientId;

        RecordedAllocation(TraceWriter trace) {
            this.trace = trace;
        }

        @Override
        public synchronized List<MessageQueue> allocate(String group, String currentCID, List<MessageQueue> mqAll,
                List<String> cidAll) {
            clientId = currentCID;
            List<MessageQueue> mine = inner.allocate(group, currentCID, mqAll, cidAll);
            if (mqAll.isEmpty() || mqAll.get(0).getTopic().startsWith("%")) {
                return mine; // the retry topic: nothing is sent to it here
            }
            epoch++;
            for (MessageQueue mq : new HashSet<>(owned)) {
                if (!mine.contains(mq)) {
                    owned.remove(mq);
                    trace.row(currentCID, "REVOKE", queueColumns(group, mq) + ",\"epoch\":" + epoch);
                }
            }
            for (MessageQueue mq : mine) {
                if (owned.add(mq)) {
                    // The group starts from the first offset of a new topic: offset 0 is where it starts (the
                    // audit takes a queue's start from its first ASSIGN).
                    trace.row(currentCID, "ASSIGN", queueColumns(group, mq) + ",\"offset\":0,\"epoch\":" + epoch);
                }
            }
            return mine;
        }

        @Override
        public String getName() {
            return inner.getName();
        }
    }

    static void consume(String namesrv, String topic, String group, String tracePath, String run) throws Exception {
        TraceWriter trace = new TraceWriter(tracePath, run);
        RecordedAllocation allocation = new RecordedAllocation(trace);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setAllocateMessageQueueStrategy(allocation);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            MessageQueue mq = context.getMessageQueue();
            String clientId = allocation.clientId;
            for (MessageExt msg : msgs) {
                trace.row(clientId, "CONSUME", queueColumns(group, mq) + ",\"offset\":" + msg.getQueueOffset()
                        + ",\"msg_id\":" + TraceWriter.quote(msg.getMsgId()) + ",\"status\":\"OK\"");
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.shutdown();
            done.countDown();
        }));
        consumer.start();
        System.out.println("EndToEnd: consuming as " + consumer.buildMQClientId());
        System.out.flush();
        done.await(Long.MAX_VALUE, TimeUnit.DAYS);
    }
}
