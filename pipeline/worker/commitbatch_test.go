package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline/group"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fixedGeneration struct {
	gen    int32
	member string
}

func (g fixedGeneration) Current() (int32, string) { return g.gen, g.member }
func (g fixedGeneration) Changed() <-chan struct{} { return nil }

// TestCommitsThatWaitTogetherGoInOneRequest (issue 44): 300 partitions
// committing at once sent 300 OffsetCommit requests, each an append to
// __consumer_offsets; the member's committer now sends the commits that
// wait together in one request, and each partition still gets its own
// answer: every offset and its metadata stored, and a fenced member's
// commits each refused as fenced.
func TestCommitsThatWaitTogetherGoInOneRequest(t *testing.T) {
	const partitions = 300
	c, err := kfake.NewCluster(kfake.SeedTopics(partitions, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var requests atomic.Int64
	c.ControlKey(kmsg.OffsetCommit.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		requests.Add(1)
		time.Sleep(5 * time.Millisecond) // a coordinator's round trip
		return nil, nil, false
	})
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	owns := func(string, int) bool { return true }
	commit := func(m *MemberCommitter) []error {
		errs := make([]error, partitions)
		var wg sync.WaitGroup
		for p := range partitions {
			wg.Go(func() { errs[p] = m.Commit(context.Background(), "logs", p, int64(1000+p), "cut:9") })
		}
		wg.Wait()
		return errs
	}
	m := NewMemberCommitter(client, "g", fixedGeneration{-1, ""}, owns, time.Second, nil)
	if err := errors.Join(commit(m)...); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load(); n >= partitions/4 {
		t.Errorf("%d commits took %d requests; want those waiting together in one", partitions, n)
	}
	t.Logf("%d commits in %d requests", partitions, requests.Load())
	all := make([]int, partitions)
	for p := range all {
		all[p] = p
	}
	resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"logs": all}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics["logs"] {
		if p.CommittedOffset != int64(1000+p.Partition) || p.Metadata != "cut:9" {
			t.Errorf("partition %d: committed %d %q; want %d \"cut:9\"", p.Partition, p.CommittedOffset, p.Metadata, 1000+p.Partition)
		}
	}

	// A member the group does not know: each commit is refused, as fenced.
	fenced := NewMemberCommitter(client, "g", fixedGeneration{7, "gone"}, func(string, int) bool { return false }, time.Second, nil)
	for p, err := range commit(fenced) {
		if !errors.Is(err, errFenced) {
			t.Fatalf("partition %d of a fenced member: %v; want it fenced", p, err)
		}
	}
}

// TestCommitGivenUpBeforeItsRequestIsNotSent: a commit whose ctx ends
// while it waits for the request before it is taken back, so it cannot
// land after the partition's next commit.
func TestCommitGivenUpBeforeItsRequestIsNotSent(t *testing.T) {
	c, err := kfake.NewCluster(kfake.SeedTopics(2, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	release := make(chan struct{})
	var once sync.Once
	c.ControlKey(kmsg.OffsetCommit.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		once.Do(func() { <-release }) // the first request hangs until released
		return nil, nil, false
	})
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	m := NewMemberCommitter(client, "g", fixedGeneration{-1, ""}, func(string, int) bool { return true }, time.Second, nil)
	first := make(chan error, 1)
	go func() { first <- m.Commit(context.Background(), "logs", 0, 1, "") }()
	time.Sleep(100 * time.Millisecond) // the first request is out
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := m.Commit(ctx, "logs", 1, 50, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a commit given up while queued: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := m.Commit(context.Background(), "logs", 1, 7, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a given-up commit sent late would land by now
	resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"logs": {1}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics["logs"][0].CommittedOffset; got != 7 {
		t.Fatalf("partition 1 at %d; want 7, its last commit (the given-up 50 never sent)", got)
	}
}

// TestConsumerProtocolCommitsThatWaitTogetherGoInOneRequest (issue 44):
// a member of the consumer protocol (KIP-848) committed each partition in
// a request of its own (OffsetCommit v9, which kafka-go cannot send), 600
// partitions twice a batch each; its commits now wait together as a
// classic member's do, with its member epoch and id, and each partition
// gets its own answer: a stale epoch is a rebalance's refusal.
func TestConsumerProtocolCommitsThatWaitTogetherGoInOneRequest(t *testing.T) {
	const partitions = 300
	c, err := kfake.NewCluster(kfake.SeedTopics(partitions, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu       sync.Mutex
		requests int
		got      = map[int32]int64{}
		bad      []string
	)
	const stale = 7 // this partition's answer: STALE_MEMBER_EPOCH
	c.ControlKey(kmsg.OffsetCommit.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.OffsetCommitRequest)
		time.Sleep(5 * time.Millisecond) // a coordinator's round trip
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		mu.Lock()
		defer mu.Unlock()
		requests++
		if req.Version < 9 || req.Generation != 5 || req.MemberID == "" {
			bad = append(bad, fmt.Sprintf("v%d epoch %d member %q", req.Version, req.Generation, req.MemberID))
		}
		for _, tp := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				got[p.Partition] = p.Offset
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				if p.Partition == stale {
					rp.ErrorCode = 113 // STALE_MEMBER_EPOCH
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	member := group.NewConsumer(group.ConsumerConfig{Group: "g", Topics: []string{"logs"}, Brokers: c.ListenAddrs(),
		Dialer: &kafka.Dialer{Timeout: 5 * time.Second}, RebalanceTimeout: time.Second})
	m := NewMemberCommitter(&kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}, "g", fixedGeneration{5, "m"},
		func(_ string, p int) bool { return p != stale }, time.Second, member)
	errs := make([]error, partitions)
	var wg sync.WaitGroup
	for p := range partitions {
		wg.Go(func() { errs[p] = m.Commit(context.Background(), "logs", p, int64(1000+p), "cut:9") })
	}
	wg.Wait()
	for p, err := range errs {
		switch {
		case p == stale && !rebalancing(err):
			t.Errorf("partition %d answered STALE_MEMBER_EPOCH: %v; want a rebalance's refusal", p, err)
		case p != stale && err != nil:
			t.Errorf("partition %d: %v", p, err)
		}
		if got[int32(p)] != int64(1000+p) {
			t.Errorf("partition %d: the coordinator got %d, want %d", p, got[int32(p)], 1000+p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("requests not of the member's epoch 5 in OffsetCommit v9: %v", bad[:min(3, len(bad))])
	}
	if requests >= partitions/4 {
		t.Errorf("%d commits took %d requests; want those waiting together in one", partitions, requests)
	}
	t.Logf("%d commits in %d requests", partitions, requests)
}
