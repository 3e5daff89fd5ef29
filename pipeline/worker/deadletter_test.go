package worker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/record"
)

// TestKafkaDeadLettersTooBigAreTruncated: a dead letter over the
// dead-letter topic's size limit is produced cut to fit, with its reason
// and coordinates, instead of holding the partition for ever.
func TestKafkaDeadLettersTooBigAreTruncated(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "dlq"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4096"}))
	stats := NewStats()
	p, err := producer.New(producer.Config{Brokers: c.ListenAddrs(), Linger: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	k := NewKafkaDeadLetters(p, "dlq", stats, nil)
	defer k.Close()
	big := bytes.Repeat([]byte("x"), 10000)
	old := time.Now().Add(-6 * 24 * time.Hour).Truncate(time.Millisecond) // a record caught up on
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = k.writeDeadLetters(ctx, &deadBatch{Topic: "logs", Partition: 3, First: 10, Last: 12, Letters: []RejectedRecord{
		{Reason: "bad json", Record: record.Record{Topic: "logs", Partition: 3, Offset: 10, Value: []byte("{"), Time: old}},
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
	// Its record's timestamp, as Kafka Connect's dead letters keep theirs
	// (reference.yaml: the topic's retention counts from it).
	if m := got["10"]; !m.Time.Equal(old) {
		t.Errorf("offset 10: the dead letter's timestamp is %v; want its record's, %v", m.Time, old)
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
