// Package testkit is what the integration tests of every package share: the
// three-rack test cluster of scripts/kafka-cluster.sh (node 1 in az-a on
// 127.0.0.1:19092, node 2 in az-b on 29092, node 3 in az-c on 39092, with
// RackAwareReplicaSelector), topics on it, producers to them, and the IMDS
// mock of scripts/imds-mock.sh.
package testkit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Brokers are the test cluster's listeners.
var Brokers = []string{"127.0.0.1:19092", "127.0.0.1:29092", "127.0.0.1:39092"}

// Racks are the test cluster's broker racks by node id.
var Racks = map[int]string{1: "az-a", 2: "az-b", 3: "az-c"}

// RequireCluster fails the test unless all three brokers answer with their
// racks.
func RequireCluster(t testing.TB) *kafka.Client {
	t.Helper()
	// A Transport of its own: kafka-go's default one keeps a failed
	// metadata answer for every later client in the process.
	client := &kafka.Client{Addr: kafka.TCP(Brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		t.Fatalf("the Kafka test cluster does not answer at %v (%v); start it with scripts/kafka-cluster.sh start", Brokers, err)
	}
	racks := map[int]string{}
	for _, b := range md.Brokers {
		racks[b.ID] = b.Rack
	}
	for id, rack := range Racks {
		if racks[id] != rack {
			t.Fatalf("the Kafka test cluster has brokers %v; want node %d in rack %s (scripts/kafka-cluster.sh status)", racks, id, rack)
		}
	}
	return client
}

// UnsafeTopicChars are the characters of a test name a topic name cannot hold.
var UnsafeTopicChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// CreateTopic creates a fresh topic with one partition per replica list (the
// first replica leads) and waits until every replica is in sync.
func CreateTopic(t testing.TB, client *kafka.Client, replicas ...[]int) string {
	t.Helper()
	topic := fmt.Sprintf("reader-%s-%d", UnsafeTopicChars.ReplaceAllString(t.Name(), "-"), time.Now().UnixNano())
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
				WaitForTopic(t, topic, len(replicas))
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

// Producer writes to topic without batching or compression, to the
// partition each record names, so bytes fetched track records read.
func Producer(t testing.TB, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(Brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// ClusterScript runs scripts/kafka-cluster.sh with args, from any package.
func ClusterScript(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(RepoRoot(t), "scripts", "kafka-cluster.sh"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-cluster.sh %v: %v\n%s", args, err, out)
	}
}

// RepoRoot is the folder of go.mod above the test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartIMDSMock runs amazon-ec2-metadata-mock with IMDSv2 enforced, through
// the script a person uses, on a free port; it is stopped when the test ends.
func StartIMDSMock(t *testing.T, zoneName, zoneID string) string {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "imds-mock.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the IMDS mock script is missing: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	// The first start may build the mock; later ones are quick.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, script, "start", zoneName, zoneID, port).CombinedOutput(); err != nil {
		t.Fatalf("imds-mock.sh start: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", port).CombinedOutput(); err != nil {
			t.Errorf("imds-mock.sh stop: %v\n%s", err, out)
		}
	})
	endpoint := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return endpoint
		}
		if time.Now().After(deadline) {
			t.Fatalf("the IMDS mock does not listen on %s", endpoint)
		}
	}
}

// StateDir is where the scripts keep the services' state and logs:
// $LOGSTORE_STATE, else <repo>/.state (scripts/lib.sh decides the same).
func StateDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("LOGSTORE_STATE"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(t), ".state")
}

// WaitForTopic waits until every broker of the test cluster has topic in
// its metadata with a leader for each of its partitions: CreateTopics
// answers once the controller made it, and a client that asks a broker
// which has not heard of it yet is told UNKNOWN_TOPIC_OR_PARTITION (seen
// on a loaded machine, right after a broker's restart).
func WaitForTopic(t testing.TB, topic string, partitions int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		known := 0
		for _, addr := range Brokers {
			c := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 5 * time.Second}
			md, err := c.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
			if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != partitions {
				break
			}
			led := 0
			for _, p := range md.Topics[0].Partitions {
				if p.Error == nil && p.Leader.ID >= 0 && p.Leader.Host != "" {
					led++
				}
			}
			if led != partitions {
				break
			}
			known++
		}
		if known == len(Brokers) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: not every broker knows its %d partitions and their leaders 30 s after it was made", topic, partitions)
		}
	}
}

// FilesUnder lists the files below dir, as slash-separated paths relative
// to it.
func FilesUnder(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// FakeCluster is an in-process Kafka (kfake), closed with the test.
func FakeCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
