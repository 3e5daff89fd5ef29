package fetch

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/twmb/franz-go/pkg/kfake"
)

const testTopic = "logs"

type fixedResolver map[string]string

func (r fixedResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if to, ok := r[host]; ok {
		return []string{to}, nil
	}
	return []string{host}, nil
}

// TestBrokerPoolUsesDialerSettings checks that connections go through the
// Dialer's DialFunc and Resolver, and that a dead seed does not stop the
// pool from finding the cluster through the others.
func TestBrokerPoolUsesDialerSettings(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(2, testTopic))
	_, port, _ := net.SplitHostPort(c.ListenAddrs()[0])

	var dials atomic.Int32
	d := &kafka.Dialer{
		Timeout:  2 * time.Second,
		Resolver: fixedResolver{"kafka.invalid": "127.0.0.1"},
		DialFunc: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	dead := deadAddr(t)
	pool := newBrokerPool(d, []string{dead, "kafka.invalid:" + port}, nil, nil)
	defer pool.close()

	ctx := context.Background()
	st, err := pool.partition(ctx, testTopic, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != c.LeaderFor(testTopic, 1) || st.LeaderEpoch != c.PartitionInfo(testTopic, 1).Epoch || len(st.Replicas) == 0 {
		t.Fatalf("partition state %+v", st)
	}
	if dials.Load() != 2 {
		t.Fatalf("%d dials, want 2 (the dead seed, the live one)", dials.Load())
	}
	// The next metadata goes to a broker from the last answer.
	if _, err := pool.partition(ctx, testTopic, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.partition(ctx, "missing", 0); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("unknown topic: %v", err)
	}
	if _, err := pool.partition(ctx, testTopic, 7); err == nil {
		t.Fatal("no error for a partition that does not exist")
	}
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestBrokerPoolForgetsBrokersThatLeft(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, testTopic))
	pool := newBrokerPool(kafka.DefaultDialer, c.ListenAddrs(), nil, nil)
	defer pool.close()
	ctx := context.Background()
	if _, err := pool.partition(ctx, testTopic, 0); err != nil {
		t.Fatal(err)
	}
	for id := range int32(3) {
		if _, err := pool.conn(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	n0, _ := pool.node(0)
	n1, _ := pool.node(1)
	host0, port0 := hostPort(t, n0.Addr)
	host1, port1 := hostPort(t, n1.Addr)
	pool.learn(&metadata.Response{Brokers: []metadata.ResponseBroker{
		{NodeID: 0, Host: host0, Port: port0},
		{NodeID: 1, Host: host1, Port: port1 + 1}, // moved
	}})
	if _, ok := pool.node(2); ok {
		t.Fatal("broker 2 is still known")
	}
	pool.mu.Lock()
	_, has0 := pool.conns[0]
	_, has1 := pool.conns[1]
	_, has2 := pool.conns[2]
	pool.mu.Unlock()
	if !has0 || has1 || has2 {
		t.Fatalf("connections kept: 0 %v, 1 %v, 2 %v; want only 0", has0, has1, has2)
	}
}

func hostPort(t *testing.T, addr string) (string, int32) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, int32(p)
}
