/*
 * The Java client's allocation strategies behind mqtck's exec protocol (docs/strategy-check.md).
 *
 * Run as a single-file source program on the classpath Maven resolves for rocketmq-client:
 *     java -cp <classpath> StrategyDriver.java AllocateMessageQueueAveragely
 * One JSON request per line on stdin, one answer per line on stdout ({"result": [...]} or {"error": "..."}).
 * The strategy objects are Apache RocketMQ's own classes; this file only builds them from a request's params
 * and writes their answers. BrokenAveragely is the control: Averagely with a deliberate fault the checker
 * must catch.
 */

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

public final class StrategyDriver {
    static final Set<String> KNOWN = new TreeSet<>(Arrays.asList(
        "AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle", "AllocateMessageQueueConsistentHash",
        "AllocateMessageQueueByConfig", "AllocateMessageQueueByMachineRoom", "AllocateMachineRoomNearby",
        "BrokenAveragely"));

    /** Averagely, except that the last consumer of two or more never gets its last queue: a partition fault. */
    static final class BrokenAveragely extends AllocateMessageQueueAveragely {
        @Override
        public List<MessageQueue> allocate(String group, String currentCID, List<MessageQueue> mqAll,
                                           List<String> cidAll) {
            List<MessageQueue> share = new ArrayList<>(super.allocate(group, currentCID, mqAll, cidAll));
            if (cidAll.size() > 1 && currentCID.equals(cidAll.get(cidAll.size() - 1)) && !share.isEmpty()) {
                share.remove(share.size() - 1);
            }
            return share;
        }
    }

    /** The room is the text before the first '-' (RocketMQ's own tests resolve rooms this way). */
    static String dashPrefix(String name) {
        int dash = name.indexOf('-');
        return dash < 0 ? name : name.substring(0, dash);
    }

    static AllocateMessageQueueStrategy build(String name, JSONObject params) {
        switch (name) {
            case "AllocateMessageQueueAveragely":
                return new AllocateMessageQueueAveragely();
            case "AllocateMessageQueueAveragelyByCircle":
                return new AllocateMessageQueueAveragelyByCircle();
            case "AllocateMessageQueueConsistentHash":
                Integer nodes = params.getInteger("virtualNodeCnt");
                return nodes == null ? new AllocateMessageQueueConsistentHash()
                    : new AllocateMessageQueueConsistentHash(nodes);
            case "AllocateMessageQueueByConfig":
                AllocateMessageQueueByConfig byConfig = new AllocateMessageQueueByConfig();
                JSONArray listed = params.getJSONArray("messageQueueList");
                if (listed != null) {
                    byConfig.setMessageQueueList(queues(listed));
                }
                return byConfig;
            case "AllocateMessageQueueByMachineRoom":
                AllocateMessageQueueByMachineRoom byRoom = new AllocateMessageQueueByMachineRoom();
                byRoom.setConsumeridcs(new HashSet<>(params.getJSONArray("consumeridcs").toJavaList(String.class)));
                return byRoom;
            case "AllocateMachineRoomNearby":
                String inner = params.getString("innerStrategy");
                return new AllocateMachineRoomNearby(
                    build(inner == null ? "AllocateMessageQueueAveragely" : inner, params),
                    new AllocateMachineRoomNearby.MachineRoomResolver() {
                        @Override
                        public String brokerDeployIn(MessageQueue messageQueue) {
                            return dashPrefix(messageQueue.getBrokerName());
                        }

                        @Override
                        public String consumerDeployIn(String clientID) {
                            return dashPrefix(clientID);
                        }
                    });
            case "BrokenAveragely":
                return new BrokenAveragely();
            default:
                throw new IllegalArgumentException("unknown strategy " + name);
        }
    }

    static List<MessageQueue> queues(JSONArray array) {
        List<MessageQueue> out = new ArrayList<>();
        for (int i = 0; i < array.size(); i++) {
            JSONObject q = array.getJSONObject(i);
            out.add(new MessageQueue(q.getString("topic"), q.getString("brokerName"), q.getIntValue("queueId")));
        }
        return out;
    }

    static String answer(String strategyName, String line) {
        JSONObject request = JSON.parseObject(line);
        JSONObject params = request.getJSONObject("params");
        JSONObject out = new JSONObject(true);
        try {
            AllocateMessageQueueStrategy strategy = build(strategyName, params == null ? new JSONObject() : params);
            List<MessageQueue> result = strategy.allocate(request.getString("consumerGroup"),
                request.getString("currentCID"), queues(request.getJSONArray("mqAll")),
                request.getJSONArray("cidAll").toJavaList(String.class));
            if (result == null) {
                out.put("result", null);
            } else {
                JSONArray share = new JSONArray();
                for (MessageQueue mq : result) {
                    JSONObject q = new JSONObject(true);
                    q.put("topic", mq.getTopic());
                    q.put("brokerName", mq.getBrokerName());
                    q.put("queueId", mq.getQueueId());
                    share.add(q);
                }
                out.put("result", share);
            }
        } catch (RuntimeException e) {
            out.put("error", e.toString());
        }
        return JSON.toJSONString(out, SerializerFeature.WriteMapNullValue);
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: StrategyDriver <strategy class simple name>");
            System.exit(2);
        }
        if (!KNOWN.contains(args[0])) {  // the others are built per request, from its params
            System.err.println("unknown strategy " + args[0] + "; known: " + KNOWN);
            System.exit(2);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.trim().isEmpty()) {
                out.println(answer(args[0], line));
                out.flush();
            }
        }
    }
}
