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

// TestCycleLeaderReturnsOnceItsPartIsCommitted (issue 45, defect 4): a
// writer returns once its part is committed. Transact waited in one select
// on its outcome, its context and the free leader's turn; after its cycle
// the leader found both ready, and Go's select took the turn half the
// time: a whole commit_interval more (7 of 16 transactions in the review).
// The member's cycle now has one owner (package cycle) and no writer
// leads: here each part starts a cycle at once (it weighs cycleRows), and
// each Transact returns within its context of 5 s, commit_interval 1 h.
func TestCycleLeaderReturnsOnceItsPartIsCommitted(t *testing.T) {
	k := txnKafka(t, time.Hour)
	for try := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b := kafkaBatch()
		b.Topic = "logs"
		b.Held = &KafkaHeld{rows: cycleRows} // weighs enough to start the cycle now; holds no chunk
		err := k.Transact(ctx, &TxnPart{Batch: b})
		waited := ctx.Err()
		cancel()
		if err != nil || waited != nil {
			t.Fatalf("try %d: Transact returned %v, its context %v: it waited commit_interval", try, err, waited)
		}
	}
	if n := k.TxnCycles(); n != 20 {
		t.Errorf("%d transactions for 20 parts, want 20", n)
	}
}
