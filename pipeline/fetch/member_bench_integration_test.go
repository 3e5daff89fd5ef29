//go:build integration

package fetch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
)

// BenchmarkIntegrationMember is one member of a consumer group reading 12
// and 600 partitions (RF 3, leaders on all three brokers) in rack az-a, the
// way the job's partition workers (pipeline/worker) do: one goroutine per
// partition calling Fetch. It reads benchRecords records from the start
// (records/s), then stays caught up with nothing to read for benchIdle and
// reports, for that idle time, the Fetch requests per second (all brokers,
// and the busiest) and the CPU the process used per second; conns is every
// connection the member opened. Run it with -benchtime=1x:
//
//	scripts/kafka-cluster.sh start
//	go test -tags integration -run '^$' -bench IntegrationMember -benchtime=1x ./pipeline/fetch
func BenchmarkIntegrationMember(b *testing.B) {
	client := testkit.RequireCluster(b)
	for _, n := range []int{12, 600} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			replicas := make([][]int, n)
			for p := range replicas {
				replicas[p] = []int{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}
			}
			topic := testkit.CreateTopic(b, client, replicas...)
			perPartition := benchRecords / n
			produceSpreadTo(b, topic, n, perPartition)
			for b.Loop() {
				benchmarkMember(b, topic, n, int64(perPartition))
			}
		})
	}
}

const (
	benchRecords = 120000
	benchIdle    = 10 * time.Second
)

func produceSpreadTo(b *testing.B, topic string, partitions, perPartition int) {
	cl := testkit.Producer(b, topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var recs []*kgo.Record
	flush := func() {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		recs = recs[:0]
	}
	for i := range perPartition {
		for p := range partitions {
			r := sequenced(i)
			r.Partition = int32(p)
			if recs = append(recs, r); len(recs) == 5000 {
				flush()
			}
		}
	}
	flush()
}

func benchmarkMember(b *testing.B, topic string, n int, perPartition int64) {
	var dials atomic.Int64
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, DialFunc: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	stats := &Stats{}
	readers, closeMember := memberReaders(ReaderConfig{
		Brokers: testkit.Brokers, Dialer: dialer, Topic: topic, Rack: "az-a",
		MaxBytes: 1 << 20, Stats: stats, Log: slog.New(slog.DiscardHandler),
	}, n)
	defer closeMember()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var caughtUp, running sync.WaitGroup
	var records atomic.Int64
	start := time.Now()
	for _, r := range readers {
		caughtUp.Add(1)
		running.Add(1)
		go func() {
			defer running.Done()
			r.SetOffset(0)
			done := false
			for ctx.Err() == nil {
				msgs, _, err := r.Fetch(ctx)
				if err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					break
				}
				records.Add(int64(len(msgs)))
				if !done && r.Offset() >= perPartition {
					done = true
					caughtUp.Done()
				}
			}
			if !done {
				caughtUp.Done()
			}
		}()
	}
	caughtUp.Wait()
	read := time.Since(start)
	if got, want := records.Load(), perPartition*int64(n); got != want {
		b.Fatalf("read %d records, want %d", got, want)
	}

	time.Sleep(time.Second) // let the last answers of the read settle
	before, cpuBefore, idleStart := stats.Snapshot(), cpuTime(), time.Now()
	time.Sleep(benchIdle)
	after, cpuAfter, idle := stats.Snapshot(), cpuTime(), time.Since(idleStart)
	stop()
	running.Wait()

	var total, busiest float64
	for i, bs := range after.Brokers {
		var was int64
		if i < len(before.Brokers) && before.Brokers[i].ID == bs.ID {
			was = before.Brokers[i].Fetches
		}
		perSec := float64(bs.Fetches-was) / idle.Seconds()
		total += perSec
		busiest = max(busiest, perSec)
	}
	b.ReportMetric(float64(records.Load())/read.Seconds(), "records/s")
	b.ReportMetric(total, "idle-fetches/s")
	b.ReportMetric(busiest, "idle-fetches/s/busiest-broker")
	b.ReportMetric(float64(cpuAfter-cpuBefore)/float64(time.Millisecond)/idle.Seconds(), "idle-cpu-ms/s")
	b.ReportMetric(float64(dials.Load()), "conns")
}

// cpuTime is the user and system CPU the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
