/*
 * The round trip of conformance/peers/pulsar_observe.py on Apache Pulsar's Java client (org.apache.pulsar:pulsar-client
 * from Maven Central, resolved by pom.xml beside this file): the twin of python_roundtrip.py, step for step.
 *
 * Settings from the environment (MQTCK_PULSAR_URL, MQTCK_TOPIC, MQTCK_NACK_TOPIC, MQTCK_MESSAGES, MQTCK_BATCH,
 * MQTCK_QUEUE, MQTCK_CONSUMERS, MQTCK_NACKS); one JSON object a line on stdout: {"phase": NAME} when the observer
 * should read the broker's stats (then a line on stdin lets it go on), {"received": {...}} per message of the shared
 * subscription, {"nack": COUNT} per delivery of the negatively acknowledged message.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionType;

public class PulsarRoundTrip {
    /** How long one receive waits before the drain tries the next consumer (ms). */
    static final int RECEIVE_WAIT_MS = 200;
    /** The negative-ack redelivery delay: short, so that the redeliveries come within the run. */
    static final int NACK_DELAY_MS = 100;
    /** Rounds over every consumer with nothing received after which the drain gives up. */
    static final int IDLE_ROUNDS = 10;

    static final BufferedReader STDIN = new BufferedReader(new InputStreamReader(System.in));

    static int env(String name, int fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : Integer.parseInt(value);
    }

    static void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static void phase(String name) throws Exception {
        emit("{\"phase\": \"" + name + "\"}");
        STDIN.readLine();
    }

    public static void main(String[] args) throws Exception {
        int messages = env("MQTCK_MESSAGES", 120), batch = env("MQTCK_BATCH", 4), queue = env("MQTCK_QUEUE", 10);
        int consumers = env("MQTCK_CONSUMERS", 3), nacks = env("MQTCK_NACKS", 2);
        String topic = System.getenv("MQTCK_TOPIC"), nackTopic = System.getenv("MQTCK_NACK_TOPIC");
        try (PulsarClient client = PulsarClient.builder().serviceUrl(System.getenv("MQTCK_PULSAR_URL")).build()) {
            List<Consumer<byte[]>> shared = new ArrayList<>();
            for (int i = 0; i < consumers; i++) {
                shared.add(client.newConsumer().topic(topic).subscriptionName("mqtck-flow")
                        .subscriptionType(SubscriptionType.Shared).receiverQueueSize(queue).consumerName("c" + i)
                        .subscribe());
            }
            Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(true)
                    .batchingMaxMessages(batch).batchingMaxPublishDelay(1000, TimeUnit.MILLISECONDS).create();
            for (int i = 0; i < messages; i++) {
                producer.sendAsync(("m" + i).getBytes());
            }
            producer.flush();
            phase("produced");
            int received = 0, idleRounds = 0;
            while (received < messages && idleRounds < IDLE_ROUNDS) {
                idleRounds++;
                for (int i = 0; i < shared.size(); i++) {
                    Message<byte[]> msg = shared.get(i).receive(RECEIVE_WAIT_MS, TimeUnit.MILLISECONDS);
                    if (msg == null) {
                        continue;
                    }
                    idleRounds = 0;
                    received++;
                    MessageIdAdv id = (MessageIdAdv) msg.getMessageId();
                    emit("{\"received\": {\"consumer\": \"c" + i + "\", \"ledger\": " + id.getLedgerId()
                            + ", \"entry\": " + id.getEntryId() + ", \"batch\": " + id.getBatchIndex()
                            + ", \"redelivery\": " + msg.getRedeliveryCount() + "}}");
                    shared.get(i).acknowledge(msg);
                }
            }
            phase("drained");
            Consumer<byte[]> nacking = client.newConsumer().topic(nackTopic).subscriptionName("mqtck-nack")
                    .subscriptionType(SubscriptionType.Shared).receiverQueueSize(queue).consumerName("n0")
                    .negativeAckRedeliveryDelay(NACK_DELAY_MS, TimeUnit.MILLISECONDS).subscribe();
            client.newProducer().topic(nackTopic).enableBatching(false).create().send("nacked".getBytes());
            for (int delivery = 0; delivery <= nacks; delivery++) {
                Message<byte[]> msg = nacking.receive(30, TimeUnit.SECONDS);
                emit("{\"nack\": " + msg.getRedeliveryCount() + "}");
                if (delivery < nacks) {
                    nacking.negativeAcknowledge(msg);
                } else {
                    nacking.acknowledge(msg);
                }
            }
            phase("nacked");
        }
        System.exit(0);
    }
}
