package producer

import "testing"

// placer is a Producer with the cluster view of a test: brokers 1-3 in
// az-a, az-b, az-c, and a topic whose partition i is led by leaders[i].
func placer(part Partitioner, rack string, leaders ...int32) (*Producer, *topicState) {
	p := &Producer{cfg: Config{Partitioner: part, Rack: rack, BatchBytes: 1000}, brokers: map[int32]broker{
		1: {ID: 1, Rack: "az-a"}, 2: {ID: 2, Rack: "az-b"}, 3: {ID: 3, Rack: "az-c"},
	}}
	l := topicLayout{}
	for _, id := range leaders {
		l.Partitions = append(l.Partitions, partitionLeader{Leader: id})
	}
	return p, newTopicState("t", l)
}

// placeMany places n keyless records of size bytes and counts them by
// partition.
func placeMany(p *Producer, ts *topicState, n, size int) map[int32]int {
	got := map[int32]int{}
	for range n {
		got[p.place(ts, &Record{}, size).id]++
	}
	return got
}

func TestRackAwareKeylessStayInZone(t *testing.T) {
	p, ts := placer(RackAware, "az-a", 1, 2, 3, 1, 2, 3)
	got := placeMany(p, ts, 10000, 100)
	for part, n := range got {
		if leader := ts.parts[part].leader; leader != 1 {
			t.Errorf("%d keyless records on partition %d, led by broker %d outside az-a", n, part, leader)
		}
	}
	if got[0] == 0 || got[3] == 0 {
		t.Errorf("keyless records %v; want both az-a partitions (0 and 3) used", got)
	}
}

// Sticky per batch (KIP-794): a partition takes a batch's worth before the
// next is chosen, not one record each.
func TestStickyKeepsAPartitionForABatch(t *testing.T) {
	p, ts := placer(RackAware, "az-a", 1, 1, 1, 1)
	first := p.place(ts, &Record{}, 100).id
	for i := range 9 {
		if got := p.place(ts, &Record{}, 100).id; got != first {
			t.Fatalf("record %d went to %d; the sticky partition %d had taken %d of its 1000 bytes", i+2, got, first, (i+1)*100)
		}
	}
	if got := p.place(ts, &Record{}, 100).id; got == first {
		t.Errorf("the sticky partition %d kept records past a batch's bytes", first)
	}
}

func TestRackAwareFallsBackToAllWithoutLocalLeader(t *testing.T) {
	p, ts := placer(RackAware, "az-a", 2, 3, 2, 3)
	if got := placeMany(p, ts, 10000, 100); len(got) != 4 {
		t.Errorf("keyless records %v; with no leader in az-a every partition should take some", got)
	}
}

// A leader that leaves the zone takes its partition out of the choice at
// once; one that comes back puts it back.
func TestRackAwareFollowsLeaderMoves(t *testing.T) {
	p, ts := placer(RackAware, "az-a", 1, 2, 3)
	if got := placeMany(p, ts, 100, 100); got[0] != 100 {
		t.Fatalf("keyless records %v; want all on partition 0, led in az-a", got)
	}
	ts.update(topicLayout{Partitions: []partitionLeader{{Leader: 2}, {Leader: 2}, {Leader: 1}}})
	if got := placeMany(p, ts, 100, 100); got[2] != 100 {
		t.Fatalf("after the leader moved: keyless records %v; want all on partition 2, now led in az-a", got)
	}
	ts.update(topicLayout{Partitions: []partitionLeader{{Leader: 2}, {Leader: 2}, {Leader: -1}}})
	if got := placeMany(p, ts, 100, 100); got[2] != 0 {
		t.Fatalf("keyless records %v went to a partition without a leader", got)
	}
}

func TestStickyIsRackBlind(t *testing.T) {
	p, ts := placer(Sticky, "az-a", 1, 2, 3)
	if got := placeMany(p, ts, 10000, 100); len(got) != 3 {
		t.Errorf("sticky partitioner used %v; want every partition", got)
	}
}

func TestKeyedAndExplicitPartitionIgnoreTheZone(t *testing.T) {
	p, ts := placer(RackAware, "az-a", 1, 2, 3)
	for _, key := range []string{"user-1", "order-42", "abc"} {
		if got, want := p.place(ts, &Record{Key: []byte(key)}, 10).id, KeyPartition([]byte(key), 3); got != want {
			t.Errorf("key %q on %d, murmur2 says %d", key, got, want)
		}
	}
	if got := p.place(ts, &Record{Partition: 2, Pinned: true}, 10).id; got != 2 {
		t.Errorf("a record for partition 2 went to %d", got)
	}
}
