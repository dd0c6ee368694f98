// Client-conformance subject for RocketMQ 5 (gRPC, POP): the official Go client
// (github.com/apache/rocketmq-clients/golang/v5, from the Go module proxy) as an application writes it.
//
// `mqtck gate go-client-v5-5.1.2` builds it with `go build` from this module (go.mod pins the client's version)
// and runs it through the POP client check with the environment of docs/client-conformance.md ("RocketMQ 5
// clients"): MQTCK_ENDPOINTS, MQTCK_TOPIC, MQTCK_GROUP, MQTCK_MODE, MQTCK_FAIL, MQTCK_FAIL_ATTEMPTS, MQTCK_COUNT,
// MQTCK_EXTEND, MQTCK_INVISIBLE_S, MQTCK_RETRY_INVISIBLE_S, MQTCK_AWAIT_S, MQTCK_BATCH, MQTCK_CONSUME_DELAY_MS,
// MQTCK_DURATION_S. Every consumption is one JSON line on stdout. MQTCK_MODE=produce sends MQTCK_COUNT messages
// m-0, m-1, ... with the client's Producer, a "sent" line each (the recorded kill-one run of docs/audit.md).
//
// v5.1.2 (the newest version the module proxy serves) has a SimpleConsumer and no PushConsumer: MQTCK_MODE=push
// exits with status 3 and a line saying so, which the check reports as not applicable.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// exitUnsupported is the status of a mode this client does not have (the check's "not applicable").
const exitUnsupported = 3

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func envInt(name, fallback string) int {
	value, err := strconv.Atoi(env(name, fallback))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: not an integer\n", name)
		os.Exit(2)
	}
	return value
}

// plaintext makes the client dial without TLS. v5.1.2 always dials TLS (its default connection options carry an
// InsecureSkipVerify tls.Config, and no Config field turns it off), which the reference front does not speak (the
// proxy accepts both). The package's exported NewRpcClient hook, through which every connection is made, takes
// connection options: a later transport credential replaces the TLS one.
func plaintext() {
	dial := rmq.NewRpcClient
	rmq.NewRpcClient = func(target string, opts ...rmq.RpcClientOption) (rmq.RpcClient, error) {
		opts = append(opts, rmq.WithRpcClientConnOption(
			rmq.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()))))
		return dial(target, opts...)
	}
}

func line(fields map[string]any) {
	out, _ := json.Marshal(fields)
	fmt.Println(string(out))
}

// produce sends count messages one after another with the official Producer, a line per message sent; the exit
// status (1 when the producer cannot start or a send fails: the run's producer must send them all).
func produce(endpoint, topic string, count int) int {
	producer, err := rmq.NewProducer(&rmq.Config{Endpoint: endpoint, Credentials: &credentials.SessionCredentials{}},
		rmq.WithTopics(topic))
	if err == nil {
		err = producer.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		return 1
	}
	line(map[string]any{"event": "started", "mode": "produce"})
	sent := 0
	for i := 0; i < count; i++ {
		body := fmt.Sprintf("m-%d", i)
		receipts, err := producer.Send(context.TODO(), &rmq.Message{Topic: topic, Body: []byte(body)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "send:", err)
			return 1
		}
		line(map[string]any{"event": "sent", "body": body, "message_id": receipts[0].MessageID,
			"ts_ms": time.Now().UnixMilli()})
		sent++
	}
	if err = producer.GracefulStop(); err != nil {
		fmt.Fprintln(os.Stderr, "graceful stop:", err)
	}
	line(map[string]any{"event": "stopped", "sent": sent})
	return 0
}

func main() {
	mode := env("MQTCK_MODE", "push")
	if mode == "push" {
		line(map[string]any{"event": "unsupported", "mode": "push",
			"message": "rocketmq-clients/golang/v5 v5.1.2 has no PushConsumer"})
		os.Exit(exitUnsupported)
	}
	if mode == "produce" {
		plaintext()
		os.Exit(produce(env("MQTCK_ENDPOINTS", "127.0.0.1:8081"), env("MQTCK_TOPIC", "mqtck_topic"),
			envInt("MQTCK_COUNT", "0")))
	}
	if mode != "simple" {
		fmt.Fprintf(os.Stderr, "MQTCK_MODE: must be simple, push or produce, not %s\n", mode)
		os.Exit(2)
	}
	durationS, err := strconv.ParseFloat(env("MQTCK_DURATION_S", "30"), 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "MQTCK_DURATION_S: not a number")
		os.Exit(2)
	}
	fail := map[string]bool{}
	if value := env("MQTCK_FAIL", ""); value != "" {
		for _, body := range strings.Split(value, ",") {
			fail[body] = true
		}
	}
	extend := map[string]bool{}
	if value := env("MQTCK_EXTEND", ""); value != "" {
		for _, body := range strings.Split(value, ",") {
			extend[body] = true
		}
	}
	failAttempts := int32(envInt("MQTCK_FAIL_ATTEMPTS", "1"))
	delay := time.Duration(envInt("MQTCK_CONSUME_DELAY_MS", "0")) * time.Millisecond
	count := envInt("MQTCK_COUNT", "0")
	invisible := time.Duration(envInt("MQTCK_INVISIBLE_S", "10")) * time.Second
	retryInvisible := time.Duration(envInt("MQTCK_RETRY_INVISIBLE_S", "2")) * time.Second
	batch := int32(envInt("MQTCK_BATCH", "16"))
	topic := env("MQTCK_TOPIC", "mqtck_topic")
	plaintext()

	consumer, err := rmq.NewSimpleConsumer(&rmq.Config{
		Endpoint:      env("MQTCK_ENDPOINTS", "127.0.0.1:8081"),
		ConsumerGroup: env("MQTCK_GROUP", "mqtck_group"),
		Credentials:   &credentials.SessionCredentials{},
	},
		rmq.WithAwaitDuration(time.Duration(envInt("MQTCK_AWAIT_S", "5"))*time.Second),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new simple consumer:", err)
		os.Exit(1)
	}
	if err = consumer.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(1)
	}
	line(map[string]any{"event": "started", "mode": "simple"})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	deadline := time.Now().Add(time.Duration(durationS * float64(time.Second)))
	succeeded := 0
	stopped := false
	for !stopped && time.Now().Before(deadline) && (count == 0 || succeeded < count) {
		select {
		case <-stop:
			stopped = true
			continue
		default:
		}
		views, err := consumer.Receive(context.TODO(), batch, invisible)
		if err != nil {
			// MESSAGE_NOT_FOUND (nothing to receive) is an error to this client; the loop simply receives again.
			if !strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				line(map[string]any{"event": "error", "call": "receive", "message": err.Error()})
				time.Sleep(time.Second)
			}
			continue
		}
		for _, view := range views {
			if delay > 0 {
				time.Sleep(delay)
			}
			body := string(view.GetBody())
			if extend[body] {
				// The application needs longer: it extends the invisible time, then acks with the handle the change
				// gave (the client keeps it in the view).
				if err = consumer.ChangeInvisibleDuration(view, invisible); err != nil {
					line(map[string]any{"event": "error", "call": "change", "message": err.Error()})
				}
			}
			ok := !(fail[body] && view.GetDeliveryAttempt() <= failAttempts)
			result := "SUCCESS"
			if !ok {
				result = "FAILURE"
			}
			line(map[string]any{"event": "consumed", "body": body, "message_id": view.GetMessageId(),
				"attempt": view.GetDeliveryAttempt(), "result": result, "ts_ms": time.Now().UnixMilli()})
			if ok {
				succeeded++
				err = consumer.Ack(context.TODO(), view)
			} else {
				err = consumer.ChangeInvisibleDuration(view, retryInvisible)
			}
			if err != nil {
				line(map[string]any{"event": "error", "call": "ack", "message": err.Error()})
			}
		}
	}
	if err = consumer.GracefulStop(); err != nil {
		fmt.Fprintln(os.Stderr, "graceful stop:", err)
	}
	line(map[string]any{"event": "stopped", "succeeded": succeeded})
}
