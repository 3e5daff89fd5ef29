//go:build integration

package producer

// The producer against the three-rack cluster of scripts/kafka-cluster.sh
// (node 1 in az-a, 2 in az-b, 3 in az-c). Run with
//
//	go test -tags integration -run TestIntegration -count=1 -v ./internal/kafka/producer/

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
)

// readTopic reads every record of topic from the start: want of them, and
// whatever more (a duplicate) comes within a second after.
func readTopic(t *testing.T, topic string, want int) []*kgo.Record {
	return readTopicAt(t, topic, kgo.ReadUncommitted(), want)
}

// readTopicAt is readTopic at an isolation level.
func readTopicAt(t *testing.T, topic string, iso kgo.IsolationLevel, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testkit.Brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(60 * time.Second)
	var quietFrom time.Time
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if len(out) >= want {
			if quietFrom.IsZero() || n > 0 {
				quietFrom = time.Now()
			} else if time.Since(quietFrom) > time.Second {
				break
			}
		}
	}
	return out
}

func newTestProducer(t *testing.T, cfg Config) *Producer {
	t.Helper()
	cfg.Brokers = testkit.Brokers
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func keyless(n, size int, tag string) []Record {
	recs := make([]Record, n)
	for i := range recs {
		v := fmt.Appendf(nil, "%s-%d-", tag, i)
		for len(v) < size {
			v = append(v, 'x')
		}
		recs[i] = Record{Value: v}
	}
	return recs
}

// A produce whose answer the network lost, on the real brokers: the
// producer waits out its timeout and sends the same batch again, and the
// leader, which had written it, drops the copy.
func TestIntegrationRetriedAfterTimeoutWritesOnce(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1}, []int{3, 1, 2})
	lost := testkit.NewLostAnswers(3)
	p := newTestProducer(t, Config{Dial: lost.Dial, RequestTimeout: 2 * time.Second, Compression: compress.Zstd, BatchRecords: 100})
	var recs []Record
	for i := range 900 {
		recs = append(recs, Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Produce(ctx, topic, recs); err != nil {
		t.Fatal(err)
	}
	if lost.Lost.Load() != 3 {
		t.Fatalf("%d answers lost; the test needs 3", lost.Lost.Load())
	}
	seen := map[string]int{}
	for _, r := range readTopic(t, topic, len(recs)) {
		seen[string(r.Value)]++
	}
	for i := range recs {
		if n := seen[string(recs[i].Value)]; n != 1 {
			t.Errorf("record %d is in the topic %d times", i, n)
		}
	}
}

// sixPartitions leads partitions 0 and 3 from broker 1 (az-a), 1 and 4
// from 2 (az-b), 2 and 5 from 3 (az-c).
var sixPartitions = [][]int{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}

// A member in az-a produces keyless rows only to the partitions broker 1
// leads (and to both of them, batch by batch); a rack-blind sticky
// producer in the same run spreads them over all six, two thirds across
// zones.
func TestIntegrationRackAwareKeylessOnlyToZoneLeaders(t *testing.T) {
	client := testkit.RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct {
		part    Partitioner
		inZone  map[int32]bool // partitions allowed; nil: any
		maxPart int            // distinct partitions expected at least
	}{
		{RackAware, map[int32]bool{0: true, 3: true}, 2},
		{Sticky, nil, 6},
	} {
		t.Run(c.part.String(), func(t *testing.T) {
			topic := testkit.CreateTopic(t, client, sixPartitions...)
			stats := &Stats{}
			p := newTestProducer(t, Config{Rack: "az-a", Partitioner: c.part, BatchBytes: 16 << 10, Stats: stats, Compression: compress.Lz4})
			const calls, per = 40, 200
			for i := range calls {
				if err := p.Produce(ctx, topic, keyless(per, 200, fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			byPart := map[int32]int{}
			for _, r := range readTopic(t, topic, calls*per) {
				byPart[r.Partition]++
			}
			total := 0
			for part, n := range byPart {
				total += n
				if c.inZone != nil && !c.inZone[part] {
					t.Errorf("%d keyless records on partition %d, not led in az-a", n, part)
				}
			}
			if total != calls*per || len(byPart) < c.maxPart {
				t.Errorf("records by partition %v (%d of %d); want %d partitions used", byPart, total, calls*per, c.maxPart)
			}
			snap := stats.Snapshot()
			cross := float64(snap.CrossRackBytes) / float64(snap.SameRackBytes+snap.CrossRackBytes)
			t.Logf("%s: records by partition %v; produced bytes same-rack %d, cross-rack %d (%.1f %%)", c.part, byPart, snap.SameRackBytes, snap.CrossRackBytes, 100*cross)
			if c.part == RackAware && snap.CrossRackBytes != 0 {
				t.Errorf("rack-aware: %d produced bytes counted cross-rack", snap.CrossRackBytes)
			}
			if c.part == Sticky && cross < 0.3 {
				t.Errorf("sticky: only %.0f %% of produced bytes cross-rack; a rack-blind spread over three zones gives about two thirds", 100*cross)
			}
		})
	}
}

// steadily produces keyless records every 20 ms until stop; errors are
// test failures (a leader move must cost retries, not records).
func steadily(t *testing.T, p *Producer, topic string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := p.Produce(ctx, topic, keyless(50, 100, fmt.Sprint(i))); err != nil {
				t.Errorf("produce during the leader move: %v", err)
			}
			cancel()
		}
	}()
	return sync.OnceFunc(func() { close(done); wg.Wait() })
}

// localAgain waits until, over a 500 ms window, the producer's bytes went
// to broker 1 only, and returns when that window began.
func localAgain(t *testing.T, stats *Stats, limit time.Duration) time.Time {
	t.Helper()
	byBroker := func() map[int32]int64 {
		m := map[int32]int64{}
		for _, b := range stats.Snapshot().Brokers {
			m[b.ID] = b.Bytes
		}
		return m
	}
	start := time.Now()
	prev, prevAt := byBroker(), time.Now()
	for time.Since(start) < limit {
		time.Sleep(500 * time.Millisecond)
		now := byBroker()
		local, other := now[1]-prev[1], (now[2]-prev[2])+(now[3]-prev[3])
		if local > 0 && other == 0 {
			return prevAt
		}
		prev, prevAt = now, time.Now()
	}
	t.Fatalf("the az-a producer did not produce to broker 1 alone within %s", limit)
	return time.Time{}
}

// leaders is partition → leader, from metadata.
func leaders(t *testing.T, client *kafka.Client, topic string) map[int]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 {
		return nil
	}
	out := map[int]int{}
	for _, p := range md.Topics[0].Partitions {
		out[p.ID] = p.Leader.ID
	}
	return out
}

// elect runs preferred-leader elections until metadata shows the wanted
// leaders (partition → broker), and returns when it did.
func elect(t *testing.T, client *kafka.Client, topic string, want map[int]int) time.Time {
	t.Helper()
	var parts []int
	for p := range want {
		parts = append(parts, p)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		res, err := client.ElectLeaders(ctx, &kafka.ElectLeadersRequest{Topic: topic, Partitions: parts, Timeout: 10 * time.Second})
		cancel()
		if err == nil {
			err = res.Error
		}
		l := leaders(t, client, topic)
		done := true
		for p, b := range want {
			done = done && l[p] == b
		}
		if done {
			return time.Now()
		}
		t.Logf("leaders %v, want %v (election: %v)", l, want, err)
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the preferred leaders %v were not elected in a minute", want)
	return time.Time{}
}

// A leader moving into the member's zone (a reassignment and a preferred
// election) is produced to within seconds, and the partition that left
// the zone no longer is; no record is lost or written twice.
func TestIntegrationRackAwareFollowsLeaderMove(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 1, 3}, []int{3, 2, 1})
	stats := &Stats{}
	p := newTestProducer(t, Config{Rack: "az-a", Partitioner: RackAware, Stats: stats})
	stop := steadily(t, p, topic)
	defer stop()
	time.Sleep(time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Partition 0 goes to az-b, partition 1 comes to az-a.
	res, err := client.AlterPartitionReassignments(ctx, &kafka.AlterPartitionReassignmentsRequest{Topic: topic, Timeout: 10 * time.Second,
		Assignments: []kafka.AlterPartitionReassignmentsRequestAssignment{{PartitionID: 0, BrokerIDs: []int{2, 1, 3}}, {PartitionID: 1, BrokerIDs: []int{1, 2, 3}}}})
	if err == nil {
		err = res.Error
		for _, r := range res.PartitionResults {
			err = errors.Join(err, r.Error)
		}
	}
	if err != nil {
		t.Fatalf("reassigning: %v", err)
	}
	moved := elect(t, client, topic, map[int]int{0: 2, 1: 1})
	at := localAgain(t, stats, 10*time.Second)
	t.Logf("metadata showed broker 1 leading partition 1 at +0; the first 500 ms window with every produced byte at broker 1 began at %+.1fs", at.Sub(moved).Seconds())
	if d := at.Sub(moved); d > 5*time.Second {
		t.Errorf("produced in zone again %s after the leader moved; want within 5 s", d)
	}
	// Records after the move: only partition 1 of the two.
	mark := time.Now()
	time.Sleep(time.Second)
	stop()
	for _, r := range readTopic(t, topic, 1) {
		if r.Timestamp.After(mark) && r.Partition != 1 {
			t.Errorf("a record of %s on partition %d, now led outside az-a", r.Timestamp.Format(time.StampMilli), r.Partition)
			break
		}
	}
}

// A rolling restart of the az-a broker: while it is down the az-a member
// produces to the other zones without losing a record; once broker 1 leads
// again (it rejoins the ISR and a preferred election runs, as Kafka's
// leader rebalance does) the member produces in its zone within 5 s.
func TestIntegrationInZoneAgainAfterBrokerRestart(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, sixPartitions...)
	stopped := false
	t.Cleanup(func() {
		if stopped {
			testkit.ClusterScript(t, "start-node", "1")
		}
	})
	stats := &Stats{}
	p := newTestProducer(t, Config{Rack: "az-a", Partitioner: RackAware, Stats: stats})
	stop := steadily(t, p, topic)
	defer stop()
	time.Sleep(time.Second)

	testkit.ClusterScript(t, "stop-node", "1")
	stopped = true
	time.Sleep(5 * time.Second)
	before := stats.Snapshot()
	time.Sleep(2 * time.Second)
	during := stats.Snapshot()
	if during.CrossRackBytes <= before.CrossRackBytes {
		t.Errorf("nothing produced while broker 1 was down")
	}
	testkit.ClusterScript(t, "start-node", "1")
	stopped = false

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Broker 1 back in every ISR, then the preferred election.
	for ctx.Err() == nil {
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		back := err == nil && len(md.Topics) == 1
		if back {
			for _, part := range md.Topics[0].Partitions {
				in := false
				for _, b := range part.Isr {
					in = in || b.ID == 1
				}
				back = back && in
			}
		}
		if back {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	leading := elect(t, client, topic, map[int]int{0: 1, 3: 1})
	at := localAgain(t, stats, 20*time.Second)
	t.Logf("metadata showed broker 1 leading partitions 0 and 3 again at +0; the first 500 ms window with every produced byte at broker 1 began at %+.1fs", at.Sub(leading).Seconds())
	if d := at.Sub(leading); d > 5*time.Second {
		t.Errorf("produced in zone again %s after broker 1 led again; want within 5 s", d)
	}
	stop()
	// Every call succeeded (steadily fails the test otherwise); the
	// records are each in the topic once.
	seen := map[string]int{}
	for _, r := range readTopic(t, topic, 1) {
		seen[string(r.Value)]++
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%.30s… is in the topic %d times", v, n)
		}
	}
}
