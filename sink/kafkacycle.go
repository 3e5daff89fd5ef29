package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/sink/cycle"
)

// TxnPart is one partition's batch in the member's next transaction: its
// rows, what else it produces (its dead letters, through Producer), and
// its next offset, committed with them.
type TxnPart struct {
	Batch *Batch
	Also  func(context.Context) error // nil: nothing else
	// Member commits Offset; nil commits no offsets (a replay).
	Member *producer.GroupMember
	Offset producer.Offset

	// writer is the context Transact first had the part with: the
	// cycle passes its failpoints (StopAt) with it.
	writer context.Context
}

// InCycle says a cycle took part and its outcome is not known to the
// caller yet (Transact answered producer.ErrTxnOutcomeUnknown when the
// caller's context ended): Transact with the same part waits for that
// outcome, which only the member's cycle can tell — the brokers cannot
// see a transaction that has not sent its offsets yet.
func (k *Kafka) InCycle(part *TxnPart) bool { return part != nil && k.cycle.InCycle(part) }

// ErrCycleAborted is a part whose transaction was aborted for another
// part's failure (a row the brokers refused): it is written again in the
// next cycle, at once.
var ErrCycleAborted = errors.New("kafka: the member's transaction was aborted for another partition's batch")

// cycleRows bounds a cycle: once this many rows wait, the cycle starts
// without waiting out commit_interval, so a long interval does not hold
// more rows than the memory budget would let the partitions read.
const cycleRows = 200_000

// newTxnCycle is the member's commit cycle for the exactly-once output
// (package cycle): its owner waits commit_interval after a part arrives
// (or until cycleRows wait) and writes every waiting part of the same
// member generation in one transaction with one TxnOffsetCommit of all
// their next offsets (KIP-447's one producer per member, as Kafka Streams'
// EOS v2 commits every task of a thread together).
func newTxnCycle(k *Kafka, interval time.Duration) *cycle.Owner[*TxnPart] {
	return cycle.New(cycle.Config[*TxnPart]{
		Interval: interval,
		Commit:   k.runCycle,
		Together: func(first, p *TxnPart) bool { return sameMember(first.Member, p.Member) },
		Weight:   func(p *TxnPart) int { return len(p.Batch.Rows) + p.Batch.Held.Rows() },
		Enough:   cycleRows,
	})
}

func sameMember(a, b *producer.GroupMember) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// Transact writes part in the member's next transaction and returns its
// outcome: nil once the transaction committed (its rows visible to
// read_committed consumers, its offset the group's); the part's
// RowErrors when the brokers refused rows of it for their size;
// ErrCycleAborted when another part failed the transaction (write it
// again); producer.ErrGroupFenced, producer.ErrProducerFenced as they
// come. A part whose ctx ends while its cycle runs gets an error wrapping
// producer.ErrTxnOutcomeUnknown: the cycle may still commit it, and
// InCycle says so; Transact with the same part then waits for that
// cycle's outcome instead of writing the part again.
func (k *Kafka) Transact(ctx context.Context, part *TxnPart) error {
	if part.writer == nil {
		part.writer = ctx
	}
	err := k.cycle.Submit(ctx, part)
	if errors.Is(err, cycle.ErrTaken) {
		return fmt.Errorf("kafka: %w: the partition stopped while its transaction was being written: %w", producer.ErrTxnOutcomeUnknown, err)
	}
	return err
}

// TxnCycles is how many transactions the member began: one per cycle.
func (k *Kafka) TxnCycles() int64 { return k.cycle.Cycles() }

// runCycle writes group in one transaction and returns each part's
// outcome.
func (k *Kafka) runCycle(ctx context.Context, group []*TxnPart) []error {
	errs := make([]error, len(group))
	err := k.p.BeginTxn(ctx)
	if err != nil {
		err = fmt.Errorf("kafka: beginning the member's transaction: %w", err)
	} else {
		err = k.inCycle(ctx, group, errs)
	}
	if err == nil {
		cycleFailpoint(ctx, writers(group), FailTxnEnding)
		if err = k.p.CommitTxn(ctx); err == nil {
			cycleFailpoint(ctx, writers(group), FailTxnCommitted)
			return make([]error, len(group))
		}
		err = fmt.Errorf("kafka: committing the member's transaction of %d batches: %w", len(group), err)
	}
	// ctx may be what ended: the abort gets its own time.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.cfg.WriteTimeout)
	defer cancel()
	switch aerr := k.p.AbortTxn(actx); {
	case errors.Is(aerr, producer.ErrTxnCommitted):
		// The commit whose answer was lost went through: the batches are
		// in the output, and writing them again would write them twice.
		return make([]error, len(group))
	case aerr != nil:
		err = errors.Join(err, fmt.Errorf("kafka: aborting it: %w", aerr))
	case errors.Is(err, producer.ErrTxnOutcomeUnknown):
		// The abort aborted: the commit never reached the coordinator.
		err = fmt.Errorf("kafka: the member's transaction was aborted (its commit went unanswered: %v)", err)
	}
	for i := range group {
		switch {
		case errs[i] != nil:
		case errors.Is(err, ErrCycleAborted):
			errs[i] = ErrCycleAborted
		default:
			errs[i] = err
		}
	}
	return errs
}

// inCycle produces every part's rows (at once: each Produce waits for its
// acknowledgements, and the parts' partitions go in parallel) and the
// parts' offsets to the positions topic, then what else they produce,
// then commits every part's offset in one TxnOffsetCommit. A part's own
// failure lands in errs[i], and the transaction fails with
// ErrCycleAborted for the others.
func (k *Kafka) inCycle(ctx context.Context, group []*TxnPart, errs []error) error {
	var member *producer.GroupMember
	offsets := make([]producer.Offset, 0, len(group))
	for _, p := range group {
		if p.Member != nil {
			member = p.Member
			offsets = append(offsets, p.Offset)
		}
	}
	var wg sync.WaitGroup
	var posErr error
	if member != nil {
		wg.Go(func() { posErr = k.writePositions(ctx, member.Group, group) })
	}
	for i, p := range group {
		switch {
		case p.Batch.Held != nil:
			wg.Go(func() { errs[i] = k.produceHeld(ctx, p.Batch) })
		case len(p.Batch.Rows) > 0:
			wg.Go(func() { errs[i] = k.produce(ctx, p.Batch) })
		}
	}
	wg.Wait()
	cycleFailpoint(ctx, writers(group), FailInTxn)
	for i, p := range group {
		if errs[i] == nil && p.Also != nil {
			errs[i] = p.Also(ctx)
		}
	}
	for _, e := range errs {
		if e != nil {
			return ErrCycleAborted
		}
	}
	if member == nil {
		return nil
	}
	if posErr != nil {
		return posErr
	}
	return k.p.SendOffsets(ctx, *member, offsets)
}

// writers is the contexts group's parts were handed over with.
func writers(group []*TxnPart) []context.Context {
	out := make([]context.Context, len(group))
	for i, p := range group {
		out[i] = p.writer
	}
	return out
}
