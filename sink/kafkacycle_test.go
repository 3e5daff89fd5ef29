package sink

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// txnKafka is an exactly-once Kafka output on an in-process cluster whose
// member's cycle waits interval for more parts.
func txnKafka(t *testing.T, interval time.Duration) *Kafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out", "out.logstore-positions"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := &KafkaOutputConfig{Topic: "out", Delivery: DeliveryExactlyOnce}
	cfg.setDefaults()
	k, err := newKafka(cfg, c.ListenAddrs(), KafkaDeps{TransactionalID: "logstore-test-" + t.Name(), CommitInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// TestCycleLeaderReturnsOnceItsPartIsCommitted (issue 45, defect 4): the
// writer that led a cycle returns once its part is committed, and does not
// first take the free leader's turn, which waits commit_interval. Transact
// waited in one select on its outcome, its context and the turn; after its
// cycle the leader found both the outcome and the turn ready, and Go's
// select took the turn half the time: a whole commit_interval more (7 of
// 16 transactions in the review), and the partition's next cut and its
// stop flush waited with it. The same defect issue 35 fixed in the
// table's copy of the cycle.
func TestCycleLeaderReturnsOnceItsPartIsCommitted(t *testing.T) {
	k := txnKafka(t, time.Hour)
	for try := range 20 {
		// The leader's wait ends at once (as when enough rows wait), so its
		// cycle runs; a second wait would last commit_interval, here the
		// context's 5 s.
		k.cycle.full <- struct{}{}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b := kafkaBatch()
		b.Topic = "logs"
		err := k.Transact(ctx, &TxnPart{Batch: b})
		waited := ctx.Err()
		cancel()
		if err != nil || waited != nil {
			t.Fatalf("try %d: the leader returned %v, its context %v: it took the free turn after its cycle and waited commit_interval", try, err, waited)
		}
	}
	if n := k.TxnCycles(); n != 20 {
		t.Errorf("%d transactions for 20 parts, want 20", n)
	}
}
