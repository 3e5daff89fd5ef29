package conn

import (
	"reflect"
	"testing"
	"time"
)

func TestBackoffDoublesToItsMaxAndStartsOver(t *testing.T) {
	b := Backoff{Min: 250 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for range 4 {
		got = append(got, b.Next())
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	b.Reset()
	if d := b.Next(); d != b.Min {
		t.Errorf("after Reset %v, want %v", d, b.Min)
	}
}
