package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
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
