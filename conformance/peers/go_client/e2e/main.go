// `mqtck bench e2e --client go`'s clients: Apache RocketMQ's Go client (github.com/apache/rocketmq-client-go/v2,
// pinned by this module's go.mod, from the Go module proxy) as a deployment runs it, writing what only a client
// sees as trace schema v1 rows, to be audited with the broker's view that `mqtck record` takes off the wire. The
// command line and the rows are those of conformance/peers/java_client/EndToEnd.java, so that the harness
// (conformance/bench/e2e.py) runs either client the same way and the audit reads both traces the same way.
//
//	mqtck-go-e2e produce NAMESRV TOPIC MESSAGES PER_SECOND
//	mqtck-go-e2e consume NAMESRV TOPIC GROUP TRACE_FILE RUN
//
// produce: one producer sends MESSAGES messages (synchronous sends, tag A) at about PER_SECOND, then prints a JSON
// line with what was acknowledged.
//
// consume: a push consumer, clustering, subscribed to TOPIC with "*", from the first offset of a new group, with
// the default allocation (consumer.AllocateByAveragely) wrapped so that every rebalance round is written as ASSIGN
// and REVOKE rows, and a listener that writes a CONSUME row (status OK) for every message before it returns
// ConsumeSuccess. Rows are written unbuffered (one os.File.Write each: the row reaches the file before the
// listener returns), so a SIGKILL loses none of the consumptions the client reported to the broker. SIGTERM
// shuts the consumer down (which persists its offsets and unregisters). Nothing else is tuned: the point is to
// observe the library's defaults.
//
// msg_id: the Go client decodes a received message's MsgId as its UNIQ_KEY property when it has one (primitive
// DecodeMessage), as Java's getMsgId() does, and the Go producer sets UNIQ_KEY on every message it sends
// (producer buildSendRequest); the recorder's SEND rows name a message by the same UNIQ_KEY, so the audit joins
// a CONSUME to its SEND.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// sendTimeout is a send's timeout in the produce mode (see its use).
const sendTimeout = 10 * time.Second

const usage = "usage: mqtck-go-e2e produce NAMESRV TOPIC MESSAGES PER_SECOND | " +
	"consume NAMESRV TOPIC GROUP TRACE_FILE RUN"

func main() {
	// The client logs to stderr; warnings and errors are what a reader of a finding needs.
	rlog.SetLogLevel("warn")
	var err error
	switch {
	case len(os.Args) == 6 && os.Args[1] == "produce":
		var messages, perSecond int
		if messages, err = strconv.Atoi(os.Args[4]); err == nil {
			perSecond, err = strconv.Atoi(os.Args[5])
		}
		if err != nil || messages < 0 || perSecond < 1 {
			fail(2, usage)
		}
		err = produce(os.Args[2], os.Args[3], messages, perSecond)
	case len(os.Args) == 7 && os.Args[1] == "consume":
		err = consume(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6])
	default:
		fail(2, usage)
	}
	if err != nil {
		fail(1, "mqtck-go-e2e: "+err.Error())
	}
}

func fail(code int, text string) {
	fmt.Fprintln(os.Stderr, text)
	os.Exit(code)
}

func produce(namesrv, topic string, messages, perSecond int) error {
	p, err := rocketmq.NewProducer(
		producer.WithGroupName("mqtck_e2e_producer"),
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		// 10 s, not the client's 3 s: CI runs this beside another lane on 2 cores; the run judges consumption.
		producer.WithSendMsgTimeout(sendTimeout),
	)
	if err != nil {
		return fmt.Errorf("new producer: %w", err)
	}
	if err = p.Start(); err != nil {
		return fmt.Errorf("start producer: %w", err)
	}
	started := time.Now()
	acked, failed := 0, 0
	for i := 0; i < messages; i++ {
		due := started.Add(time.Duration(float64(i) * 1e9 / float64(perSecond)))
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		msg := primitive.NewMessage(topic, []byte("m"+strconv.Itoa(i))).WithTag("A")
		result, sendErr := p.SendSync(context.Background(), msg)
		if sendErr == nil && result.Status == primitive.SendOK {
			acked++
		} else {
			failed++
			fmt.Fprintf(os.Stderr, "send %d failed: %v %v\n", i, sendErr, result)
		}
	}
	seconds := time.Since(started).Seconds()
	if err = p.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown producer:", err)
	}
	fmt.Printf("{\"acked\": %d, \"failed\": %d, \"seconds\": %.1f}\n", acked, failed, seconds)
	return nil
}

// traceWriter writes one client's trace rows as they happen.
type traceWriter struct {
	mu     sync.Mutex
	out    *os.File
	run    string
	source string
	seq    int64
}

func newTraceWriter(path, run string) (*traceWriter, error) {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &traceWriter{out: out, run: run}, nil
}

// row writes one row with one Write call (no buffer: a SIGKILL right after it still leaves the row in the file).
// ts is in whole milliseconds, as the Java client's rows and the recorder's, so that rows of the same millisecond
// from different recorders are ordered by the audit's tie rule rather than by sub-millisecond noise of one side.
func (t *traceWriter) row(clientID, event, columns string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.source == "" {
		t.source = "client:" + clientID
	}
	t.seq++
	line := "{\"schema_version\":1,\"run\":" + quote(t.run) + ",\"ts\":" +
		strconv.FormatInt(time.Now().UnixMilli()*1000, 10) + ",\"source\":" + quote(t.source) + ",\"seq\":" +
		strconv.FormatInt(t.seq, 10) + ",\"event\":" + quote(event) + ",\"client_id\":" + quote(clientID) +
		columns + "}\n"
	if _, err := t.out.Write([]byte(line)); err != nil {
		// A trace that silently lacks rows would be judged as if the client had not done what it did.
		fail(1, "mqtck-go-e2e: writing the trace: "+err.Error())
	}
}

func quote(text string) string {
	b, _ := json.Marshal(text)
	return string(b)
}

func queueColumns(group string, mq *primitive.MessageQueue) string {
	return ",\"group\":" + quote(group) + ",\"topic\":" + quote(mq.Topic) + ",\"broker\":" + quote(mq.BrokerName) +
		",\"queue_id\":" + strconv.Itoa(mq.QueueId)
}

// recordedAllocation is consumer.AllocateByAveragely, recording each round's changes for this client as ASSIGN
// and REVOKE. The client applies the returned queues right after the strategy returns (rebalances are
// serialised by the client's rebalance lock), so an ASSIGN row precedes the queue's first pull and a REVOKE row
// precedes its drop, as in the Java wrapper.
type recordedAllocation struct {
	mu       sync.Mutex
	trace    *traceWriter
	owned    map[primitive.MessageQueue]bool
	epoch    int64
	clientID string
}

func (a *recordedAllocation) allocate(group, currentCID string, mqAll []*primitive.MessageQueue,
	cidAll []string) []*primitive.MessageQueue {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clientID = currentCID
	mine := consumer.AllocateByAveragely(group, currentCID, mqAll, cidAll)
	if len(mqAll) == 0 {
		// No topic to tell from the queues. The Java wrapper records nothing here either; say so, because the
		// client drops every queue of the topic it is balancing when this happens to the subscribed topic.
		if len(a.owned) > 0 {
			fmt.Fprintln(os.Stderr, "mqtck-go-e2e: a rebalance round with no queues; nothing recorded")
		}
		return mine
	}
	if strings.HasPrefix(mqAll[0].Topic, "%") {
		return mine // the retry topic: nothing is sent to it here
	}
	a.epoch++
	kept := make(map[primitive.MessageQueue]bool, len(mine))
	for _, mq := range mine {
		kept[*mq] = true
	}
	revoked := make([]primitive.MessageQueue, 0)
	for mq := range a.owned {
		if !kept[mq] {
			revoked = append(revoked, mq)
		}
	}
	sort.Slice(revoked, func(i, j int) bool { return revoked[i].QueueId < revoked[j].QueueId })
	for i := range revoked {
		delete(a.owned, revoked[i])
		a.trace.row(currentCID, "REVOKE", queueColumns(group, &revoked[i])+",\"epoch\":"+
			strconv.FormatInt(a.epoch, 10))
	}
	for _, mq := range mine {
		if !a.owned[*mq] {
			a.owned[*mq] = true
			// The group starts from the first offset of a new topic: offset 0 is where it starts (the audit
			// takes a queue's start from its first ASSIGN).
			a.trace.row(currentCID, "ASSIGN", queueColumns(group, mq)+",\"offset\":0,\"epoch\":"+
				strconv.FormatInt(a.epoch, 10))
		}
	}
	return mine
}

func (a *recordedAllocation) currentClientID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clientID
}

func consume(namesrv, topic, group, tracePath, run string) error {
	trace, err := newTraceWriter(tracePath, run)
	if err != nil {
		return fmt.Errorf("open the trace: %w", err)
	}
	allocation := &recordedAllocation{trace: trace, owned: make(map[primitive.MessageQueue]bool)}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithGroupName(group),
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithStrategy(allocation.allocate),
	)
	if err != nil {
		return fmt.Errorf("new push consumer: %w", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			concurrently, ok := primitive.GetConcurrentlyCtx(ctx)
			if !ok {
				// Never with a concurrent push consumer; without the queue the row could not be written.
				return consumer.ConsumeRetryLater, fmt.Errorf("no concurrently context")
			}
			mq := concurrently.MQ
			clientID := allocation.currentClientID()
			for _, msg := range msgs {
				trace.row(clientID, "CONSUME", queueColumns(group, &mq)+",\"offset\":"+
					strconv.FormatInt(msg.QueueOffset, 10)+",\"msg_id\":"+quote(msg.MsgId)+",\"status\":\"OK\"")
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if err = c.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Println("mqtck-go-e2e: consuming")
	<-stop
	if err = c.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
	}
	return nil
}
