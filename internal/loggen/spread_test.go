package loggen

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestKeysSpreadEvenlyOverPartitions: the demo produces with kafka-go's
// hash balancer on the generator's keys. Keyed by service alone (8 keys),
// 6 partitions got 0, 1× and 3× shares.
func TestKeysSpreadEvenlyOverPartitions(t *testing.T) {
	const n = 60_000
	for _, partitions := range []int{3, 6, 12} {
		gen := New(42, time.Unix(0, 0), time.Millisecond)
		gen.BadEvery = 100
		counts := make([]int, partitions)
		ids := make([]int, partitions)
		for i := range ids {
			ids[i] = i
		}
		var h kafka.Hash
		for range n {
			key, _, _ := gen.Next()
			counts[h.Balance(kafka.Message{Key: key}, ids...)]++
		}
		mean := n / partitions
		for p, c := range counts {
			if c < mean*9/10 || c > mean*11/10 {
				t.Errorf("%d partitions: partition %d got %d records, want %d ± 10 %% (all: %v)", partitions, p, c, mean, counts)
			}
		}
	}
}
