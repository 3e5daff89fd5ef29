package fetch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// writeBatch is one v2 batch as kafka-go's producer writes it (without the
// record set's size in front).
func writeBatch(t *testing.T, attrs protocol.Attributes, recs ...protocol.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	rs := protocol.RecordSet{Version: 2, Attributes: attrs, Records: protocol.NewRecordReader(recs...)}
	if _, err := rs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()[4:]
}

type readRecord struct {
	offset     int64
	time       time.Time
	key, value []byte
	headers    []protocol.Header
}

func (r readRecord) String() string {
	return fmt.Sprintf("%d %s key=%#v value=%#v headers=%#v", r.offset, r.time.UTC().Format(time.RFC3339Nano), r.key, r.value, r.headers)
}

func readOurs(t *testing.T, batch []byte) []readRecord {
	t.Helper()
	var out []readRecord
	err := v2Records(batch, func(r *v2Record) error {
		out = append(out, readRecord{r.Offset, r.Time, bytes.Clone(r.Key), bytes.Clone(r.Value), append([]protocol.Header(nil), r.headers...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readKafkaGo(t *testing.T, batch []byte) []readRecord {
	t.Helper()
	var rs protocol.RecordSet
	set := binary.BigEndian.AppendUint32(nil, uint32(len(batch)))
	if _, err := rs.ReadFrom(bytes.NewReader(append(set, batch...))); err != nil {
		t.Fatal(err)
	}
	var out []readRecord
	for {
		rec, err := rs.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		r := readRecord{offset: rec.Offset, time: rec.Time, headers: rec.Headers}
		if rec.Key != nil {
			r.key, _ = io.ReadAll(rec.Key)
			if r.key == nil {
				r.key = []byte{}
			}
		}
		if rec.Value != nil {
			r.value, _ = io.ReadAll(rec.Value)
			if r.value == nil {
				r.value = []byte{}
			}
		}
		if len(r.headers) == 0 {
			r.headers = nil
		}
		out = append(out, r)
	}
}

// v2Records reads every batch as kafka-go's decoder does: every codec,
// null apart from empty, headers, varints of every width, and records large
// enough to span kafka-go's pages.
func TestV2RecordsReadsAsKafkaGo(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	recs := []protocol.Record{
		{Time: at, Key: protocol.NewBytes([]byte("k")), Value: protocol.NewBytes([]byte(`{"a":1}`))},
		{Time: at.Add(time.Millisecond), Key: nil, Value: nil},
		{Time: at.Add(time.Hour), Key: protocol.NewBytes([]byte{}), Value: protocol.NewBytes([]byte{}),
			Headers: []protocol.Header{{Key: "e", Value: []byte{}}, {Key: "n"}, {Key: "", Value: []byte("v")}}},
		{Time: at.Add(-time.Minute), Value: protocol.NewBytes([]byte(strings.Repeat("é", 70_000)))},
		{Time: at, Key: protocol.NewBytes(bytes.Repeat([]byte{0xff}, 200)), Value: protocol.NewBytes([]byte("x"))},
	}
	for codec := compress.Compression(0); codec <= compress.Zstd; codec++ {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			batch := writeBatch(t, protocol.Attributes(codec), recs...)
			ours, theirs := readOurs(t, batch), readKafkaGo(t, batch)
			if len(ours) != len(recs) || len(ours) != len(theirs) {
				t.Fatalf("read %d records, kafka-go %d, wrote %d", len(ours), len(theirs), len(recs))
			}
			for i := range ours {
				if got, want := ours[i].String(), theirs[i].String(); got != want {
					t.Errorf("record %d:\n ours     %.300s\n kafka-go %.300s", i, got, want)
				}
				if (ours[i].key == nil) != (recs[i].Key == nil) || (ours[i].value == nil) != (recs[i].Value == nil) {
					t.Errorf("record %d: null and empty mixed up", i)
				}
			}
		})
	}
}

// A batch the broker stamped (LogAppendTime) reads with the broker's time,
// its max timestamp, for every record, as Kafka's own consumer reads it;
// kafka-go's decoder gave each record its producer's time.
func TestV2RecordsUseLogAppendTime(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	batch := writeBatch(t, protocol.Attributes(v2TimeAppend),
		protocol.Record{Time: at, Value: protocol.NewBytes([]byte("a"))},
		protocol.Record{Time: at.Add(-time.Hour), Value: protocol.NewBytes([]byte("b"))})
	// The broker writes its time into the max timestamp.
	stamped := at.Add(time.Minute)
	binary.BigEndian.PutUint64(batch[v2MaxTime:], uint64(stamped.UnixMilli()))
	binary.BigEndian.PutUint32(batch[17:21], crc32.Checksum(batch[v2Attributes:], castagnoli))
	for _, r := range readOurs(t, batch) {
		if !r.time.Equal(stamped) {
			t.Errorf("record %d: time %s, want the broker's %s", r.offset, r.time, stamped)
		}
	}
}

// A batch whose bytes changed after the producer wrote it is an error, and
// so is one cut short or one whose record lengths lie; none panics.
func TestV2RecordsRefusesBrokenBatches(t *testing.T) {
	good := writeBatch(t, 0,
		protocol.Record{Value: protocol.NewBytes([]byte("hello"))},
		protocol.Record{Key: protocol.NewBytes([]byte("k")), Value: protocol.NewBytes([]byte("world"))})
	for name, mutate := range map[string]func(b []byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)-3] ^= 1; return b },
		"short header": func(b []byte) []byte { return b[:40] },
		"cut short":    func(b []byte) []byte { return resum(b[:len(b)-4]) },
		"length lies":  func(b []byte) []byte { b[v2RecordsStart] += 2; return resum(b) },
		"count lies": func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:61], 3)
			return resum(b)
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := v2Records(mutate(bytes.Clone(good)), func(*v2Record) error { return nil })
			if err == nil {
				t.Fatal("read without an error")
			}
		})
	}
}

func resum(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[v2Attributes:], castagnoli))
	return b
}

// FuzzV2Records: no batch with a valid CRC (anything a broken or hostile
// broker could send) panics the record reader or reads past the batch.
func FuzzV2Records(f *testing.F) {
	t := &testing.T{}
	for codec := compress.Compression(0); codec <= compress.Zstd; codec++ {
		f.Add(writeBatch(t, protocol.Attributes(codec),
			protocol.Record{Key: protocol.NewBytes([]byte("k")), Value: protocol.NewBytes([]byte(`{"a":1}`)),
				Headers: []protocol.Header{{Key: "h", Value: []byte{}}}},
			protocol.Record{Value: protocol.NewBytes([]byte("second"))}))
	}
	f.Fuzz(func(t *testing.T, batch []byte) {
		if len(batch) >= v2RecordsStart {
			resum(batch)
		}
		_ = v2Records(batch, func(r *v2Record) error {
			if len(r.Key)+len(r.Value) > len(batch)*1024 {
				t.Fatalf("a record larger than its batch could inflate to")
			}
			return nil
		})
	})
}
