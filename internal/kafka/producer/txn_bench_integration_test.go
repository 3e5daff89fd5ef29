//go:build integration

package producer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"

	"github.com/logstore/logstore/internal/testkit"
)

// BenchmarkTransaction is what exactly_once costs a member against at
// least once, as the Kafka sink writes: batches of 250 rows (a partition's
// batch) from 4 partition workers at once to a 12-partition RF 3 topic,
// idempotent (each batch one Produce) against transactional (each batch
// one transaction with its offset: BeginTxn, Produce, SendOffsets for a
// group, CommitTxn; the member's transactions take turns, as in the sink).
// Run with
//
//	go test -tags integration -run '^$' -bench BenchmarkTransaction -benchtime 100x ./internal/kafka/producer/
func BenchmarkTransaction(b *testing.B) {
	client := testkit.RequireCluster(b)
	replicas := spreadReplicas(12)
	const writers, batch = 4, 250
	rows := benchRows(batch)
	records := func() []Record {
		recs := make([]Record, batch)
		for i := range recs {
			recs[i] = Record{Value: rows[i]}
		}
		return recs
	}
	cfg := Config{Brokers: testkit.Brokers, Rack: "az-a", Partitioner: RackAware, Compression: compress.Lz4,
		BatchRecords: 1000, BatchBytes: 1 << 20, Linger: 5 * time.Millisecond}

	b.Run("at-least-once", func(b *testing.B) {
		topic := testkit.CreateTopic(b, client, replicas...)
		p, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		measureRows(b, writers, batch, func(ctx context.Context) error { return p.Produce(ctx, topic, records()) })
	})
	b.Run("exactly-once", func(b *testing.B) {
		topic := testkit.CreateTopic(b, client, replicas...)
		c := cfg
		c.TransactionalID = topic
		p, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		// The group's generation is not checked without a member id
		// (generation -1): the offsets commit as an admin's would.
		member := GroupMember{Group: topic + "-g", Generation: -1}
		var turn sync.Mutex
		var next int64
		measureRows(b, writers, batch, func(ctx context.Context) error {
			turn.Lock()
			defer turn.Unlock()
			if err := p.BeginTxn(ctx); err != nil {
				return err
			}
			next += batch
			err := p.Produce(ctx, topic, records())
			if err == nil {
				err = p.SendOffsets(ctx, member, []Offset{{Topic: topic, Partition: 0, Offset: next}})
			}
			if err == nil {
				err = p.CommitTxn(ctx)
			}
			if err != nil {
				p.AbortTxn(ctx)
			}
			return err
		})
	})
}
