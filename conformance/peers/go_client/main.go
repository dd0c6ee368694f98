// Client-conformance subject: the Go client's push consumer (github.com/apache/rocketmq-client-go/v2, from the
// Go module proxy), clustering, subscribed to MQTCK_TOPIC with "*", as an application writes it
// (docs/client-conformance.md).
//
// `mqtck gate go-client-2.1.2` builds it with `go build` from this module (go.mod pins the client's version)
// and runs it through the client check. The listener sleeps MQTCK_CONSUME_DELAY_MS per message and returns
// ConsumeSuccess; the consumer runs MQTCK_DURATION_S or until SIGTERM, then shuts down, which persists its
// offsets (v2.1.2 sends no UNREGISTER_CLIENT: the broker sees the connection close). Nothing is tuned: the point
// is to observe the library's own defaults. Each message the listener finished is reported on a line
// `mqtck-consume {...}` (the client check's consumption reports: CCLIENT-5 judges the cache by them).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func main() {
	rlog.SetLogLevel("warn")
	delayMs, err := strconv.Atoi(env("MQTCK_CONSUME_DELAY_MS", "0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "MQTCK_CONSUME_DELAY_MS: not an integer")
		os.Exit(2)
	}
	durationS, err := strconv.ParseFloat(env("MQTCK_DURATION_S", "10"), 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "MQTCK_DURATION_S: not a number")
		os.Exit(2)
	}
	var consumed atomic.Int64
	c, err := rocketmq.NewPushConsumer(
		consumer.WithGroupName(env("MQTCK_GROUP", "mqtck_group")),
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{env("MQTCK_NAMESRV", "127.0.0.1:9876")})),
		consumer.WithConsumerModel(consumer.Clustering),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new push consumer:", err)
		os.Exit(1)
	}
	err = c.Subscribe(env("MQTCK_TOPIC", "mqtck_topic"), consumer.MessageSelector{},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if delayMs > 0 {
				time.Sleep(time.Duration(delayMs*len(msgs)) * time.Millisecond)
			}
			now := time.Now().UnixMicro()
			for _, msg := range msgs {
				fmt.Printf("mqtck-consume {\"ts\": %d, \"topic\": %q, \"queue_id\": %d, \"offset\": %d}\n",
					now, msg.Queue.Topic, msg.Queue.QueueId, msg.QueueOffset)
			}
			consumed.Add(int64(len(msgs)))
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, "subscribe:", err)
		os.Exit(1)
	}
	if err = c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(1)
	}
	fmt.Println("go push consumer: started")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case <-time.After(time.Duration(durationS * float64(time.Second))):
	}
	if err = c.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
	}
	fmt.Printf("go push consumer: consumed %d message(s)\n", consumed.Load())
}
