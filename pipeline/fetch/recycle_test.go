package fetch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/segmentio/kafka-go/protocol"

	"github.com/logstore/logstore/pipeline/record"
)

// bigSet is a fetched partition of n records of about 330 bytes from
// offset base, in batches of 500: a fetch at full speed.
func bigSet(t *testing.T, base, n int, tag string) *fetchedPartition {
	t.Helper()
	var set []byte
	for b := base; b < base+n; b += 500 {
		recs := make([]protocol.Record, min(500, base+n-b))
		for i := range recs {
			v := fmt.Sprintf("%s-%d-%s", tag, b+i, bytes.Repeat([]byte("x"), 300))
			recs[i] = protocol.Record{Offset: int64(b + i), Time: time.Unix(1_800_000_000, 0), Key: protocol.NewBytes([]byte("k" + tag)), Value: protocol.NewBytes([]byte(v))}
		}
		var buf bytes.Buffer
		rs := protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(recs...)}
		if _, err := rs.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		batch := buf.Bytes()[4:]
		binary.BigEndian.PutUint64(batch[0:8], uint64(b))
		set = append(set, batch...)
	}
	return &fetchedPartition{records: append(binary.BigEndian.AppendUint32(nil, uint32(len(set))), set...), lastStable: -1}
}

func checkValues(t *testing.T, got [][]byte, base int, tag string) {
	t.Helper()
	for i, v := range got {
		if want := fmt.Sprintf("%s-%d-%s", tag, base+i, bytes.Repeat([]byte("x"), 300)); string(v) != want {
			t.Fatalf("record %d of %s reads %.20q…, want %.20q…", base+i, tag, v, want)
		}
	}
}

// TestRecycleLendsChunksOnlyWhenGivenBack: a fetch's keys and values come
// from pooled chunks; those of a fetch the caller did not give back are
// never written again (its records still read right after later fetches),
// and those given back (Recycle) serve the next fetch.
func TestRecycleLendsChunksOnlyWhenGivenBack(t *testing.T) {
	r := NewPartitionReader(ReaderConfig{Topic: testTopic})
	defer r.Close()
	fetchAt := func(base int, tag string) [][]byte {
		r.SetOffset(int64(base))
		msgs, _, err := r.records(bigSet(t, base, 3000, tag))
		if err != nil || len(msgs) != 3000 {
			t.Fatalf("%d records, %v", len(msgs), err)
		}
		var vs [][]byte
		for _, m := range msgs {
			vs = append(vs, m.Value)
		}
		return vs
	}
	kept := fetchAt(0, "a") // not given back
	if len(r.lent) == 0 {
		t.Fatal("a fetch of 1 MiB did not come from pooled chunks")
	}
	fetchAt(3000, "b")
	checkValues(t, kept, 0, "a")
	lent := map[*byte]bool{}
	for _, p := range r.lent {
		lent[unsafe.SliceData(p)] = true
	}
	r.Recycle()
	third := fetchAt(6000, "c")
	checkValues(t, kept, 0, "a")
	checkValues(t, third, 6000, "c")
	reused := false
	for _, p := range r.lent {
		reused = reused || lent[unsafe.SliceData(p)]
	}
	if !reused {
		t.Error("the next fetch after Recycle took no chunk it gave back")
	}
	// The records themselves: a fetch's slice is used again only after
	// Recycle.
	r.SetOffset(9000)
	fourth, _, _ := r.records(bigSet(t, 9000, 3000, "d"))
	r.SetOffset(12000)
	fifth, _, _ := r.records(bigSet(t, 12000, 3000, "e"))
	if &fourth[0] == &fifth[0] || fourth[0].Offset != 9000 {
		t.Error("a fetch's records were written over before Recycle")
	}
	r.Recycle()
	r.SetOffset(15000)
	if sixth, _, _ := r.records(bigSet(t, 15000, 3000, "f")); &sixth[0] != &fifth[0] || sixth[0].Offset != 15000 {
		t.Error("the records of a fetch given back were not used again")
	}
}

// TestFetchBodyGoesBackWhenEveryPartIsRead: a response shared by two
// partitions goes back to the pool only once the session and both readers
// let go of it, and the records each reader returned still read right
// after the body is written over.
func TestFetchBodyGoesBackWhenEveryPartIsRead(t *testing.T) {
	a, b := bigSet(t, 0, 500, "a"), bigSet(t, 0, 500, "b")
	fb := getFetchBody(len(a.records) + len(b.records))
	copy(fb.buf, a.records)
	copy(fb.buf[len(a.records):], b.records)
	a.records, b.records = fb.buf[:len(a.records)], fb.buf[len(a.records):]
	a.body, b.body = fb, fb
	fb.share(3) // the round and the two readers
	pooled := func() bool { return fetchBodies.holds(fb.buf) }
	ra, rb := NewPartitionReader(ReaderConfig{Topic: testTopic}), NewPartitionReader(ReaderConfig{Topic: testTopic})
	defer ra.Close()
	defer rb.Close()
	ra.SetOffset(0)
	msgsA, _, err := ra.records(a)
	if err != nil || len(msgsA) != 500 {
		t.Fatalf("%d records, %v", len(msgsA), err)
	}
	fb.release() // the round
	if pooled() {
		t.Fatal("the body went back while a reader had not read its part")
	}
	rb.SetOffset(0)
	msgsB, _, err := rb.records(b)
	if err != nil || len(msgsB) != 500 {
		t.Fatalf("%d records, %v", len(msgsB), err)
	}
	if !pooled() {
		t.Fatal("the body did not go back once every part was read")
	}
	clear(fb.buf) // the next response
	for _, c := range []struct {
		msgs []record.Record
		tag  string
	}{{msgsA, "a"}, {msgsB, "b"}} {
		var vs [][]byte
		for _, m := range c.msgs {
			vs = append(vs, m.Value)
		}
		checkValues(t, vs, 0, c.tag)
	}
}

// holds reports whether b is among the kept buffers.
func (s *spares) holds(b []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.bufs {
		if unsafe.SliceData(x) == unsafe.SliceData(b) {
			return true
		}
	}
	return false
}

// TestSparesKeepNoMoreThanTheirBytes: buffers given back past max are
// dropped, and get hands out only a buffer large enough.
func TestSparesKeepNoMoreThanTheirBytes(t *testing.T) {
	s := &spares{max: 10 << 10}
	small, big := make([]byte, 1<<10), make([]byte, 8<<10)
	s.put(small)
	s.put(big)
	if extra := make([]byte, 4<<10); true {
		s.put(extra)
		if s.holds(extra) || s.bytes != 9<<10 {
			t.Fatalf("kept %d bytes (extra kept: %v), want 9 KiB: the limit is 10 KiB", s.bytes, s.holds(extra))
		}
	}
	if b := s.get(2 << 10); unsafe.SliceData(b) != unsafe.SliceData(big) || len(b) != 0 {
		t.Fatal("get(2 KiB) did not hand out the 8 KiB buffer, empty")
	}
	if b := s.get(2 << 10); b != nil {
		t.Fatal("get(2 KiB) handed out a buffer too small")
	}
	if b := s.get(1 << 10); unsafe.SliceData(b) != unsafe.SliceData(small) || s.bytes != 0 {
		t.Fatal("get(1 KiB) did not hand out the last buffer")
	}
}
