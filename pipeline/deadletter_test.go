package pipeline

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/pipeline/record"
)

// TestKafkaDeadLettersTooBigAreTruncated: a dead letter over the
// dead-letter topic's size limit is produced cut to fit, with its reason
// and coordinates, instead of holding the partition for ever.
func TestKafkaDeadLettersTooBigAreTruncated(t *testing.T) {
	c := fakeCluster(t, kfake.SeedTopics(1, "dlq"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4096"}))
	stats := newStats()
	k, err := newKafkaDeadLetters(&Clients{Brokers: c.ListenAddrs()}, "dlq", "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	k.stats = stats
	defer k.Close()
	big := bytes.Repeat([]byte("x"), 10000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = k.writeDeadLetters(ctx, &deadBatch{Topic: "logs", Partition: 3, First: 10, Last: 12, Letters: []RejectedRecord{
		{Reason: "bad json", Record: record.Record{Topic: "logs", Partition: 3, Offset: 10, Value: []byte("{")}},
		{Reason: "sink refused the row", Record: record.Record{Topic: "logs", Partition: 3, Offset: 11, Value: big}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.ListenAddrs(), Topic: "dlq", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	got := map[string]kafka.Message{}
	for len(got) < 2 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("reading the dead letters: %v (have %d)", err, len(got))
		}
		got[header(m, "logstore.source.offset")] = m
	}
	if m := got["10"]; string(m.Value) != "{" || header(m, headerTruncated) != "" {
		t.Errorf("offset 10: value %q, truncated %q; want it whole", m.Value, header(m, headerTruncated))
	}
	m := got["11"]
	if len(m.Value) != truncatedValueBytes || header(m, headerTruncated) != "10000" || header(m, headerError) != "sink refused the row" ||
		header(m, "logstore.source.topic") != "logs" || header(m, "logstore.source.partition") != "3" {
		t.Errorf("offset 11: %d value bytes, headers %v; want 1 KiB with the reason, coordinates and original size", len(m.Value), m.Headers)
	}
	if n := stats.TruncatedLetters.Load(); n != 1 {
		t.Errorf("%d truncated dead letters counted, want 1", n)
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// fakeCluster is an in-process Kafka (kfake), closed with the test.
func fakeCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
