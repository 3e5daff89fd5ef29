//go:build integration

package pipeline

// These tests need the three-rack cluster of scripts/kafka-cluster.sh:
// node 1 (az-a) on 127.0.0.1:19092, node 2 (az-b) on 29092, node 3 (az-c)
// on 39092, with RackAwareReplicaSelector. Run them with
//
//	scripts/kafka-cluster.sh start
//	go test -tags integration ./pipeline/ -run Integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

var clusterBrokers = []string{"127.0.0.1:19092", "127.0.0.1:29092", "127.0.0.1:39092"}

var clusterRacks = map[int]string{1: "az-a", 2: "az-b", 3: "az-c"}

// requireCluster fails the test unless all three brokers answer with their
// racks.
func requireCluster(t testing.TB) *kafka.Client {
	t.Helper()
	// A Transport of its own: kafka-go's default one keeps a failed
	// metadata answer for every later client in the process.
	client := &kafka.Client{Addr: kafka.TCP(clusterBrokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		t.Fatalf("the Kafka test cluster does not answer at %v (%v); start it with scripts/kafka-cluster.sh start", clusterBrokers, err)
	}
	racks := map[int]string{}
	for _, b := range md.Brokers {
		racks[b.ID] = b.Rack
	}
	for id, rack := range clusterRacks {
		if racks[id] != rack {
			t.Fatalf("the Kafka test cluster has brokers %v; want node %d in rack %s (scripts/kafka-cluster.sh status)", racks, id, rack)
		}
	}
	return client
}

var unsafeTopicChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// createTopic creates a fresh topic with one partition per replica list (the
// first replica leads) and waits until every replica is in sync.
func createTopic(t testing.TB, client *kafka.Client, replicas ...[]int) string {
	t.Helper()
	topic := fmt.Sprintf("reader-%s-%d", unsafeTopicChars.ReplaceAllString(t.Name(), "-"), time.Now().UnixNano())
	var assign []kafka.ReplicaAssignment
	for p, rs := range replicas {
		assign = append(assign, kafka.ReplicaAssignment{Partition: p, Replicas: rs})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignments: assign,
	}}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	})

	for {
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) == len(replicas) {
			ready := true
			for _, p := range md.Topics[0].Partitions {
				ready = ready && p.Leader.ID == replicas[p.ID][0] && len(p.Isr) == len(replicas[p.ID])
			}
			if ready {
				return topic
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s not ready: %v", topic, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func sequenced(i int) *kgo.Record {
	v := fmt.Sprintf("%08d", i)
	return &kgo.Record{Value: []byte(v + string(make([]byte, 192)))}
}

// produceSequence writes records from..to-1 to partition 0, acknowledged by
// every in-sync replica.
func produceSequence(t testing.TB, topic string, from, to int) {
	t.Helper()
	cl := seqProducer(t, topic)
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

func seqProducer(t testing.TB, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(clusterBrokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // so bytes fetched track records read
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// checkSequence checks that msgs are offsets 0..n-1 with values in order.
func checkSequence(t *testing.T, msgs []kafka.Message, n int64) {
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

func brokerBytes(s FetchSnapshot) map[int32]int64 {
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
	client := requireCluster(t)
	topic := createTopic(t, client, []int{1, 2, 3}) // leader in az-a
	produceSequence(t, topic, 0, 5000)

	stats := new(FetchStats)
	r := NewPartitionReader(ReaderConfig{Brokers: clusterBrokers, Topic: topic, Rack: "az-b", Stats: stats,
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
	client := requireCluster(t)
	topic := createTopic(t, client, []int{1, 2, 3})
	produceSequence(t, topic, 0, 1000)

	stats := new(FetchStats)
	r := NewPartitionReader(ReaderConfig{Brokers: clusterBrokers, Topic: topic, Stats: stats, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	checkSequence(t, readTo(t, r, 1000), 1000)

	snap := stats.Snapshot()
	if b := brokerBytes(snap); len(b) != 1 || b[1] < 1000*200 || snap.SameRackBytes != 0 {
		t.Fatalf("bytes by broker %v, same-rack %d: want all from the leader (1), none counted same-rack", b, snap.SameRackBytes)
	}
}

func TestIntegrationReaderWithoutLocalReplicaReadsFromLeader(t *testing.T) {
	client := requireCluster(t)
	topic := createTopic(t, client, []int{1, 3}) // RF 2: nothing in az-b
	produceSequence(t, topic, 0, 1000)

	stats := new(FetchStats)
	r := NewPartitionReader(ReaderConfig{Brokers: clusterBrokers, Topic: topic, Rack: "az-b", Stats: stats, MaxWait: 200 * time.Millisecond})
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

func clusterScript(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join("..", "scripts", "kafka-cluster.sh"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-cluster.sh %v: %v\n%s", args, err, out)
	}
}

// TestIntegrationReaderFailover stops the az-b broker the reader uses as its
// preferred replica while records keep arriving: the reader must go on from
// the leader within 10 s, and come back to az-b once the broker returns and
// the lease runs out, without losing or repeating a record.
func TestIntegrationReaderFailover(t *testing.T) {
	client := requireCluster(t)
	topic := createTopic(t, client, []int{1, 2, 3})

	var stopped atomic.Bool
	t.Cleanup(func() {
		if stopped.Load() {
			clusterScript(t, "start-node", "2")
		}
	})

	// Records arrive all through the test.
	var produced atomic.Int64
	stopProducing := make(chan struct{})
	var producing sync.WaitGroup
	producing.Add(1)
	go func() {
		defer producing.Done()
		cl := seqProducer(t, topic)
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
	stats := new(FetchStats)
	r := NewPartitionReader(ReaderConfig{Brokers: clusterBrokers, Topic: topic, Rack: "az-b", Stats: stats,
		PreferredLease: lease, MaxBytes: 16 << 10, MaxWait: 200 * time.Millisecond})
	defer r.Close()

	var msgs []kafka.Message
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
	go func() {
		out, err := exec.Command(filepath.Join("..", "scripts", "kafka-cluster.sh"), "stop-node", "2").CombinedOutput()
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
	clusterScript(t, "start-node", "2")
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
	client := requireCluster(b)
	topic := createTopic(b, client, []int{1, 2, 3})
	const n = 50000
	produceSequence(b, topic, 0, n)
	benchmarkReaders(b, clusterBrokers, topic, n, 200)
}
