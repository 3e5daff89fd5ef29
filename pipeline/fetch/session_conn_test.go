package fetch

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestFrameCounter(t *testing.T) {
	frame := func(n int) []byte {
		b := make([]byte, 4+n)
		binary.BigEndian.PutUint32(b, uint32(n))
		return b
	}
	two := append(frame(5), frame(3)...) // 16 bytes
	for _, tc := range []struct {
		name   string
		pieces []int // lengths the stream is cut into
		want   string
	}{
		{"whole", []int{16}, "[2/2]"},
		{"each frame", []int{9, 7}, "[1/1 1/1]"},
		{"size split", []int{2, 2, 5, 7}, "[1/0 0/0 0/1 1/1]"},
		{"byte by byte", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 7}, "[1/0 0/0 0/0 0/0 0/0 0/0 0/0 0/0 0/1 1/1]"},
		{"across", []int{11, 5}, "[2/1 0/1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f frameCounter
			var got []string
			rest := two
			for _, n := range tc.pieces {
				s, e := f.feed(rest[:n])
				rest = rest[n:]
				got = append(got, fmt.Sprintf("%d/%d", s, e))
			}
			if fmt.Sprint(got) != tc.want || !f.atBoundary() {
				t.Fatalf("started/ended %v, want %s (at a boundary: %v)", got, tc.want, f.atBoundary())
			}
		})
	}
}

// TestGroupConnectionReauthenticates: the group's coordinator connection
// lives as long as a generation. With a broker that gives SASL sessions a
// lifetime, the member renews its session on that connection instead of
// losing it (and its generation) when the session ends; heartbeats and
// commits go on in the same generation.
func TestGroupConnectionReauthenticates(t *testing.T) {
	const lifetime = 600 * time.Millisecond
	c := newFake(t, kfake.SeedTopics(2, testTopic), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "alice", "secret"),
		kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": "600"}))
	scramMech, err := scram.Mechanism(scram.SHA512, "alice", "secret")
	if err != nil {
		t.Fatal(err)
	}
	mech := &countingMechanism{Mechanism: scramMech}
	d := &restartingDialer{}
	base := &kafka.Dialer{Timeout: 5 * time.Second, SASLMechanism: mech, DialFunc: d.dial}
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID: "reauth", Brokers: c.ListenAddrs(), Topics: []string{testTopic},
		Dialer: GroupDialer(base), HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout: 6 * time.Second, RebalanceTimeout: 6 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gen, err := group.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dials, starts := d.dials.Load(), mech.starts.Load()
	ended := make(chan struct{})
	gen.Start(func(gctx context.Context) {
		<-gctx.Done()
		close(ended)
	})

	for i := range 8 { // four lifetimes
		time.Sleep(lifetime / 2)
		if err := gen.CommitOffsets(map[string]map[int]int64{testTopic: {0: int64(i)}}); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		select {
		case <-ended:
			t.Fatalf("generation %d ended after %d lifetimes", gen.ID, i/2)
		default:
		}
	}
	if n := d.dials.Load() - dials; n != 0 {
		t.Errorf("%d new connections during the generation; want none", n)
	}
	if n := mech.starts.Load() - starts; n < 2 {
		t.Errorf("%d SASL exchanges over four session lifetimes; want at least 2 renewals on the coordinator connection", n)
	}
}
