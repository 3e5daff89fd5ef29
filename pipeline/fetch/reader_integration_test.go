//go:build integration

package fetch

// These tests need the three-rack cluster of scripts/kafka-cluster.sh:
// node 1 (az-a) on 127.0.0.1:19092, node 2 (az-b) on 29092, node 3 (az-c)
// on 39092, with RackAwareReplicaSelector. Run them with
//
//	scripts/kafka-cluster.sh start
//	go test -tags integration ./pipeline/fetch -run Integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/record"
)

func sequenced(i int) *kgo.Record {
	v := fmt.Sprintf("%08d", i)
	return &kgo.Record{Value: []byte(v + string(make([]byte, 192)))}
}

// produceSequence writes records from..to-1 to partition 0, acknowledged by
// every in-sync replica.
func produceSequence(t testing.TB, topic string, from, to int) {
	t.Helper()
	cl := testkit.Producer(t, topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := from; i < to; i += 100 {
		var recs []*kgo.Record
		for j := i; j < min(i+100, to); j++ {
			recs = append(recs, sequenced(j))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSequence checks that msgs are offsets 0..n-1 with values in order.
func checkSequence(t *testing.T, msgs []record.Record, n int64) {
	t.Helper()
	if int64(len(msgs)) != n {
		t.Fatalf("read %d records, want %d", len(msgs), n)
	}
	last := -1
	for i, m := range msgs {
		seq, err := strconv.Atoi(string(m.Value[:8]))
		if m.Offset != int64(i) || err != nil || seq <= last {
			t.Fatalf("record %d: offset %d, value %q after %d: lost, repeated or out of order", i, m.Offset, m.Value[:8], last)
		}
		last = seq
	}
}

func brokerBytes(s Snapshot) map[int32]int64 {
	out := map[int32]int64{}
	for _, b := range s.Brokers {
		out[b.ID] = b.Bytes
	}
	return out
}

// A Fetch response without records (its size is mostly the topic name) is
// under this; anything above carries records.
const emptyAnswer = 300

func TestIntegrationReaderFetchesFromLocalReplica(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}) // leader in az-a
	produceSequence(t, topic, 0, 5000)

	stats := new(Stats)
	r := NewPartitionReader(ReaderConfig{Brokers: testkit.Brokers, Topic: topic, Rack: "az-b", Stats: stats,
		MaxBytes: 64 << 10, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	msgs := readTo(t, r, 5000)
	checkSequence(t, msgs, 5000)

	snap := stats.Snapshot()
	b := brokerBytes(snap)
	t.Logf("fetched bytes by broker %v, same-rack share %.4f", b, snap.SameRackShare())
	if b[1] > emptyAnswer || b[3] != 0 || b[2] < 5000*200 {
		t.Fatalf("bytes by broker %v: want only the first, empty answer from the leader (1), everything else from az-b (2)", b)
	}
	if snap.SameRackBytes != b[2] || snap.CrossRackBytes != b[1] {
		t.Fatalf("same-rack %d, cross-rack %d; want %d, %d", snap.SameRackBytes, snap.CrossRackBytes, b[2], b[1])
	}
}

func TestIntegrationReaderWithoutRackReadsFromLeader(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})
	produceSequence(t, topic, 0, 1000)

	stats := new(Stats)
	r := NewPartitionReader(ReaderConfig{Brokers: testkit.Brokers, Topic: topic, Stats: stats, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	checkSequence(t, readTo(t, r, 1000), 1000)

	snap := stats.Snapshot()
	if b := brokerBytes(snap); len(b) != 1 || b[1] < 1000*200 || snap.SameRackBytes != 0 {
		t.Fatalf("bytes by broker %v, same-rack %d: want all from the leader (1), none counted same-rack", b, snap.SameRackBytes)
	}
}

func TestIntegrationReaderWithoutLocalReplicaReadsFromLeader(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 3}) // RF 2: nothing in az-b
	produceSequence(t, topic, 0, 1000)

	stats := new(Stats)
	r := NewPartitionReader(ReaderConfig{Brokers: testkit.Brokers, Topic: topic, Rack: "az-b", Stats: stats, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	checkSequence(t, readTo(t, r, 1000), 1000)

	snap := stats.Snapshot()
	b := brokerBytes(snap)
	t.Logf("fetched bytes by broker %v", b)
	if len(b) != 1 || b[1] < 1000*200 || snap.SameRackBytes != 0 || snap.CrossRackBytes != b[1] {
		t.Fatalf("bytes by broker %v, same-rack %d, cross-rack %d: want all from the leader (1), counted cross-rack",
			b, snap.SameRackBytes, snap.CrossRackBytes)
	}
}

// TestIntegrationReaderFailover stops the az-b broker the reader uses as its
// preferred replica while records keep arriving: the reader must go on from
// the leader within 10 s, and come back to az-b once the broker returns and
// the lease runs out, without losing or repeating a record.
func TestIntegrationReaderFailover(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})

	var stopped atomic.Bool
	t.Cleanup(func() {
		if stopped.Load() {
			testkit.ClusterScript(t, "start-node", "2")
		}
	})

	// Records arrive all through the test.
	var produced atomic.Int64
	stopProducing := make(chan struct{})
	var producing sync.WaitGroup
	producing.Add(1)
	go func() {
		defer producing.Done()
		cl := testkit.Producer(t, topic)
		defer cl.Close()
		for i := 0; ; i += 20 {
			select {
			case <-stopProducing:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var recs []*kgo.Record
			for j := i; j < i+20; j++ {
				recs = append(recs, sequenced(j))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
			} else {
				produced.Add(20)
			}
			cancel()
		}
	}()
	defer func() {
		select {
		case <-stopProducing:
		default:
			close(stopProducing)
		}
		producing.Wait()
	}()

	const lease = 2 * time.Second
	stats := new(Stats)
	r := NewPartitionReader(ReaderConfig{Brokers: testkit.Brokers, Topic: topic, Rack: "az-b", Stats: stats,
		PreferredLease: lease, MaxBytes: 16 << 10, MaxWait: 200 * time.Millisecond})
	defer r.Close()

	var msgs []record.Record
	// fetchUntil reads until served reports true for a Fetch that returned
	// records, given the bytes each broker sent for it.
	fetchUntil := func(what string, limit time.Duration, served func(delta map[int32]int64) bool) time.Time {
		t.Helper()
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			before := brokerBytes(stats.Snapshot())
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			got, _, err := r.Fetch(ctx)
			cancel()
			if err != nil {
				t.Fatalf("%s: fetch: %v", what, err)
			}
			msgs = append(msgs, got...)
			delta := brokerBytes(stats.Snapshot())
			for id, n := range before {
				delta[id] -= n
			}
			if len(got) > 0 && served(delta) {
				return time.Now()
			}
		}
		t.Fatalf("%s: not within %v", what, limit)
		return time.Time{}
	}
	from := func(id int32) func(map[int32]int64) bool {
		return func(delta map[int32]int64) bool { return delta[id] > emptyAnswer }
	}

	fetchUntil("reading from az-b (broker 2)", 20*time.Second, from(2))
	for i := 0; i < 5; i++ { // a few more local reads
		fetchUntil("reading on from az-b", 10*time.Second, from(2))
	}

	// Stop broker 2 while reading.
	stopDone := make(chan time.Time, 1)
	stopAt := time.Now()
	stopped.Store(true)
	script := filepath.Join(testkit.RepoRoot(t), "scripts", "kafka-cluster.sh")
	go func() {
		out, err := exec.Command(script, "stop-node", "2").CombinedOutput()
		if err != nil {
			t.Errorf("stop-node 2: %v\n%s", err, out)
		}
		stopDone <- time.Now()
	}()
	leaderAt := fetchUntil("falling back to the leader (broker 1)", 60*time.Second, from(1))
	down := <-stopDone
	t.Logf("records came from the leader %v after stop-node 2 began; the node was down after %v",
		leaderAt.Sub(stopAt).Round(time.Millisecond), down.Sub(stopAt).Round(time.Millisecond))
	if leaderAt.Sub(down) > 10*time.Second {
		t.Errorf("fell back to the leader %v after broker 2 went down; want within 10s", leaderAt.Sub(down))
	}
	fetchUntil("reading on from the leader", 10*time.Second, from(1))

	startAt := time.Now()
	testkit.ClusterScript(t, "start-node", "2")
	stopped.Store(false)
	upAt := time.Now()
	backAt := fetchUntil("back to az-b (broker 2)", 90*time.Second, from(2))
	t.Logf("start-node 2 took %v; local reads again %v after it was up (lease %v)",
		upAt.Sub(startAt).Round(time.Millisecond), backAt.Sub(upAt).Round(time.Millisecond), lease)

	close(stopProducing)
	producing.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, end, err := r.Watermarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if end < produced.Load() {
		t.Fatalf("the log ends at %d, but %d records were acknowledged", end, produced.Load())
	}
	msgs = append(msgs, readTo(t, r, end)...)
	checkSequence(t, msgs, end)

	snap := stats.Snapshot()
	t.Logf("%d records; fetched bytes by broker %v; same-rack share %.3f", end, brokerBytes(snap), snap.SameRackShare())
	if brokerBytes(snap)[3] != 0 {
		t.Errorf("read from broker 3 (az-c), which is neither the leader nor in the reader's rack: %v", brokerBytes(snap))
	}
}

// BenchmarkIntegrationReaders compares PartitionReader with kafka-go's Reader
// on the real cluster, both reading the leader (no rack).
func BenchmarkIntegrationReaders(b *testing.B) {
	client := testkit.RequireCluster(b)
	topic := testkit.CreateTopic(b, client, []int{1, 2, 3})
	const n = 50000
	produceSequence(b, topic, 0, n)
	benchmarkReaders(b, testkit.Brokers, topic, n, 200)
}
