package fetch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// BenchmarkRecords is what a reader does with a fetched partition: about
// 1 MiB of 330-byte logs in batches of 500, read into records from the
// reader's offset on, uncompressed and with lz4 (without the network).
func BenchmarkRecords(b *testing.B) {
	for _, codec := range []compress.Compression{0, compress.Lz4} {
		b.Run(fmt.Sprint(codec), func(b *testing.B) {
			var set []byte
			value := bytes.Repeat([]byte(`{"ts":"2026-11-29T07:00:00Z","level":"INFO","message":"request completed"} `), 4)
			n := 0
			for base := 0; len(set) < 1<<20; base += 500 {
				recs := make([]protocol.Record, 500)
				for i := range recs {
					recs[i] = protocol.Record{Offset: int64(base + i), Time: time.Unix(1_800_000_000, 0), Value: protocol.NewBytes(value)}
				}
				var buf bytes.Buffer
				rs := protocol.RecordSet{Version: 2, Attributes: protocol.Attributes(codec), Records: protocol.NewRecordReader(recs...)}
				if _, err := rs.WriteTo(&buf); err != nil {
					b.Fatal(err)
				}
				batch := buf.Bytes()[4:]
				binary.BigEndian.PutUint64(batch[0:8], uint64(base)) // kafka-go writes base 0
				set = append(set, batch...)
				n += 500
			}
			res := &fetchedPartition{records: append(binary.BigEndian.AppendUint32(nil, uint32(len(set))), set...), lastStable: -1}
			r := NewPartitionReader(ReaderConfig{Topic: testTopic})
			defer r.Close()
			b.SetBytes(int64(len(set)))
			b.ReportAllocs()
			for b.Loop() {
				msgs, _, err := r.records(res)
				if err != nil || len(msgs) != n {
					b.Fatalf("%d records, %v; want %d", len(msgs), err, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
