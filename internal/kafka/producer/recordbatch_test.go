package producer

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// A batch this package encodes must read back, through kafka-go's own
// decoder, as the records, producer id, epoch and sequence it was given,
// with every codec.
func TestEncodedBatchReadsBack(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	records := []Record{
		{Key: []byte("k1"), Value: []byte(`{"a":1}`), Time: at, Headers: []Header{{Key: "h", Value: []byte("v")}, {Key: "nil"}}},
		{Value: []byte("no key"), Time: at.Add(5 * time.Millisecond)},
		{Key: []byte{}, Value: nil},
	}
	for _, c := range []compress.Compression{compress.None, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			var buf bytes.Buffer
			if err := encodeBatch(&buf, records, c, false, at); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			stamp(b, 4242, 7, 1000)
			var rs protocol.RecordSet
			if _, err := rs.ReadFrom(bufio.NewReader(bytes.NewReader(b))); err != nil {
				t.Fatalf("kafka-go cannot read the batch: %v", err)
			}
			stream := rs.Records.(*protocol.RecordStream)
			rb, ok := stream.Records[0].(*protocol.RecordBatch)
			if !ok {
				// compressed batches decode as an optimized reader
				t.Logf("batch type %T", stream.Records[0])
			} else if rb.ProducerID != 4242 || rb.ProducerEpoch != 7 || rb.BaseSequence != 1000 {
				t.Fatalf("producer fields: id %d epoch %d seq %d", rb.ProducerID, rb.ProducerEpoch, rb.BaseSequence)
			}
			if got := rs.Attributes.Compression(); got != c {
				t.Fatalf("compression %v, want %v", got, c)
			}
			for i := range records {
				r, err := rs.Records.ReadRecord()
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				want := &records[i]
				if got := readAll(t, r.Key); !bytes.Equal(got, want.Key) || (got == nil) != (want.Key == nil) {
					t.Errorf("record %d key %q, want %q", i, got, want.Key)
				}
				if got := readAll(t, r.Value); !bytes.Equal(got, want.Value) {
					t.Errorf("record %d value %q, want %q", i, got, want.Value)
				}
				if !want.Time.IsZero() && !r.Time.Equal(want.Time) {
					t.Errorf("record %d time %v, want %v", i, r.Time, want.Time)
				}
				if len(r.Headers) != len(want.Headers) {
					t.Fatalf("record %d has %d headers, want %d", i, len(r.Headers), len(want.Headers))
				}
				for j, h := range want.Headers {
					if r.Headers[j].Key != h.Key || !bytes.Equal(r.Headers[j].Value, h.Value) {
						t.Errorf("record %d header %d = %q:%q, want %q:%q", i, j, r.Headers[j].Key, r.Headers[j].Value, h.Key, h.Value)
					}
				}
			}
		})
	}
}

func readAll(t *testing.T, b protocol.Bytes) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	out, err := protocol.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkEncodeBatch encodes a 1 MiB batch of JSON log lines with their
// three source headers, as the Kafka output's producer does for each
// request, with every codec. MB/s counts the records' bytes.
func BenchmarkEncodeBatch(b *testing.B) {
	var records []Record
	size := 0
	for i := 0; size < 1<<20; i++ {
		v := fmt.Appendf(nil, `{"ts":"2026-11-29T06:00:%02d.%03dZ","level":"INFO","service":"checkout-%d","host":"ip-10-0-%d-%d","message":"GET /api/v1/orders/%d completed in %d ms for user %d","status":200,"latency_ms":%d.25,"labels":{"env":"prod","team":"payments"},"trace_id":"%032x"}`,
			i%60, i%1000, i%7, i%256, i%13, i, i%500, i*7, i%900, i*2654435761)
		r := Record{Value: v, Headers: []Header{{Key: "logstore.source.topic", Value: []byte("logs")},
			{Key: "logstore.source.partition", Value: []byte("3")}, {Key: "logstore.source.offset", Value: strconv.AppendInt(nil, int64(1_000_000+i), 10)}}}
		records = append(records, r)
		size += recordSize(&r)
	}
	now := time.Now()
	for _, c := range []compress.Compression{compress.None, compress.Lz4, compress.Snappy, compress.Zstd, compress.Gzip} {
		name := "none"
		if c != compress.None {
			name = c.Codec().Name()
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				if err := encodeBatch(&buf, records, c, false, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/float64(size), "size/raw")
		})
	}
}
