package pipeline

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/sink"
)

// benchSchema is the bench's job (cmd/logstore/demo.yaml without its where
// filter): 14 columns, one of them derived by CEL.
const benchSchema = `schema:
  columns:
    - {name: ts, type: timestamp, unit: ms, required: true}
    - {name: level, type: string, required: true}
    - {name: service, type: string, required: true}
    - {name: host, type: string}
    - {name: message, type: string}
    - {name: method, type: string, source: http.method}
    - {name: path, type: string, source: http.path}
    - {name: status, type: int32, source: http.status}
    - {name: latency_ms, type: float64, source: http.latency_ms}
    - {name: labels, type: "map<string,string>"}
    - {name: trace_id, type: string}
    - {name: is_error, type: bool, expr: 'status != null && status >= 500'}
    - {name: kafka_partition, type: int32, source: kafka.partition}
    - {name: kafka_offset, type: int64, source: kafka.offset}
`

// BenchmarkWorkerHotPath is one partition's catch-up as the bench runs it,
// without Kafka: a worker takes 100,000 realistic logs (internal/loggen,
// about 330 bytes each) in fetches of 1 MiB, decodes them with the bench's
// schema, stages them into the files sink (zstd Parquet in dt=/hour=
// folders, the default budget of 128 MiB) and writes the batch at the end.
// Everything the process does per record but read the network.
func BenchmarkWorkerHotPath(b *testing.B) {
	var sc struct{ Schema decode.SchemaConfig }
	if err := yaml.Unmarshal([]byte(benchSchema), &sc); err != nil {
		b.Fatal(err)
	}
	dec, err := decode.New(sc.Schema)
	if err != nil {
		b.Fatal(err)
	}
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
	for b.Loop() {
		out, spool := b.TempDir(), b.TempDir()
		sinks, err := sink.New(context.Background(), sink.Config{Files: &sink.FilesConfig{
			URL: out, SpoolDir: spool,
			PartitionBy: []sink.PartitionColumn{{Name: "dt", Column: "ts", Format: "2006-01-02"}, {Name: "hour", Column: "ts", Format: "15"}},
		}}, sink.Deps{Schema: dec.Schema()})
		if err != nil {
			b.Fatal(err)
		}
		w := &worker{
			topic: "t", reader: &fakeLog{values: values, perFetch: int(1<<20) / 330}, decoder: dec,
			columns: len(dec.Schema().Fields), commit: &fakeCommitter{}, sinks: sinks.All(),
			onError: "fail", onOutOfRange: "fail", limits: BatchConfig{MaxAge: time.Hour},
			budget: newBudget(128 << 20), fetchMax: 1 << 20, stats: newStats(), target: n, flushWait: time.Second,
			log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		if err := w.run(context.Background(), position{0, -1}); err != nil {
			b.Fatal(err)
		}
		if got := w.stats.Records.Load(); got != n {
			b.Fatalf("took %d records, want %d", got, n)
		}
		sinks.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
