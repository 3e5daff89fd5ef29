package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// BenchmarkManyPartitions is the same 120,000 logs read by one member
// from 12 and from 600 partitions that have little to say: each fetch
// brings at most 16 records, as a partition fed slowly does, and every
// partition's batch writes its files at the end (the files sink, the
// default budget of 128 MiB and Go's soft memory limit set from it). What
// a partition costs beyond its records shows as the 600 partitions'
// records/s against the 12's; peak-MiB is the most memory the runtime
// held from the OS, which must stay near the budget's promise at any
// partition count (issue 44).
func BenchmarkManyPartitions(b *testing.B) {
	for _, parts := range []int{12, 600} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) { manyPartitions(b, parts, 120_000, 16) })
	}
}

// slowLog is a partition of n realistic logs whose fetches bring at most
// most records each, in a buffer of their own as the fetch client's do.
type slowLog struct {
	genLog
	most int
}

func (s *slowLog) Fetch(ctx context.Context) ([]record.Record, int64, error) {
	if s.pos >= s.n {
		<-ctx.Done()
		return nil, s.n, ctx.Err()
	}
	var buf []byte
	msgs := make([]record.Record, 0, s.most)
	for ; s.pos < s.n && len(msgs) < s.most; s.pos++ {
		_, v, at := s.gen.Next()
		buf = append(buf, v...)
		msgs = append(msgs, record.Record{Topic: "t", Partition: s.partition, Offset: s.pos, Value: v, Time: at})
	}
	for i, at := 0, 0; i < len(msgs); i++ { // the values into buf, now that it moved no more
		n := len(msgs[i].Value)
		msgs[i].Value, at = buf[at:at+n:at+n], at+n
	}
	return msgs, s.n, nil
}

func manyPartitions(b *testing.B, parts, n, most int) {
	dec := benchDecoder(b)
	const memoryBudget = 128 << 20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memoryBudget + 96<<20))
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go sampleMemory(&peak, stop, sampled)
	b.ReportAllocs()
	for b.Loop() {
		sinks := benchFilesAt(b, dec, b.TempDir())
		per := int64(n / parts)
		readers := make([]Reader, parts)
		for p := range readers {
			gen := loggen.New(uint64(p), time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), time.Hour/time.Duration(per))
			readers[p] = &slowLog{genLog: genLog{gen: gen, partition: p, n: per}, most: most}
		}
		runMember(b, dec, sinks, NewBudget(memoryBudget), readers, per)
		sinks.Close()
	}
	close(stop)
	<-sampled
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
}

// runMember is a member's workers, one per reader, writing into sinks
// within budget until each took its per records.
func runMember(b *testing.B, dec *decode.Decoder, sinks *sink.Sinks, budget *Budget, readers []Reader, per int64) {
	stats := NewStats()
	var g errgroup.Group
	for p, r := range readers {
		w := &Worker{Config: Config{
			Topic: "t", Partition: p, Decoder: dec, Reader: r,
			Columns: len(dec.Schema().Fields), Commit: &fakeCommitter{}, Sinks: sinks.All(),
			OnError: "fail", OnOutOfRange: "fail", Limits: Limits{MaxAge: time.Hour},
			Budget: budget, FetchMax: 1 << 20, Stats: stats, Target: per, FlushWait: time.Second,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}}
		g.Go(func() error { return w.Run(context.Background(), position{Offset: 0, Cut: -1}) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	if got := stats.Records.Load(); got != per*int64(len(readers)) {
		b.Fatalf("took %d records, want %d", got, per*int64(len(readers)))
	}
}
