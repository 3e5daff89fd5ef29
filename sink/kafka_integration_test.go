//go:build integration

package sink

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/internal/testkit"
)

func TestKafkaIntegrationEveryRowWithItsSourceHeaders(t *testing.T) {
	client := testkit.RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1}, []int{3, 1, 2})

	sinks, err := New(ctx, Config{Kafka: &KafkaOutputConfig{Topic: topic, Key: "service", Compression: "zstd"}}, Deps{KafkaBrokers: testkit.Brokers, Schema: logSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer sinks.Close()

	// Two input partitions; the second batch is written twice, as after a
	// crash before its commit: at least once, and the headers tell the
	// repeat.
	in := map[string]*Batch{}
	for p := range 2 {
		rows := logRows(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 700)
		b := &Batch{Topic: "in", Partition: p, First: 1000, Last: 1000 + int64(len(rows)) - 1, Schema: logSchema, Rows: rows}
		for i := range rows {
			b.Sources = append(b.Sources, Source{Offset: 1000 + int64(i)})
		}
		in[strconv.Itoa(p)] = b
	}
	start := time.Now()
	for _, b := range []*Batch{in["0"], in["1"], in["1"]} {
		if err := sinks.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("3 batches, 2100 records, acks=all: %s", time.Since(start).Round(time.Millisecond))

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: testkit.Brokers, GroupTopics: []string{topic}, GroupID: topic + "-check", StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	type source struct {
		partition string
		offset    int64
	}
	seen := map[source]int{}
	keyPartition := map[string]int{}
	total := 0
	for total < 2100 {
		// FetchMessage: the group only spreads the partitions; a commit
		// would fail when a broker restart earlier in the run moves the
		// coordinator back (Kafka's leader rebalance, 5 minutes later).
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %d records: %v", total, err)
		}
		total++
		if headerValue(m, HeaderSourceTopic) != "in" {
			t.Fatalf("record without its source topic header: %v", m.Headers)
		}
		src := source{headerValue(m, HeaderSourcePartition), 0}
		src.offset, err = strconv.ParseInt(headerValue(m, HeaderSourceOffset), 10, 64)
		b := in[src.partition]
		if err != nil || b == nil || src.offset < b.First || src.offset > b.Last {
			t.Fatalf("record with source headers %v", m.Headers)
		}
		seen[src]++
		row := b.Rows[src.offset-b.First]
		if want, _ := appendRowJSON(nil, logSchema, row); string(m.Value) != string(want) {
			t.Errorf("source %v: value %s, want %s", src, m.Value, want)
		}
		if string(m.Key) != row[2] {
			t.Errorf("source %v: key %q, want %q", src, m.Key, row[2])
		}
		if p, ok := keyPartition[string(m.Key)]; ok && p != m.Partition {
			t.Errorf("key %q in partitions %d and %d", m.Key, p, m.Partition)
		}
		keyPartition[string(m.Key)] = m.Partition
	}
	for p, b := range in {
		want := 1
		if p == "1" {
			want = 2
		}
		for off := b.First; off <= b.Last; off++ {
			if n := seen[source{p, off}]; n != want {
				t.Errorf("in[%s]@%d arrived %d times, want %d", p, off, n, want)
			}
		}
	}
}

// A member in az-a with the default partitioner (its zone matched a
// broker rack) produces keyless rows only to the partitions broker 1
// leads, and counts every produced byte same-rack, whether rows are
// written at the cut or staged before it; the Java client's
// murmur2 still places keyed rows (the test above).
func TestKafkaIntegrationKeylessRowsStayInTheMembersZone(t *testing.T) {
	client := testkit.RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Partitions 0 and 3 are led by broker 1 (az-a).
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1}, []int{3, 1, 2}, []int{1, 3, 2}, []int{2, 1, 3}, []int{3, 2, 1})
	stats := &producer.Stats{}
	sinks, err := New(ctx, Config{Kafka: &KafkaOutputConfig{Topic: topic, BatchBytes: 64 << 10}},
		Deps{KafkaBrokers: testkit.Brokers, Schema: logSchema, Kafka: KafkaDeps{Rack: "az-a", RackMatched: true, Stats: stats}})
	if err != nil {
		t.Fatal(err)
	}
	defer sinks.Close()
	// Ten input partitions to six output ones: where a row goes owes
	// nothing to its input partition. The odd ones go as a run sends
	// them, staged in chunks without waiting, then the cut's Write.
	const batches, per = 10, 500
	for p := range batches {
		rows := logRows(time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC), per)
		b := &Batch{Topic: "in", Partition: p, First: 0, Last: per - 1, Schema: logSchema, Rows: rows}
		if p%2 == 1 {
			for at := 0; at < per; at += 100 {
				chunk := *b
				chunk.Rows, chunk.Staged = rows[at:at+100], at
				if _, err := sinks.Kafka.Stage(ctx, &chunk); err != nil {
					t.Fatal(err)
				}
			}
			b.Rows, b.Staged = nil, per
		}
		if err := sinks.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: testkit.Brokers, GroupTopics: []string{topic}, GroupID: topic + "-check", StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	byPartition := map[int]int{}
	for range batches * per {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", byPartition, err)
		}
		byPartition[m.Partition]++
	}
	t.Logf("keyless rows by partition: %v", byPartition)
	for p, n := range byPartition {
		if p != 0 && p != 3 {
			t.Errorf("%d keyless rows on partition %d, not led in az-a", n, p)
		}
	}
	if snap := stats.Snapshot(); snap.CrossRackBytes != 0 || snap.SameRackBytes == 0 {
		t.Errorf("produced bytes same-rack %d, cross-rack %d; want all same-rack", snap.SameRackBytes, snap.CrossRackBytes)
	}
}
