package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// benchSchema is the benchmarks' columns: the demo's (scripts/bench decodes
// the same), without its where filter, so every record is decoded and written.
func benchSchema(tb testing.TB) decode.SchemaConfig {
	demo, err := os.ReadFile(filepath.Join("..", "..", "cmd", "logstore", "demo.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	// Only its schema section: the rest holds ${…} the demo fills in.
	_, section, _ := strings.Cut(string(demo), "\nschema:\n")
	if end := regexp.MustCompile(`\n[a-z]`).FindStringIndex(section); end != nil {
		section = section[:end[0]]
	}
	var sc struct{ Schema decode.SchemaConfig }
	if err := yaml.Unmarshal([]byte("schema:\n"+section), &sc); err != nil {
		tb.Fatal(err)
	}
	sc.Schema.Where = ""
	return sc.Schema
}

func benchDecoder(b *testing.B) *decode.Decoder {
	dec, err := decode.New(benchSchema(b))
	if err != nil {
		b.Fatal(err)
	}
	return dec
}

// benchFilesAt is the bench's files sink: zstd Parquet into dt=/hour=
// folders under out, sorted by sortBy.
func benchFilesAt(b *testing.B, dec *decode.Decoder, out string, sortBy ...sink.SortKey) *sink.Sinks {
	sinks, err := sink.New(context.Background(), sink.Config{Files: &sink.FilesConfig{
		URL: out, SpoolDir: b.TempDir(), SortBy: sortBy,
		PartitionBy: []sink.PartitionColumn{{Name: "dt", Column: "ts", Format: "2006-01-02"}, {Name: "hour", Column: "ts", Format: "15"}},
	}}, sink.Deps{Schema: dec.Schema()})
	if err != nil {
		b.Fatal(err)
	}
	return sinks
}

// BenchmarkWorkerHotPath is one partition's catch-up as the bench runs it,
// without Kafka: a worker takes 100,000 realistic logs (internal/loggen,
// about 330 bytes each) in fetches of 1 MiB, decodes them with the bench's
// schema, stages them into the files sink (zstd Parquet in dt=/hour=
// folders, the default budget of 128 MiB) and writes the batch at the end.
// Everything the process does per record but read the network.
// bytes/record is the size of the files written, so a change that buys CPU
// with size shows in the same line.
func BenchmarkWorkerHotPath(b *testing.B) {
	dec := benchDecoder(b)
	const n = 100_000
	gen := loggen.New(1, time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 72*time.Millisecond)
	values := make([][]byte, n)
	var size int64
	for i := range values {
		_, v, _ := gen.Next()
		values[i] = append([]byte(nil), v...)
		size += int64(len(v))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var written int64
	for b.Loop() {
		out := b.TempDir()
		sinks := benchFilesAt(b, dec, out)
		w := &Worker{Config: Config{
			Topic: "t", Reader: &fakeLog{values: values, perFetch: int(1<<20) / 330}, Decoder: dec,
			Columns: len(dec.Schema().Fields), Commit: &fakeCommitter{}, Sinks: sinks.All(),
			OnError: "fail", OnOutOfRange: "fail", Limits: Limits{MaxAge: time.Hour},
			Budget: NewBudget(128 << 20), FetchMax: 1 << 20, Stats: NewStats(), Target: n, FlushWait: time.Second,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}}
		if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
			b.Fatal(err)
		}
		if got := w.Stats.Records.Load(); got != n {
			b.Fatalf("took %d records, want %d", got, n)
		}
		sinks.Close()
		written = 0
		for _, name := range testkit.FilesUnder(b, out) {
			if info, err := os.Stat(filepath.Join(out, name)); err == nil {
				written += info.Size()
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(written)/n, "bytes/record")
}

// genLog is a partition of n realistic logs made as they are fetched, in
// fetches of up to 1 MiB that share one buffer each, as the fetch client's
// do: the benchmark holds no more input than a member does.
type genLog struct {
	gen       *loggen.Gen
	partition int
	n, pos    int64
}

func (g *genLog) SetOffset(o int64) { g.pos = o }
func (g *genLog) Offset() int64     { return g.pos }
func (g *genLog) Close() error      { return nil }

func (g *genLog) Fetch(ctx context.Context) ([]record.Record, int64, error) {
	if g.pos >= g.n {
		<-ctx.Done()
		return nil, g.n, ctx.Err()
	}
	buf := make([]byte, 0, 1<<20)
	var msgs []record.Record
	for ; g.pos < g.n; g.pos++ {
		_, v, at := g.gen.Next()
		if len(buf)+len(v) > cap(buf) {
			break
		}
		buf = append(buf, v...)
		msgs = append(msgs, record.Record{Topic: "t", Partition: g.partition, Offset: g.pos, Value: buf[len(buf)-len(v):], Time: at})
	}
	return msgs, g.n, nil
}

// BenchmarkMemberCatchUp is a member catching up P partitions at once, as
// the bench's logstore run does, without Kafka: 1,000,000 logs spread over
// the partitions and two hours (so each partition's batch writes two
// files), one worker per partition, the default budget of 128 MiB and Go's
// soft memory limit set from it, the files sink as in BenchmarkWorkerHotPath.
// peak-MiB is the largest memory the Go runtime held from the OS (mapped and
// not released, sampled every 10 ms): what RSS follows.
func BenchmarkMemberCatchUp(b *testing.B) {
	for _, parts := range []int{12, 96} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) { memberCatchUp(b, parts, 1_000_000) })
	}
}

// BenchmarkSortedCatchUp is BenchmarkMemberCatchUp's 12 partitions with
// their rows sorted by service within each file (a table's sort_by), over
// 480,000 logs: each file holds its rows in memory in runs of up to 16
// MiB, which the budget counts. files and MiB/file are what the member
// wrote.
func BenchmarkSortedCatchUp(b *testing.B) {
	memberCatchUp(b, 12, 480_000, sink.SortKey{Column: "service"})
}

// memberCatchUp is n logs read by a member of parts partitions, written
// sorted by sortBy (none: as they come).
func memberCatchUp(b *testing.B, parts, n int, sortBy ...sink.SortKey) {
	dec := benchDecoder(b)
	// A 128 MiB budget, and the job's soft memory limit for it
	// (pipeline.MemoryLimit: the budget plus 96 MiB).
	const memoryBudget = 128 << 20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memoryBudget + 96<<20))
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go sampleMemory(&peak, stop, sampled)
	b.ReportAllocs()
	var files int
	var size int64
	for b.Loop() {
		out := b.TempDir()
		sinks := benchFilesAt(b, dec, out, sortBy...)
		budget := NewBudget(memoryBudget)
		per := int64(n / parts)
		readers := make([]Reader, parts)
		for p := range readers {
			start := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
			readers[p] = &genLog{gen: loggen.New(uint64(p), start, 2*time.Hour/time.Duration(per)), partition: p, n: per}
		}
		runMember(b, dec, sinks, budget, readers, per)
		sinks.Close()
		for _, name := range testkit.FilesUnder(b, out) {
			if info, err := os.Stat(filepath.Join(out, name)); err == nil {
				files++
				size += info.Size()
			}
		}
	}
	close(stop)
	<-sampled
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
	b.ReportMetric(float64(files)/float64(b.N), "files")
	b.ReportMetric(float64(size)/float64(max(files, 1))/(1<<20), "MiB/file")
}

// sampleMemory keeps the most memory the runtime held from the OS in peak
// until stop closes.
func sampleMemory(peak *atomic.Uint64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if held := s[0].Value.Uint64() - s[1].Value.Uint64(); held > peak.Load() {
			peak.Store(held)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// BenchmarkOpenFileMemory is what open files cost a member: 48
// partitions' batches staged side by side into the files sink (the bench's
// schema and folders, every Parquet setting at its default), 128 rows at a
// time, each batch across an hour boundary so it holds two files for its
// second half, as a member catching up many partitions does.
// heap-MiB/partition is the live heap after a collection with every batch
// still open; bytes/record is the size of the files once they are written.
// rows=300 is a partition with little to say, as at hundreds of partitions:
// its files' fixed costs are all it holds.
func BenchmarkOpenFileMemory(b *testing.B) {
	for _, rows := range []int{14_000, 384} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) { openFileMemory(b, rows) })
	}
}

func openFileMemory(b *testing.B, rows int) {
	dec := benchDecoder(b)
	const parts = 48
	for b.Loop() {
		out := b.TempDir()
		sinks := benchFilesAt(b, dec, out)
		stager := sinks.All()[0].(sink.Stager)
		gens := make([]*loggen.Gen, parts)
		for p := range gens {
			gens[p] = loggen.New(uint64(p), time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 2*time.Hour/time.Duration(rows))
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		staged := make([]int, parts)
		slab := make([]any, 128*len(dec.Schema().Fields))
		for staged[parts-1] < rows {
			for p := range parts {
				batch := make([]sink.Row, 0, 128)
				for i := range 128 {
					_, v, at := gens[p].Next()
					m := record.Record{Topic: "t", Partition: p, Offset: int64(staged[p] + i), Value: append([]byte(nil), v...), Time: at}
					row, _, err := dec.Decode(&m, slab[i*len(dec.Schema().Fields):(i+1)*len(dec.Schema().Fields)])
					if err != nil {
						b.Fatal(err)
					}
					batch = append(batch, row)
				}
				if _, err := stager.Stage(context.Background(), &sink.Batch{Topic: "t", Partition: p, Schema: dec.Schema(), Rows: batch, Staged: staged[p]}); err != nil {
					b.Fatal(err)
				}
				staged[p] += len(batch)
			}
		}
		runtime.GC()
		runtime.GC() // the second empties the pools' victim caches
		runtime.ReadMemStats(&ms)
		b.ReportMetric((float64(ms.HeapAlloc)-float64(before))/(1<<20)/parts, "heap-MiB/partition")

		var size int64
		for p := range parts {
			w := &sink.Batch{Topic: "t", Partition: p, Last: int64(staged[p] - 1), Schema: dec.Schema(), Staged: staged[p]}
			if err := sinks.All()[0].Write(context.Background(), w); err != nil {
				b.Fatal(err)
			}
		}
		sinks.Close()
		for _, name := range testkit.FilesUnder(b, out) {
			if info, err := os.Stat(filepath.Join(out, name)); err == nil {
				size += info.Size()
			}
		}
		b.ReportMetric(float64(size)/float64(parts*rows), "bytes/record")
	}
}
