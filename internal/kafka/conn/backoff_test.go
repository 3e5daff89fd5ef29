package conn

import (
	"fmt"
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

// TestBackoffWaits: the waits after each failure (f) with answers (s)
// between them; the fetch reader's preferred-replica backoff is this one.
func TestBackoffWaits(t *testing.T) {
	for _, tc := range []struct {
		min, max time.Duration
		events   string
		want     string
	}{
		{time.Second, 30 * time.Second, "ffffffff", "[1s 2s 4s 8s 16s 30s 30s 30s]"},
		{time.Second, 30 * time.Second, "fffsff", "[1s 2s 4s 1s 2s]"},
		{time.Second, 30 * time.Second, "fssf", "[1s 1s]"},
		{500 * time.Millisecond, time.Second, "ffff", "[500ms 1s 1s 1s]"},
		{5 * time.Second, 2 * time.Second, "ff", "[2s 2s]"}, // max wins
	} {
		t.Run(tc.events, func(t *testing.T) {
			b := Backoff{Min: tc.min, Max: tc.max}
			var waits []time.Duration
			for _, e := range tc.events {
				if e == 'f' {
					waits = append(waits, b.Next())
				} else {
					b.Reset()
				}
			}
			if got := fmt.Sprint(waits); got != tc.want {
				t.Fatalf("waits %s, want %s", got, tc.want)
			}
		})
	}
}
