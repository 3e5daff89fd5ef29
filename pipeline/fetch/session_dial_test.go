package fetch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/kafka/conn"
	"github.com/logstore/logstore/internal/testkit"
)

// TestGroupConnectionReauthenticates: the group's coordinator connection
// lives as long as a generation. With a broker that gives SASL sessions a
// lifetime, the member renews its session on that connection instead of
// losing it (and its generation) when the session ends; heartbeats and
// commits go on in the same generation.
func TestGroupConnectionReauthenticates(t *testing.T) {
	c, base, mech, d := shortSessions(t)
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID: "reauth", Brokers: c.ListenAddrs(), Topics: []string{testTopic},
		Dialer: conn.GroupDialer(base), HeartbeatInterval: 100 * time.Millisecond,
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

// TestTransportConnectionsRenewWhileIdle: kafka-go's Transport (offset
// commits, metadata, producers) keeps connections in a pool for up to its
// idle timeout, far longer than a short session. A broker closes a
// connection whose session ended at its next request, a renewal included,
// so a pooled connection has to renew while nobody uses it. Through
// SessionDial, every pooled connection renews during idle spells of four
// session lifetimes, and the requests after them go out on the same
// connections.
func TestTransportConnectionsRenewWhileIdle(t *testing.T) {
	c, base, mech, d := shortSessions(t)
	transport := &kafka.Transport{
		Dial:        conn.SessionDial(base),
		IdleTimeout: time.Minute,
	}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...), Transport: transport, Timeout: 5 * time.Second}
	ctx := context.Background()
	request := func() {
		t.Helper()
		if _, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{testTopic}}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{testTopic: {kafka.FirstOffsetOf(0)}}}); err != nil {
			t.Fatal(err)
		}
	}
	request()
	dials := d.dials.Load()
	if dials == 0 || mech.starts.Load() != dials {
		t.Fatalf("%d connections, %d SASL exchanges; want one exchange per connection", dials, mech.starts.Load())
	}
	for spell := range 2 {
		starts := mech.starts.Load()
		time.Sleep(4 * lifetime)
		// At 85-95 % of each lifetime: at least 4 renewals per connection;
		// ask for 2, the machine may be busy.
		if n := mech.starts.Load() - starts; n < 2*dials {
			t.Errorf("idle spell %d: %d SASL exchanges on %d idle connections over four session lifetimes; want each renewed", spell, n, dials)
		}
		request()
	}
	if n := d.dials.Load() - dials; n != 0 {
		t.Errorf("%d new connections after idle spells; want the pooled ones, renewed", n)
	}
}

// lifetime is the SASL session lifetime of shortSessions' cluster.
const lifetime = 600 * time.Millisecond

// shortSessions is a SCRAM-SHA-512 cluster whose sessions last lifetime,
// and a dialer for it that counts its connections and SASL exchanges.
func shortSessions(t *testing.T) (*kfake.Cluster, *kafka.Dialer, *countingMechanism, *restartingDialer) {
	t.Helper()
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, testTopic), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "alice", "secret"),
		kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": fmt.Sprint(lifetime.Milliseconds())}))
	scramMech, err := scram.Mechanism(scram.SHA512, "alice", "secret")
	if err != nil {
		t.Fatal(err)
	}
	mech := &countingMechanism{Mechanism: scramMech}
	d := &restartingDialer{}
	return c, &kafka.Dialer{Timeout: 5 * time.Second, SASLMechanism: mech, DialFunc: d.dial}, mech, d
}
