package fetch

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/record"
)

// traced is record i of the header tests: header gid=i, and every 30th
// from the 7th a trace header with an empty value, from the 8th one with a
// null value, as testdata/java/Batches.java writes them.
func traced(i int) []kgo.RecordHeader {
	hs := []kgo.RecordHeader{{Key: "gid", Value: []byte(strconv.Itoa(i))}}
	switch i % 30 {
	case 7:
		hs = append(hs, kgo.RecordHeader{Key: "trace", Value: []byte{}})
	case 8:
		hs = append(hs, kgo.RecordHeader{Key: "trace"})
	}
	return hs
}

// checkTraced checks that msgs are records first.. of traced, each with its
// headers: an empty value a non-nil empty slice, a null value nil.
func checkTraced(t *testing.T, msgs []record.Record, first, n int) {
	t.Helper()
	if len(msgs) != n {
		t.Fatalf("read %d records, want %d", len(msgs), n)
	}
	bad := 0
	for j, m := range msgs {
		want := traced(first + j)
		ok := len(m.Headers) == len(want)
		for k := 0; ok && k < len(want); k++ {
			h := m.Headers[k]
			ok = h.Key == want[k].Key && string(h.Value) == string(want[k].Value) && (h.Value == nil) == (want[k].Value == nil)
		}
		if !ok {
			if bad++; bad <= 3 {
				t.Errorf("record %d: headers %s, want %s", m.Offset, showHeaders(m.Headers), showKgoHeaders(want))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d records read with other headers", bad, n)
	}
}

// TestReaderKeepsEmptyHeaderValuesInEveryCodec: an empty header value
// stays empty and a null one null whatever the batch's codec, compressed
// batches decompressing into a buffer the reader then copies from.
func TestReaderKeepsEmptyHeaderValuesInEveryCodec(t *testing.T) {
	for _, tc := range everyCodec {
		t.Run(tc.name, func(t *testing.T) {
			c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
			const n = 300
			recs := make([]*kgo.Record, n)
			for i := range recs {
				recs[i] = &kgo.Record{Value: []byte(strconv.Itoa(i)), Headers: traced(i)}
			}
			opts := []kgo.Opt{kgo.ProducerBatchCompression(tc.codec)}
			produce(t, c.ListenAddrs(), opts, recs[:n/2]...)
			produce(t, c.ListenAddrs(), opts, recs[n/2:]...)
			r := testReader(t, c.ListenAddrs(), ReaderConfig{})
			r.SetOffset(7) // inside the first batch, at an empty value
			checkTraced(t, readTo(t, r, n), 7, n-7)
		})
	}
}

// TestReaderReadsJavaClientBatches reads record batches as Kafka's Java
// client encodes them (testdata/java: its gzip, xerial-framed snappy, lz4
// and zstd streams, not franz-go's), empty and null header values among
// them.
func TestReaderReadsJavaClientBatches(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			batch, err := os.ReadFile(filepath.Join("testdata", "java", codec+".batch"))
			if err != nil {
				t.Fatal(err)
			}
			// A partition's records as a Fetch response holds them: the
			// set's length, then the batch.
			set := binary.BigEndian.AppendUint32(nil, uint32(len(batch)))
			r := NewPartitionReader(ReaderConfig{Topic: testTopic})
			r.SetOffset(100) // the batch's base offset
			msgs, next, err := r.records(&fetchedPartition{records: append(set, batch...), lastStable: -1})
			if err != nil {
				t.Fatal(err)
			}
			if next != 400 {
				t.Errorf("next offset %d, want 400", next)
			}
			checkTraced(t, msgs, 0, 300)
			for j, m := range msgs {
				if want := fmt.Sprintf(`{"n":%d}`, j); string(m.Value) != want || m.Offset != int64(100+j) {
					t.Fatalf("record %d at offset %d: value %q, want %q at %d", j, m.Offset, m.Value, want, 100+j)
				}
			}
		})
	}
}

func showHeaders(hs []record.Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Key + "=" + showValue(h.Value)
	}
	return strings.Join(parts, " ")
}

func showKgoHeaders(hs []kgo.RecordHeader) string {
	rs := make([]record.Header, len(hs))
	for i, h := range hs {
		rs[i] = record.Header{Key: h.Key, Value: h.Value}
	}
	return showHeaders(rs)
}

func showValue(v []byte) string {
	if v == nil {
		return "null"
	}
	return strconv.Quote(string(v))
}
