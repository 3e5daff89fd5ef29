package fetch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	franzscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestReaderReauthenticates: a broker with connections.max.reauth.ms gives
// every SASL session a lifetime (KIP-368). The reader authenticates again on
// the same connection before the session ends, with the mechanism started
// afresh, instead of dialling again (or, on a real broker, losing the
// connection at the next request after expiry).
func TestReaderReauthenticates(t *testing.T) {
	const lifetime = 600 * time.Millisecond
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "alice", "secret"),
		kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": "600"}))
	auth := kgo.SASL(franzscram.Auth{User: "alice", Pass: "secret"}.AsSha512Mechanism())
	produce(t, c.ListenAddrs(), []kgo.Opt{auth}, numbered(0, 10)...)

	scramMech, err := scram.Mechanism(scram.SHA512, "alice", "secret")
	if err != nil {
		t.Fatal(err)
	}
	mech := &countingMechanism{Mechanism: scramMech}
	d := &restartingDialer{}
	r := testReader(t, c.ListenAddrs(), ReaderConfig{Dialer: &kafka.Dialer{Timeout: 5 * time.Second, SASLMechanism: mech, DialFunc: d.dial}})
	msgs := readTo(t, r, 10)
	dials, before := d.dials.Load(), mech.starts.Load()

	// Four lifetimes of reading, a record at a time.
	ctx := context.Background()
	for i := 10; i < 20; i++ {
		time.Sleep(lifetime / 4)
		produce(t, c.ListenAddrs(), []kgo.Opt{auth}, numbered(i, i+1)...)
		got, _, err := r.Fetch(ctx)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		msgs = append(msgs, got...)
	}
	msgs = append(msgs, readTo(t, r, 20)...)
	wantValues(t, msgs, valueRange(0, 20)...)
	if n := d.dials.Load() - dials; n != 0 {
		t.Errorf("%d new connections while sessions expired; want re-authentication on the open ones", n)
	}
	if n := mech.starts.Load() - before; n < 2 {
		t.Errorf("%d SASL exchanges over four session lifetimes; want at least 2 re-authentications", n)
	}
}

// countingMechanism counts the SASL exchanges a mechanism starts: each one
// signs with the credentials of its time.
type countingMechanism struct {
	sasl.Mechanism
	starts atomic.Int32
}

func (m *countingMechanism) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	m.starts.Add(1)
	return m.Mechanism.Start(ctx)
}
