//go:build integration

package producer

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/logstore/logstore/internal/testkit"
)

// BenchmarkProduce writes JSON log rows of about 300 bytes, keyless, lz4,
// acks=all, 1,000 rows a call from 4 goroutines at once (as partition
// workers write their batches), to a 12-partition RF 3 topic on the
// three-rack cluster, with this producer and with kafka-go's Writer as the
// Kafka sink configured it (same batch size, bytes and timeout). It
// reports rows/s and the process's CPU-seconds per million rows. Run with
//
//	go test -tags integration -run '^$' -bench BenchmarkProduce -benchtime 200x ./internal/kafka/producer/
func BenchmarkProduce(b *testing.B) {
	client := testkit.RequireCluster(b)
	replicas := spreadReplicas(12)
	rows := benchRows(1000)
	const writers, batch = 4, 1000

	b.Run("logstore", func(b *testing.B) {
		topic := testkit.CreateTopic(b, client, replicas...)
		p, err := New(Config{Brokers: testkit.Brokers, Rack: "az-a", Partitioner: Sticky, Compression: compress.Lz4,
			BatchRecords: 1000, BatchBytes: 1 << 20, Linger: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		measure(b, writers, func(ctx context.Context) error {
			recs := make([]Record, batch)
			for i := range recs {
				recs[i] = Record{Value: rows[i], Headers: []Header{{Key: "logstore.source.offset", Value: []byte("1234567")}}}
			}
			return p.Produce(ctx, topic, recs)
		})
	})
	b.Run("kafka-go-writer", func(b *testing.B) {
		topic := testkit.CreateTopic(b, client, replicas...)
		w := &kafka.Writer{Addr: kafka.TCP(testkit.Brokers...), Topic: topic, Balancer: &kafka.Murmur2Balancer{},
			BatchSize: 1000, BatchBytes: 1 << 20, BatchTimeout: 50 * time.Millisecond, RequiredAcks: kafka.RequireAll,
			Compression: kafka.Lz4, Transport: &kafka.Transport{}}
		defer w.Close()
		measure(b, writers, func(ctx context.Context) error {
			msgs := make([]kafka.Message, batch)
			for i := range msgs {
				msgs[i] = kafka.Message{Value: rows[i], Headers: []kafka.Header{{Key: "logstore.source.offset", Value: []byte("1234567")}}}
			}
			return w.WriteMessages(ctx, msgs...)
		})
	})
}

// spreadReplicas is n partitions of RF 3 whose leaders take turns over
// the three brokers.
func spreadReplicas(n int) [][]int {
	var replicas [][]int
	for p := range n {
		replicas = append(replicas, []int{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1})
	}
	return replicas
}

// benchRows are n JSON log rows of about 300 bytes.
func benchRows(n int) [][]byte {
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = fmt.Appendf(nil, `{"ts":"2026-12-02T06:00:%02d.%06dZ","level":"info","service":"checkout-%d","trace_id":"%032x","msg":"request served","status":200,"latency_ms":%d,"path":"/api/v1/orders/%d","user_agent":"Mozilla/5.0 (X11; Linux x86_64)"}`,
			i%60, i, i%7, uint64(i)*0x9e3779b97f4a7c15, i%250, i)
	}
	return rows
}

// measure runs b.N calls of write (of 1,000 rows each) over writers
// goroutines and reports rows/s and CPU-seconds per million rows.
func measure(b *testing.B, writers int, write func(context.Context) error) {
	measureRows(b, writers, 1000, write)
}

// measureRows is measure with perCall rows a call.
func measureRows(b *testing.B, writers, perCall int, write func(context.Context) error) {
	ctx := context.Background()
	if err := write(ctx); err != nil { // connections and metadata, outside the count
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	calls := make(chan struct{}, b.N)
	for range b.N {
		calls <- struct{}{}
	}
	close(calls)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				if err := write(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	rows := float64(b.N) * float64(perCall)
	b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
	b.ReportMetric(cpu.Seconds()/rows*1e6, "CPU-s/Mrows")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
