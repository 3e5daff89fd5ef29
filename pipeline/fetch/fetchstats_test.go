package fetch

import (
	"sync"
	"testing"
)

func TestFetchStatsSplitsByRack(t *testing.T) {
	var s Stats
	for _, f := range []struct {
		broker           int32
		brokerRack, rack string
		n                int
	}{
		{1, "az-a", "az-a", 100}, // same rack
		{2, "az-b", "az-a", 10},  // another rack
		{2, "az-b", "az-a", 5},
		{3, "", "az-a", 1},    // a broker without a rack is never local
		{1, "az-a", "", 1000}, // nor is anything for a reader without one
	} {
		s.add(f.broker, f.brokerRack, f.rack, f.n)
	}
	snap := s.Snapshot()
	if snap.SameRackBytes != 100 || snap.CrossRackBytes != 1016 {
		t.Fatalf("same %d, cross %d; want 100, 1016", snap.SameRackBytes, snap.CrossRackBytes)
	}
	want := []BrokerStats{
		{ID: 1, Rack: "az-a", Bytes: 1100, Fetches: 2},
		{ID: 2, Rack: "az-b", Bytes: 15, Fetches: 2},
		{ID: 3, Rack: "", Bytes: 1, Fetches: 1},
	}
	if len(snap.Brokers) != len(want) {
		t.Fatalf("brokers %+v", snap.Brokers)
	}
	for i := range want {
		if snap.Brokers[i] != want[i] {
			t.Fatalf("broker %d: %+v, want %+v", i, snap.Brokers[i], want[i])
		}
	}
	racks := snap.ByRack()
	if racks["az-a"] != 1100 || racks["az-b"] != 15 || racks[""] != 1 {
		t.Fatalf("by rack %v", racks)
	}
	if share := snap.SameRackShare(); share < 0.089 || share > 0.09 {
		t.Fatalf("same-rack share %v", share)
	}
}

func TestFetchStatsZeroAndNil(t *testing.T) {
	var nilStats *Stats
	nilStats.add(1, "a", "a", 10) // counts nothing, does not panic
	if snap := nilStats.Snapshot(); snap.SameRackBytes != 0 || len(snap.Brokers) != 0 || snap.SameRackShare() != 0 {
		t.Fatalf("nil snapshot %+v", snap)
	}
	if snap := new(Stats).Snapshot(); len(snap.Brokers) != 0 || snap.SameRackShare() != 0 {
		t.Fatalf("zero snapshot %+v", snap)
	}
}

func TestFetchStatsConcurrentReaders(t *testing.T) {
	var s Stats
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				s.add(int32(i%3), "az-b", "az-b", g+1)
				if i%100 == 0 {
					s.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	snap := s.Snapshot()
	if want := int64(1000 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8)); snap.SameRackBytes != want || snap.CrossRackBytes != 0 {
		t.Fatalf("same %d, want %d", snap.SameRackBytes, want)
	}
	var fetches int64
	for _, b := range snap.Brokers {
		fetches += b.Fetches
	}
	if fetches != 8000 {
		t.Fatalf("fetches %d, want 8000", fetches)
	}
}
