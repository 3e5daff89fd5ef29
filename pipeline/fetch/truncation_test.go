package fetch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReaderDetectsTruncation moves the partition's leadership twice. After
// a clean move the new leader's log holds everything the reader read, and
// reading goes on. After the second, the new leader answers that the
// reader's last epoch ends before the reader's offset, as after an unclean
// election: the reader reports a truncated log, counted, at the divergence.
func TestReaderDetectsTruncation(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, testTopic))
	addrs := c.ListenAddrs()
	var diverge atomic.Int64 // end offset to answer; 0: kfake's own answer
	var asked atomic.Int32
	c.ControlKey(int16(kmsg.OffsetForLeaderEpoch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		asked.Add(1)
		end := diverge.Load()
		if end == 0 {
			return nil, nil, false
		}
		req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, rp.LeaderEpoch, end
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	move := func() {
		t.Helper()
		to := (c.LeaderFor(testTopic, 0) + 1) % 3
		if err := c.MoveTopicPartition(testTopic, 0, to); err != nil {
			t.Fatal(err)
		}
	}

	stats := new(Stats)
	r := testReader(t, addrs, ReaderConfig{Stats: stats})
	produce(t, addrs, nil, numbered(0, 20)...)
	msgs := readTo(t, r, 20)

	move() // clean: nothing lost
	produce(t, addrs, nil, numbered(20, 30)...)
	msgs = append(msgs, readTo(t, r, 30)...)
	wantValues(t, msgs, valueRange(0, 30)...)
	if asked.Load() == 0 || stats.Snapshot().Truncations != 0 {
		t.Fatalf("after a clean move: %d epoch checks, %d truncations; want a check and none", asked.Load(), stats.Snapshot().Truncations)
	}

	diverge.Store(25)
	move()
	produce(t, addrs, nil, numbered(30, 31)...)
	var err error
	for err == nil && r.Offset() < 31 {
		_, _, err = r.Fetch(context.Background())
	}
	var oor *OffsetOutOfRangeError
	if !errors.As(err, &oor) || !oor.Truncated || oor.LogEnd != 25 || oor.Offset != 30 {
		t.Fatalf("after an unclean move: err %v (%+v); want a truncation at 25 under offset 30", err, oor)
	}
	if n := stats.Snapshot().Truncations; n != 1 {
		t.Fatalf("%d truncations counted, want 1", n)
	}
}
