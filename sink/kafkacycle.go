package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore/internal/kafka/producer"
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

	done  chan error
	taken bool // in a cycle; the cycle's mu guards it
	// waiting: handed to the cycle, its outcome not yet returned by
	// Transact; the caller's (Transact is called by one goroutine at a
	// time for a part).
	waiting bool
}

// InCycle says a cycle took part and its outcome is not known to the
// caller yet (Transact answered producer.ErrTxnOutcomeUnknown when the
// caller's context ended): Transact with the same part waits for that
// outcome, which only the cycle holding it can tell — the brokers cannot
// see a transaction that has not sent its offsets yet.
func (p *TxnPart) InCycle() bool { return p != nil && p.waiting }

// ErrCycleAborted is a part whose transaction was aborted for another
// part's failure (a row the brokers refused): it is written again in the
// next cycle, at once.
var ErrCycleAborted = errors.New("kafka: the member's transaction was aborted for another partition's batch")

// cycleRows bounds a cycle: once this many rows wait, the cycle starts
// without waiting out commit_interval, so a long interval does not hold
// more rows than the memory budget would let the partitions read.
const cycleRows = 200_000

// txnCycle gathers the member's partitions' batches into one transaction
// per cycle (KIP-447's one producer per member, as Kafka Streams' EOS v2
// commits every task of a thread together): one of the waiting writers
// becomes the leader, waits commit_interval (or until cycleRows wait),
// and writes every waiting part of the same member generation in one
// transaction with one TxnOffsetCommit of all their next offsets. A
// transaction costs the same few round trips whatever it holds, so a
// member pays them once per cycle, not once per partition's batch.
type txnCycle struct {
	interval time.Duration
	leader   chan struct{} // holds a token while a cycle runs
	full     chan struct{} // wakes a waiting leader: cycleRows wait

	mu    sync.Mutex
	queue []*TxnPart
	rows  int

	cycles atomic.Int64
}

func newTxnCycle(interval time.Duration) *txnCycle {
	return &txnCycle{interval: interval, leader: make(chan struct{}, 1), full: make(chan struct{}, 1)}
}

func (c *txnCycle) add(p *TxnPart) {
	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.rows += len(p.Batch.Rows) + p.Batch.Held.Rows()
	full := c.rows >= cycleRows
	c.mu.Unlock()
	if full {
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
}

// remove takes p out of the queue unless a cycle took it already.
func (c *txnCycle) remove(p *TxnPart) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.taken {
		return false
	}
	for i, q := range c.queue {
		if q == p {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.rows -= len(p.Batch.Rows) + p.Batch.Held.Rows()
			return true
		}
	}
	return false
}

// take returns the waiting parts of the first one's member generation.
func (c *txnCycle) take() []*TxnPart {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return nil
	}
	first := c.queue[0].Member
	var group, rest []*TxnPart
	for _, p := range c.queue {
		if sameMember(p.Member, first) {
			p.taken = true
			c.rows -= len(p.Batch.Rows) + p.Batch.Held.Rows()
			group = append(group, p)
		} else {
			rest = append(rest, p)
		}
	}
	c.queue = rest
	return group
}

func sameMember(a, b *producer.GroupMember) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// wait is the leader's wait for more parts: commit_interval, or until
// cycleRows wait.
func (c *txnCycle) wait(ctx context.Context) {
	if c.interval <= 0 {
		return
	}
	t := time.NewTimer(c.interval)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.full:
	case <-ctx.Done():
	}
}

// Transact writes part in the member's next transaction and returns its
// outcome: nil once the transaction committed (its rows visible to
// read_committed consumers, its offset the group's); the part's
// RowErrors when the brokers refused rows of it for their size;
// ErrCycleAborted when another part failed the transaction (write it
// again); producer.ErrGroupFenced, producer.ErrProducerFenced as they
// come. A part whose ctx ends while its cycle runs gets an error wrapping
// producer.ErrTxnOutcomeUnknown: the cycle may still commit it, and
// part.InCycle says so; Transact with the same part then waits for that
// cycle's outcome instead of writing the part again.
func (k *Kafka) Transact(ctx context.Context, part *TxnPart) error {
	if !part.waiting {
		part.done, part.waiting = make(chan error, 1), true
		k.cycle.add(part)
	}
	for {
		// Its outcome first: select picks at random among ready cases, and
		// the leader, its cycle committed, finds the turn free as well;
		// taking it would wait commit_interval for nothing.
		select {
		case err := <-part.done:
			part.waiting = false
			return err
		default:
		}
		select {
		case err := <-part.done:
			part.waiting = false
			return err
		case <-ctx.Done():
			if k.cycle.remove(part) {
				part.waiting = false
				return ctx.Err()
			}
			return fmt.Errorf("kafka: %w: the partition stopped while its transaction was being written: %w", producer.ErrTxnOutcomeUnknown, ctx.Err())
		case k.cycle.leader <- struct{}{}:
			k.cycle.wait(ctx)
			if group := k.cycle.take(); len(group) > 0 {
				k.runCycle(ctx, group)
			}
			<-k.cycle.leader
		}
	}
}

// TxnCycles is how many transactions the member began: one per cycle.
func (k *Kafka) TxnCycles() int64 { return k.cycle.cycles.Load() }

// runCycle writes group in one transaction and tells every part.
func (k *Kafka) runCycle(ctx context.Context, group []*TxnPart) {
	k.txn.Lock()
	defer k.txn.Unlock()
	k.cycle.cycles.Add(1)
	errs := make([]error, len(group))
	err := k.p.BeginTxn(ctx)
	if err != nil {
		err = fmt.Errorf("kafka: beginning the member's transaction: %w", err)
	} else {
		err = k.inCycle(ctx, group, errs)
	}
	if err == nil {
		Failpoint(ctx, FailTxnEnding)
		if err = k.p.CommitTxn(ctx); err == nil {
			Failpoint(ctx, FailTxnCommitted)
			finish(group, nil)
			return
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
		finish(group, nil)
		return
	case aerr != nil:
		err = errors.Join(err, fmt.Errorf("kafka: aborting it: %w", aerr))
	case errors.Is(err, producer.ErrTxnOutcomeUnknown):
		// The abort aborted: the commit never reached the coordinator.
		err = fmt.Errorf("kafka: the member's transaction was aborted (its commit went unanswered: %v)", err)
	}
	for i, p := range group {
		switch {
		case errs[i] != nil:
			p.done <- errs[i]
		case errors.Is(err, ErrCycleAborted):
			p.done <- ErrCycleAborted
		default:
			p.done <- err
		}
	}
}

func finish(group []*TxnPart, err error) {
	for _, p := range group {
		p.done <- err
	}
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
	Failpoint(ctx, FailInTxn)
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
