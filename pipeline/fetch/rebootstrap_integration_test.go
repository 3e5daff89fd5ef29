//go:build integration

package fetch

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/record"
)

// movingName is a name the test moves: it resolves to one address until
// the test says another, as DNS does for a cluster that came back
// elsewhere.
type movingName struct {
	name string
	mu   sync.Mutex
	addr string
}

func (n *movingName) LookupHost(_ context.Context, host string) ([]string, error) {
	if host != n.name {
		return nil, nil // anything else as written
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return []string{n.addr}, nil
}

func (n *movingName) moveTo(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addr = addr
}

// TestIntegrationReaderRebootstrapsWhenTheClusterMoves: the reader's only
// bootstrap address is a name; behind it the whole cluster goes away and
// comes back at other addresses (every broker's, and the name's). When no
// known broker answers the reader resolves its bootstrap list again
// (KIP-899) and goes on: every record once, in order, and the time to
// resume is reported.
func TestIntegrationReaderRebootstrapsWhenTheClusterMoves(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})
	produceSequence(t, topic, 0, 2000)

	before := testkit.StartKafkaProxy(t, testkit.Brokers)
	name := &movingName{name: "kafka.logstore.test", addr: before.Addrs[testkit.Brokers[0]]}
	_, port, _ := net.SplitHostPort(testkit.Brokers[0])
	r := NewPartitionReader(ReaderConfig{Brokers: []string{net.JoinHostPort(name.name, port)},
		Dialer: &kafka.Dialer{Resolver: name, Timeout: 5 * time.Second}, Topic: topic, MaxWait: 200 * time.Millisecond})
	defer r.Close()

	var msgs []record.Record
	readTo := func(n int, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		var first time.Duration
		for len(msgs) < n && time.Since(start) < limit {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			got, _, err := r.Fetch(ctx)
			cancel()
			if err != nil {
				t.Fatalf("fetch at %d records: %v", len(msgs), err)
			}
			if len(got) > 0 && first == 0 {
				first = time.Since(start)
			}
			msgs = append(msgs, got...)
		}
		if len(msgs) < n {
			t.Fatalf("read %d records in %v, want %d", len(msgs), limit, n)
		}
		return first
	}
	readTo(2000, 20*time.Second)

	before.Close()
	after := testkit.StartKafkaProxy(t, testkit.Brokers)
	name.moveTo(after.Addrs[testkit.Brokers[0]])
	produceSequence(t, topic, 2000, 4000)
	resumed := readTo(4000, 40*time.Second)
	t.Logf("the cluster moved from %v to %v: reading resumed %v after, %d records", before.Addrs, after.Addrs, resumed.Round(time.Millisecond), len(msgs))
	checkSequence(t, msgs, 4000)
}
