package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/pipeline"
)

// embeddedKafka starts a one-broker kfake cluster with the topic "logs"
// and produces msgs to it.
func embeddedKafka(t *testing.T, partitions int, msgs ...kafka.Message) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), "logs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	if len(msgs) > 0 {
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "logs", Balancer: &kafka.Hash{}, BatchSize: 1000, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll}
		defer w.Close()
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	return brokers
}

// embeddedJob is a job config for embeddedKafka's brokers writing files to
// dir; kafkaKeys adds indented keys to the kafka section, body the schema
// and anything else.
func embeddedJob(t *testing.T, brokers []string, dir, kafkaKeys, body string) *pipeline.Config {
	t.Helper()
	yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [logs]
  group: fidelity
  isolation: read_uncommitted
  start_offset: earliest
%s
rack:
  providers: [static]
sinks:
  files:
    url: file://%s
dead_letter: {files: true}
log:
  level: info
  format: text
`, strings.Join(brokers, ","), kafkaKeys, dir) + body
	cfg, err := pipeline.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return cfg
}

// syncBuffer is a log destination tests can read while the job writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUntilNowStoppedEarlyExits3: `run --until now` stopped by a signal
// before it reached the end offsets exits 3, not 0, so a scheduler can
// tell it did not finish.
func TestUntilNowStoppedEarlyExits3(t *testing.T) {
	msgs := make([]kafka.Message, 200)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"n": %d}`, i)}
	}
	brokers := embeddedKafka(t, 1, msgs...)
	cfg := embeddedJob(t, brokers, t.TempDir(), "  max_records_per_second: 1", `schema:
  columns: [{name: n, type: int64}]
`)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runJob(ctx, cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}, new(bytes.Buffer))
	}()
	for !strings.Contains(logs.String(), "msg=generation") {
		select {
		case err := <-done:
			t.Fatalf("the job ended before it joined: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel() // what the first SIGTERM does
	err := <-done
	var stderr bytes.Buffer
	if code := exitCode(err, &stderr); code != exitStopped {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitStopped, logs.String())
	}
	if !strings.Contains(stderr.String(), "stopped before reaching the end offsets") {
		t.Errorf("stderr does not say why: %s", stderr.String())
	}
}
