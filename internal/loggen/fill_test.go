package loggen

import (
	"testing"
	"time"
)

// TestStickyFillFillsAboutAThird: BENCH_FILL=sticky must leave the
// partitions a sticky-partitioned producer leaves empty, and spread the rest
// unevenly (runs of a batch), the same way for the same seed.
func TestStickyFillFillsAboutAThird(t *testing.T) {
	const n, partitions = 600_000, 600
	count := func() []int {
		f, err := NewStickyFill(7, partitions, 1.0/3, 53)
		if err != nil {
			t.Fatal(err)
		}
		c := make([]int, partitions)
		for i := range n {
			c[f.Partition(i)]++
		}
		return c
	}
	c := count()
	filled, least, most := 0, n, 0
	for _, v := range c {
		if v > 0 {
			filled++
			least, most = min(least, v), max(most, v)
		}
	}
	if filled != 200 {
		t.Errorf("filled %d of %d partitions, want 200 (a third)", filled, partitions)
	}
	if most < least*3/2 {
		t.Errorf("filled partitions hold %d..%d records: want the uneven fill of runs picked at random", least, most)
	}
	again := count()
	for p := range c {
		if c[p] != again[p] {
			t.Fatalf("partition %d: %d then %d records: the same seed must fill the same way", p, c[p], again[p])
		}
	}
	if _, err := NewStickyFill(1, 12, 0, 53); err == nil {
		t.Error("share 0: want an error")
	}
}

func TestEvenFill(t *testing.T) {
	f := EvenFill(12)
	for i := range 36 {
		if p := f.Partition(i); p != i%12 {
			t.Fatalf("record %d: partition %d, want %d", i, p, i%12)
		}
	}
}

// TestBenchStartFollowsNow: the bench's event times end at the run's now,
// whatever the date, so the brokers' 7-day retention never finds them old.
func TestBenchStartFollowsNow(t *testing.T) {
	now := time.Date(2027, 3, 1, 12, 0, 0, 500, time.UTC)
	if got, want := BenchStart(now, 2*time.Hour), time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("BenchStart = %v, want %v", got, want)
	}
}
