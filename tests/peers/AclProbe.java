/*
 * The Java client (rocketmq-client and its AclClientRPCHook, from Maven Central) against a broker with ACL 1.0 and
 * fixtures/acl/plain_acl.yml: tests/peers/test_acl_java_client.py runs it against the reference and against
 * Apache RocketMQ 4.9.7. One JSON line per case: {"case": ..., "outcome": ...}, the outcome being the send status,
 * what a lite-pull consumer received, or the exception's class and response code.
 * Usage: java -cp CLASSPATH AclProbe.java NAMESRV ACCESS_KEY SECRET_KEY [LITE_PULL_WAIT_MS]
 * LITE_PULL_WAIT_MS (default 30000): how long the lite-pull consumer looks for the message before it says "nothing".
 */
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class AclProbe {
    static void report(String name, Callable<String> action) {
        String outcome;
        try {
            outcome = action.call();
        } catch (MQBrokerException e) {
            outcome = "MQBrokerException " + e.getResponseCode();
        } catch (Exception e) {
            outcome = e.getClass().getSimpleName();
        }
        System.out.println("{\"case\": \"" + name + "\", \"outcome\": \"" + outcome.replace("\"", "'") + "\"}");
        System.out.flush();
    }

    static Message message(String topic, String body) {
        return new Message(topic, body.getBytes(StandardCharsets.UTF_8));
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        AclClientRPCHook hook = new AclClientRPCHook(new SessionCredentials(args[1], args[2]));
        DefaultMQProducer producer = new DefaultMQProducer("PG_JAVA_ACL", hook);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("acl-probe-" + args[1]);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(10000);
        producer.start();
        report("send", () -> producer.send(message("AclTopic", "java-acl")).getSendStatus().name());
        report("send to a DENY topic", () -> producer.send(message("AclDenied", "denied")).getSendStatus().name());
        report("batch with PUB", () -> producer.send(Arrays.asList(message("AclWriteOnly", "b1"),
            message("AclWriteOnly", "b2"))).getSendStatus().name());
        report("batch to a DENY topic", () -> producer.send(Arrays.asList(message("AclDenied", "b1"),
            message("AclDenied", "b2"))).getSendStatus().name());
        producer.shutdown();

        report("lite pull", () -> {
            DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("AclGroup", hook);
            consumer.setNamesrvAddr(namesrv);
            consumer.setInstanceName("acl-probe-pull-" + args[1]);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe("AclTopic", "*");
            consumer.start();
            List<String> bodies = new ArrayList<>();
            long deadline = System.currentTimeMillis() + (args.length > 3 ? Long.parseLong(args[3]) : 30000);
            try {
                while (!bodies.contains("java-acl") && System.currentTimeMillis() < deadline) {
                    for (MessageExt ext : consumer.poll(1000)) {
                        bodies.add(new String(ext.getBody(), StandardCharsets.UTF_8));
                    }
                }
            } finally {
                consumer.shutdown();
            }
            return bodies.contains("java-acl") ? "received" : "nothing";
        });
    }
}
