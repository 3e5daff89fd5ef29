package decode

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// TestBoxesAreOrdinaryInterfaces: a boxed value is indistinguishable from
// Go's own conversion, and values from one block stay apart.
func TestBoxesAreOrdinaryInterfaces(t *testing.T) {
	var vb valueBoxes
	at := time.Date(2026, 11, 29, 7, 0, 0, 123000000, time.UTC)
	var got, want []any
	for i := range 3 * boxBlock {
		s := fmt.Sprint("s", i)
		got = append(got, vb.strs.box(s), vb.times.box(at.Add(time.Duration(i))), vb.int64s.box(int64(i)<<40),
			vb.int32s.box(int32(-i)), vb.f64s.box(float64(i)/3), vb.f32s.box(float32(i)/7))
		want = append(want, s, at.Add(time.Duration(i)), int64(i)<<40, int32(-i), float64(i)/3, float32(i)/7)
	}
	for i := range got {
		if got[i] != want[i] || !reflect.DeepEqual(got[i], want[i]) || fmt.Sprintf("%T %v", got[i], got[i]) != fmt.Sprintf("%T %v", want[i], want[i]) {
			t.Fatalf("value %d: boxed %T %v, want %T %v", i, got[i], got[i], want[i], want[i])
		}
	}
	if s, ok := got[0].(string); !ok || s != "s0" {
		t.Errorf("type assertion gave %q, %v", s, ok)
	}
	if _, ok := got[1].(time.Time); !ok {
		t.Error("a boxed time is not a time.Time")
	}
}

// TestScratchReusesValuesOnlyAfterRelease: rows decoded with a Scratch
// hold their values until Release, however many blocks they take; after
// it, the next rows' values are written into the same storage, and the
// Decoder's own Decode never writes into a Scratch's.
func TestScratchReusesValuesOnlyAfterRelease(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: benchColumns})
	s := d.NewScratch()
	msg := func(i int) *record.Record {
		m := benchMessage()
		m.Offset = int64(i)
		m.Value = fmt.Appendf(nil, `{"timestamp":"2026-11-29T07:%02d:%02d.%06dZ","level":"L%d","host":"h%d","http":{"status":%d,"latency_ms":%d.5},"trace_id":"t%d"}`,
			i/60%60, i%60, i, i, i, i, i, i)
		return m
	}
	decodeAll := func(from, n int) []sink.Row {
		rows := make([]sink.Row, n)
		for i := range rows {
			row, keep, err := s.Decode(msg(from+i), nil)
			if err != nil || !keep {
				t.Fatalf("record %d: keep %v, %v", from+i, keep, err)
			}
			rows[i] = row
			d.Decode(msg(-1), nil) // the pooled storage, in between
		}
		return rows
	}
	check := func(from int, rows []sink.Row) {
		t.Helper()
		for i, row := range rows {
			want, _, err := d.Decode(msg(from+i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, want) {
				t.Fatalf("row %d: %v, want %v", from+i, row, want)
			}
		}
	}
	n := 3*boxBlock + 10
	first := decodeAll(0, n)
	check(0, first)
	used := map[unsafe.Pointer]bool{}
	for _, row := range first {
		used[(*eface)(unsafe.Pointer(&row[1])).data] = true
	}
	s.Release()
	second := decodeAll(n, n)
	check(n, second)
	if !used[(*eface)(unsafe.Pointer(&second[0][1])).data] {
		t.Error("after Release the next string is not stored where an earlier one was")
	}
}
