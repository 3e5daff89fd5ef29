package decode

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// benchLine is a realistic service log line of 300 bytes, of which the
// schema below keeps ten values.
const benchLine = `{"timestamp":"2026-11-29T07:00:00.123456Z","level":"INFO","service":"checkout",` +
	`"host":"ip-10-0-12-34","message":"GET /api/v1/cart/8f3c2 completed",` +
	`"http":{"method":"GET","status":200,"latency_ms":12.7},"labels":{"env":"prod","team":"payments"},` +
	`"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}`

var benchColumns = []ColumnConfig{
	{Name: "ts", Type: sink.Timestamp, Source: "timestamp", Required: true},
	{Name: "level", Type: sink.String, Required: true},
	{Name: "service", Type: sink.String},
	{Name: "host", Type: sink.String},
	{Name: "message", Type: sink.String},
	{Name: "method", Type: sink.String, Source: "http.method"},
	{Name: "status", Type: sink.Int32, Source: "http.status"},
	{Name: "latency_ms", Type: sink.Float64, Source: "http.latency_ms"},
	{Name: "labels", Type: sink.StringMap},
	{Name: "trace_id", Type: sink.String},
	{Name: "offset", Type: sink.Int64, Source: "kafka.offset"},
}

func benchMessage() *record.Record {
	return &record.Record{Topic: "logs", Partition: 3, Offset: 123456789, Value: []byte(benchLine),
		Time: time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)}
}

func benchDecoder(b *testing.B, cfg SchemaConfig) {
	d, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	msg := benchMessage()
	var row sink.Row
	b.ReportAllocs()
	b.SetBytes(int64(len(msg.Value)))
	for b.Loop() {
		var keep bool
		row, keep, err = d.Decode(msg, row[:0])
		if err != nil || !keep {
			b.Fatal(keep, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecode is the hot path: one log line to a row of 11 columns.
func BenchmarkDecode(b *testing.B) {
	benchDecoder(b, SchemaConfig{Columns: benchColumns})
}

// BenchmarkDecodeWhere adds a CEL filter and one derived column.
func BenchmarkDecodeWhere(b *testing.B) {
	cols := append(benchColumns[:len(benchColumns):len(benchColumns)],
		ColumnConfig{Name: "slow", Type: sink.Bool, Expr: `latency_ms > 10`})
	benchDecoder(b, SchemaConfig{Columns: cols, Where: `level != "DEBUG" && status < 500`})
}

// BenchmarkDecodeStdlib is the baseline: what a straightforward Go port of
// from_json does — encoding/json into map[string]any, then pick and convert
// the same columns.
func BenchmarkDecodeStdlib(b *testing.B) {
	msg := benchMessage()
	row := make(sink.Row, len(benchColumns))
	b.ReportAllocs()
	b.SetBytes(int64(len(msg.Value)))
	for b.Loop() {
		if err := stdlibDecode(msg, row); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func stdlibDecode(msg *record.Record, row sink.Row) error {
	var doc map[string]any
	if err := json.Unmarshal(msg.Value, &doc); err != nil {
		return err
	}
	ts, err := time.Parse(time.RFC3339Nano, doc["timestamp"].(string))
	if err != nil {
		return err
	}
	row[0] = ts.UTC().Truncate(time.Millisecond)
	row[1] = doc["level"].(string)
	row[2] = doc["service"].(string)
	row[3] = doc["host"].(string)
	row[4] = doc["message"].(string)
	http, _ := doc["http"].(map[string]any)
	row[5] = http["method"].(string)
	row[6] = int32(http["status"].(float64))
	row[7] = http["latency_ms"].(float64)
	labels := map[string]string{}
	for k, v := range doc["labels"].(map[string]any) {
		if s, ok := v.(string); ok {
			labels[k] = s
		} else {
			labels[k] = fmt.Sprint(v)
		}
	}
	row[8] = labels
	row[9] = doc["trace_id"].(string)
	row[10] = msg.Offset
	return nil
}
