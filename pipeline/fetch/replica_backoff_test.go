package fetch

import (
	"fmt"
	"testing"
	"time"
)

func TestReplicaBackoff(t *testing.T) {
	for _, tc := range []struct {
		first, max time.Duration
		events     string // f: a failure, s: a fetch the replica served
		want       string // the wait after each failure
	}{
		{time.Second, 30 * time.Second, "ffffffff", "[1s 2s 4s 8s 16s 30s 30s 30s]"},
		{time.Second, 30 * time.Second, "fffsff", "[1s 2s 4s 1s 2s]"},
		{time.Second, 30 * time.Second, "fssf", "[1s 1s]"},
		{500 * time.Millisecond, time.Second, "ffff", "[500ms 1s 1s 1s]"},
		{5 * time.Second, 2 * time.Second, "ff", "[2s 2s]"}, // max wins
	} {
		t.Run(tc.events, func(t *testing.T) {
			b := replicaBackoff{first: tc.first, max: tc.max}
			var waits []time.Duration
			for _, e := range tc.events {
				if e == 'f' {
					waits = append(waits, b.failed())
				} else {
					b.served()
				}
			}
			if got := fmt.Sprint(waits); got != tc.want {
				t.Fatalf("waits %s, want %s", got, tc.want)
			}
		})
	}
}
