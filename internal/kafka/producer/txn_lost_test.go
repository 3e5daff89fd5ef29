package producer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
)

// TestCommitWhoseAnswerIsLostIsNotReportedAborted: EndTxn(commit) reaches
// the coordinator, which commits, and its answer is lost while the
// caller's context ends (a revoke, SIGTERM). The commit's outcome is
// unknown, not a failure; the abort that follows meets INVALID_TXN_STATE
// (the transaction is over, committed) and must say so, not report an
// abort: a caller told "aborted" writes the batch again in a new
// transaction, and read_committed consumers see it twice.
func TestCommitWhoseAnswerIsLostIsNotReportedAborted(t *testing.T) {
	c := fakeCluster(t, 1, "out")
	lost := testkit.NewLostAnswersOf(testkit.EndTxnKey, 1)
	recs := make([]Record, 10)
	for i := range recs {
		recs[i].Value = fmt.Appendf(nil, "r%d", i)
	}
	ctx, p := openTxn(t, Config{Brokers: c.ListenAddrs(), Dial: lost.Dial, TransactionalID: "lost-commit", RequestTimeout: 10 * time.Second}, recs)
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	err := p.CommitTxn(short)
	if lost.Lost.Load() != 1 {
		t.Fatalf("the EndTxn answer was not lost (commit: %v)", err)
	}
	if !errors.Is(err, ErrTxnOutcomeUnknown) {
		t.Errorf("CommitTxn with its answer lost: %v, want ErrTxnOutcomeUnknown", err)
	}
	err = p.AbortTxn(ctx)
	if !errors.Is(err, ErrTxnCommitted) {
		t.Errorf("AbortTxn after a commit the coordinator took: %v, want ErrTxnCommitted", err)
	}
	if got := count(testkit.ReadCommitted(t, c.ListenAddrs(), "out", len(recs))); got != len(recs) {
		t.Fatalf("read_committed sees %d records, want %d", got, len(recs))
	}
	if t.Failed() {
		return
	}
	// The producer goes on: the next transaction commits.
	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, "out", recs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTxn(ctx); err != nil {
		t.Fatalf("the transaction after: %v", err)
	}
}

// TestCommitNeverSentIsReportedAborted: a commit refused before it went
// out leaves nothing unknown: the abort aborts, and says nothing more.
func TestCommitNeverSentIsReportedAborted(t *testing.T) {
	c := fakeCluster(t, 1, "out")
	ctx, p := openTxn(t, Config{Brokers: c.ListenAddrs(), TransactionalID: "plain-abort"}, []Record{{Value: []byte("v")}})
	if err := p.AbortTxn(ctx); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if got := count(testkit.ReadCommitted(t, c.ListenAddrs(), "out", 0)); got != 0 {
		t.Fatalf("read_committed sees %d records of an aborted transaction", got)
	}
}

// openTxn makes a transactional producer of cfg, closed when the test
// ends, and opens a transaction holding recs on "out".
func openTxn(t *testing.T, cfg Config, recs []Record) (context.Context, *Producer) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := p.BeginTxn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, "out", recs); err != nil {
		t.Fatal(err)
	}
	return ctx, p
}

// count is how many records seen holds.
func count(seen map[string]int) int {
	n := 0
	for _, c := range seen {
		n += c
	}
	return n
}
