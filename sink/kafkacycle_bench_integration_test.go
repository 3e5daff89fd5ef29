//go:build integration

package sink

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/internal/testkit"
)

// BenchmarkKafkaCycle is what exactly_once costs the Kafka output against
// at least once, as the job writes: one writer per source partition (12 or
// 96), each handing over a batch of 250 rows of about 300 bytes and
// waiting until it is written, b.N batches each. at_least_once produces
// each batch (Write); exactly_once hands it to the member's commit cycle
// (Transact), which writes every waiting batch and one TxnOffsetCommit of
// all their offsets in one transaction per sinks.commit_interval. Reports
// rows/s, CPU-seconds of this process per million rows, and transactions
// per minute. Run with
//
//	go test -tags integration -run '^$' -bench BenchmarkKafkaCycle -benchtime 3x ./sink/
func BenchmarkKafkaCycle(b *testing.B) {
	client := testkit.RequireCluster(b)
	const batch = 250
	schema := &Schema{Fields: []Field{{Name: "msg", Type: String}}}
	rows := make([]Row, batch)
	sources := make([]Source, batch)
	for i := range rows {
		rows[i] = Row{fmt.Sprintf(`2026-12-02T06:00:%02d.%06dZ info checkout-%d trace %032x request served status 200 latency_ms %d path /api/v1/orders/%d Mozilla/5.0 (X11; Linux x86_64)`,
			i%60, i, i%7, uint64(i)*0x9e3779b97f4a7c15, i%250, i)}
		sources[i] = Source{Offset: int64(i)}
	}
	for _, partitions := range []int{12, 96} {
		for _, mode := range []struct {
			name     string
			eos      bool
			interval time.Duration
		}{{"at_least_once", false, 0}, {"exactly_once/100ms", true, 100 * time.Millisecond}, {"exactly_once/1s", true, time.Second}, {"exactly_once/10s", true, 10 * time.Second}} {
			b.Run(fmt.Sprintf("p%d/%s", partitions, mode.name), func(b *testing.B) {
				topic := testkit.CreateTopic(b, client, []int{1, 2, 3}, []int{2, 3, 1}, []int{3, 1, 2}, []int{1, 3, 2}, []int{2, 1, 3}, []int{3, 2, 1})
				// The source: the brokers take offsets only for partitions
				// that exist.
				var spread [][]int
				for p := range partitions {
					spread = append(spread, []int{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1})
				}
				source := testkit.CreateTopic(b, client, spread...)
				cfg := &KafkaOutputConfig{Topic: topic}
				deps := KafkaDeps{Rack: "az-a", RackMatched: true, CommitInterval: mode.interval}
				if mode.eos {
					cfg.Delivery, deps.TransactionalID = DeliveryExactlyOnce, topic
					// Each transaction writes its offsets there too, as the job's.
					cfg.PositionsTopic = testkit.CreateTopic(b, client, []int{1, 2, 3})
				}
				cfg.setDefaults()
				k, err := newKafka(cfg, testkit.Brokers, deps)
				if err != nil {
					b.Fatal(err)
				}
				defer k.Close()
				member := &producer.GroupMember{Group: topic + "-g", Generation: -1}
				write := func(ctx context.Context, p, i int) error {
					bt := &Batch{Topic: source, Partition: p, First: int64(i * batch), Last: int64(i*batch + batch - 1), Schema: schema, Rows: rows, Sources: sources, ValidText: true}
					if !mode.eos {
						return k.produce(ctx, bt)
					}
					return k.Transact(ctx, &TxnPart{Batch: bt, Member: member, Offset: producer.Offset{Topic: source, Partition: int32(p), Offset: bt.Last + 1}})
				}
				ctx := context.Background()
				if err := write(ctx, 0, 0); err != nil { // connections and metadata, outside the count
					b.Fatal(err)
				}
				cycles0, cpu0, start := k.TxnCycles(), cpuTime(), time.Now()
				b.ResetTimer()
				var wg sync.WaitGroup
				for p := range partitions {
					wg.Go(func() {
						for i := range b.N {
							if err := write(ctx, p, i+1); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed, cpu := time.Since(start), cpuTime()-cpu0
				b.StopTimer()
				n := float64(b.N * partitions * batch)
				b.ReportMetric(n/elapsed.Seconds(), "rows/s")
				b.ReportMetric(cpu.Seconds()/n*1e6, "CPU-s/Mrows")
				b.ReportMetric(float64(k.TxnCycles()-cycles0)/elapsed.Minutes(), "txns/min")
			})
		}
	}
}
