/*
 * The Java client's delay and transaction examples (rocketmq-client 4.9.8 from Maven Central) against one name
 * server: tests/peers/test_delay_txn_java_client.py runs it against `mqtck broker --remoting` (issue 41).
 * A push consumer subscribes to DelayTopic and TxnTopic; a producer sends a level-3 message (10 s); a
 * TransactionMQProducer sends three half messages whose local transaction answers COMMIT, ROLLBACK and UNKNOW, and
 * whose check answers COMMIT. One JSON line per event, with milliseconds since the program started:
 * {"event": "sent"|"received"|"checked"|"half", "body": ..., "ms": ...}.
 * Usage: java -cp CLASSPATH DelayTxnProbe NAMESRV RUN_MS
 */
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class DelayTxnProbe {
    static final long START = System.currentTimeMillis();

    static synchronized void event(String name, String body) {
        System.out.println("{\"event\": \"" + name + "\", \"body\": \"" + body + "\", \"ms\": "
            + (System.currentTimeMillis() - START) + "}");
        System.out.flush();
    }

    static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        long runMs = Long.parseLong(args[1]);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("CG_DELAY_TXN");
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe("DelayTopic", "*");
        consumer.subscribe("TxnTopic", "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                event("received", text(m.getBody()));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("PG_DELAY");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.start();
        TransactionMQProducer txProducer = new TransactionMQProducer("PG_TXN");
        txProducer.setNamesrvAddr(namesrv);
        txProducer.setSendMsgTimeout(10000);
        txProducer.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                String body = text(msg.getBody());
                event("half", body);
                if (body.equals("tx-commit")) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                return body.equals("tx-rollback") ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.UNKNOW;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                event("checked", text(msg.getBody()));
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        txProducer.start();

        Message delayed = new Message("DelayTopic", "delay-level-3".getBytes(StandardCharsets.UTF_8));
        delayed.setDelayTimeLevel(3);
        producer.send(delayed);
        event("sent", "delay-level-3");
        for (String body : new String[] {"tx-commit", "tx-rollback", "tx-unknown"}) {
            txProducer.sendMessageInTransaction(new Message("TxnTopic", body.getBytes(StandardCharsets.UTF_8)), null);
            event("sent", body);
        }
        Thread.sleep(Math.max(0, runMs - (System.currentTimeMillis() - START)));
        txProducer.shutdown();
        producer.shutdown();
        consumer.shutdown();
        System.exit(0);
    }
}
