package decode

import (
	"fmt"
	"reflect"
	"testing"
	"time"
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
