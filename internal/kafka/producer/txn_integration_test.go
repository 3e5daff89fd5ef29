//go:build integration

package producer

// Transactions against the three-rack cluster of scripts/kafka-cluster.sh.
// Run with
//
//	go test -tags integration -run TestIntegrationTxn -count=1 -v ./internal/kafka/producer/

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
)

// readValues reads topic's values from the start, read_committed or not
// (see readTopic).
func readValues(t *testing.T, topic string, committed bool, want int) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	var out []string
	for _, r := range readTopicAt(t, topic, iso, want) {
		out = append(out, string(r.Value))
	}
	return out
}

func txnProducer(t *testing.T, id string) *Producer {
	t.Helper()
	return newTestProducer(t, Config{TransactionalID: id, TransactionTimeout: 10 * time.Second, Linger: 5 * time.Millisecond})
}

func txnID(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func countPrefix(values []string, prefix string) int {
	n := 0
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			n++
		}
	}
	return n
}

// An aborted transaction's records are in the log (read_uncommitted reads
// them) and invisible to read_committed; the committed one after it is
// read once.
func TestIntegrationTxnAbortLeavesNothingVisible(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1}, []int{3, 1, 2})
	p := txnProducer(t, txnID(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, topic, keyless(300, 50, "aborted")); err != nil {
		t.Fatal(err)
	}
	if err := p.AbortTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, topic, keyless(200, 50, "committed")); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTxn(ctx); err != nil {
		t.Fatal(err)
	}

	all := readValues(t, topic, false, 500)
	if got := countPrefix(all, "aborted"); got != 300 {
		t.Fatalf("read_uncommitted reads %d aborted records, want 300 (they were written, then aborted)", got)
	}
	visible := readValues(t, topic, true, 200)
	if a, c := countPrefix(visible, "aborted"), countPrefix(visible, "committed"); a != 0 || c != 200 {
		t.Fatalf("read_committed reads %d aborted and %d committed records, want 0 and 200", a, c)
	}
}

// A zombie: a producer whose transactional id a newer producer took. The
// newer one's InitProducerId aborts the zombie's open transaction and
// fences it: its commit fails with ErrProducerFenced, its records are
// never visible, and it can begin nothing more.
func TestIntegrationTxnZombieProducerIsFenced(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1})
	id := txnID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	zombie := txnProducer(t, id)
	if err := zombie.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := zombie.Produce(ctx, topic, keyless(100, 50, "zombie")); err != nil {
		t.Fatal(err)
	}
	successor := txnProducer(t, id)
	if err := successor.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := zombie.CommitTxn(ctx); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("the zombie's commit: %v, want ErrProducerFenced", err)
	}
	if err := zombie.AbortTxn(ctx); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("the zombie's abort: %v, want ErrProducerFenced (its epoch cannot be bumped back)", err)
	}
	if err := zombie.BeginTxn(ctx); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("the zombie begins again: %v, want ErrProducerFenced", err)
	}
	if err := successor.Produce(ctx, topic, keyless(100, 50, "successor")); err != nil {
		t.Fatal(err)
	}
	if err := successor.CommitTxn(ctx); err != nil {
		t.Fatal(err)
	}
	visible := readValues(t, topic, true, 100)
	if z, s := countPrefix(visible, "zombie"), countPrefix(visible, "successor"); z != 0 || s != 100 {
		t.Fatalf("read_committed reads %d of the zombie's and %d of the successor's records, want 0 and 100", z, s)
	}
}

// KIP-447: offsets committed in a transaction carry the member's
// generation. A member of an old generation is refused (ErrGroupFenced)
// and its transaction aborted; the current generation's offsets become the
// group's only when the transaction commits, and while it is open a stable
// offset fetch waits.
func TestIntegrationTxnOffsetsOfAnOldGenerationAreFenced(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})
	group := "txn-" + txnID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A real member of the group, in its first generation.
	member, err := kgo.NewClient(kgo.SeedBrokers(testkit.Brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	var memberID string
	var gen int32
	for ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollFetches(pctx)
		pcancel()
		if memberID, gen = member.GroupMetadata(); gen > 0 {
			break
		}
	}
	if gen <= 0 {
		t.Fatal("the member never joined")
	}

	p := txnProducer(t, txnID(t))
	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, topic, keyless(10, 20, "old-generation")); err != nil {
		t.Fatal(err)
	}
	err = p.SendOffsets(ctx, GroupMember{Group: group, Generation: gen - 1, MemberID: memberID}, []Offset{{Topic: topic, Partition: 0, Offset: 10}})
	if !errors.Is(err, ErrGroupFenced) {
		t.Fatalf("offsets of generation %d while the group is in %d: %v, want ErrGroupFenced", gen-1, gen, err)
	}
	if err := p.CommitTxn(ctx); !errors.Is(err, ErrAbortTxn) {
		t.Fatalf("committing the fenced transaction: %v, want ErrAbortTxn", err)
	}
	if err := p.AbortTxn(ctx); err != nil {
		t.Fatal(err)
	}

	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, topic, keyless(5, 20, "current")); err != nil {
		t.Fatal(err)
	}
	if err := p.SendOffsets(ctx, GroupMember{Group: group, Generation: gen, MemberID: memberID}, []Offset{{Topic: topic, Partition: 0, Offset: 15, Metadata: "m"}}); err != nil {
		t.Fatal(err)
	}
	short, scancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err = p.StableOffsets(short, group, map[string][]int32{topic: {0}})
	scancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stable offset fetch while the transaction is open: %v, want it to wait", err)
	}
	if err := p.CommitTxn(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := p.StableOffsets(ctx, group, map[string][]int32{topic: {0}})
	if err != nil {
		t.Fatal(err)
	}
	if c := got[topic][0]; c.Offset != 15 || c.Metadata != "m" {
		t.Fatalf("committed %+v, want offset 15 with metadata m", c)
	}
	visible := readValues(t, topic, true, 5)
	if o, c := countPrefix(visible, "old-generation"), countPrefix(visible, "current"); o != 0 || c != 5 {
		t.Fatalf("read_committed reads %d records of the fenced transaction and %d of the committed one, want 0 and 5", o, c)
	}
}

// A transaction left open past its timeout is aborted by the coordinator,
// which bumps the epoch itself (KIP-588): the producer's commit fails, its
// records are never visible, and the abort takes the producer back (its
// epoch was the last before the bump) so the next transaction commits. A
// producer that took this for a fence would stop for good.
func TestIntegrationTxnTimedOutIsAbortedAndTheProducerGoesOn(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})
	p := newTestProducer(t, Config{TransactionalID: txnID(t), TransactionTimeout: time.Second, Linger: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, topic, keyless(10, 20, "timed-out")); err != nil {
		t.Fatal(err)
	}
	// The coordinator looks for expired transactions every 10 s
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms).
	time.Sleep(12 * time.Second)
	if err := p.CommitTxn(ctx); err == nil {
		t.Fatal("a transaction open past its timeout committed")
	}
	if err := p.AbortTxn(ctx); err != nil {
		t.Fatalf("aborting after the coordinator's timeout: %v, want the producer taken back", err)
	}
	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, topic, keyless(7, 20, "after")); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTxn(ctx); err != nil {
		t.Fatal(err)
	}
	visible := readValues(t, topic, true, 7)
	if o, a := countPrefix(visible, "timed-out"), countPrefix(visible, "after"); o != 0 || a != 7 {
		t.Fatalf("read_committed reads %d timed-out and %d later records, want 0 and 7", o, a)
	}
}
