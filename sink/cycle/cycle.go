// Package cycle is a member's commit cycle: one goroutine, the owner, that
// gathers what the member's partitions hand it and commits it all at once,
// once per interval (or at once when enough waits), for any output that
// commits per member rather than per batch — the exactly-once Kafka
// output's transaction, the table's snapshot. A transaction or a snapshot
// costs the same few round trips whatever it holds, so a member pays them
// once per cycle, not once per partition's batch (Kafka Streams' EOS v2
// commits every task of a thread together; Flink's two-phase-commit sinks
// once per checkpoint).
//
// The partitions only hand parts over and wait for their outcome; none of
// them commits for the others (no leader is elected among the writers, so
// no writer's context or stop ends another's commit, and a writer whose
// part is committed returns at once). The owner alone knows whether it took
// a part: a partition that stops while its part is in a cycle asks the
// owner (Submit again, or InCycle), never the brokers, which cannot see a
// commit that has not reached them yet.
//
// The package knows nothing of Kafka or tables; it imports nothing of
// logstore's.
package cycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTaken is what Submit returns when its context ended while the owner
// was committing the part: the part may be committed or not, and only the
// cycle's outcome tells. Submit with the same part waits for that outcome;
// Abandon lets it go.
var ErrTaken = errors.New("the member's commit cycle holds the part")

// ErrClosed is the outcome of parts still waiting when the owner closed.
var ErrClosed = errors.New("the member's commit cycle closed")

// Config is what an owner commits and when.
type Config[T comparable] struct {
	// Interval is how long the owner waits for more parts after the first
	// of a cycle arrives; 0 commits at once.
	Interval time.Duration
	// Commit commits the parts of one cycle and returns each one's
	// outcome, in their order (nil: committed).
	Commit func(ctx context.Context, parts []T) []error
	// Together says whether part p may go in the cycle that first opens
	// (the Kafka transaction takes one member generation's parts); nil:
	// every waiting part goes. The others wait for the next cycle.
	Together func(first, p T) bool
	// Weight and Enough: once the waiting parts weigh Enough, the cycle
	// starts without waiting out Interval (0: never).
	Weight func(T) int
	Enough int
}

// Owner is the member's commit cycle (see the package doc).
type Owner[T comparable] struct {
	cfg Config[T]

	mu      sync.Mutex
	queue   []T
	weight  int
	entries map[T]*entry
	closed  bool

	arrived chan struct{} // a part arrived (buffered 1)
	full    chan struct{} // Enough waits (buffered 1)
	start   sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	cycles atomic.Int64
}

// entry is a part the owner holds: waiting in the queue, or taken by a
// cycle, until its outcome is returned.
type entry struct {
	done      chan error // its outcome; buffered
	taken     bool
	abandoned bool // nobody waits for its outcome: drop it then
}

// New makes an owner; its goroutine starts with the first part.
func New[T comparable](cfg Config[T]) *Owner[T] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Owner[T]{cfg: cfg, entries: make(map[T]*entry), arrived: make(chan struct{}, 1), full: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Submit hands part to the owner and waits for its outcome: nil once it
// is committed, the Commit's error for it, ErrClosed. When ctx ends first,
// a part the owner has not taken yet is taken back (ctx.Err()); one a
// cycle holds stays the owner's, and Submit returns an error wrapping
// ErrTaken: Submit with the same part then waits for that cycle's outcome
// instead of handing it over again.
func (o *Owner[T]) Submit(ctx context.Context, part T) error {
	o.start.Do(func() { go o.run() })
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	e := o.entries[part]
	if e == nil {
		e = &entry{done: make(chan error, 1)}
		o.entries[part] = e
		o.queue = append(o.queue, part)
		o.weight += o.weigh(part)
		full := o.cfg.Enough > 0 && o.weight >= o.cfg.Enough
		o.mu.Unlock()
		signal(o.arrived)
		if full {
			signal(o.full)
		}
	} else {
		e.abandoned = false
		o.mu.Unlock()
	}
	select {
	case err := <-e.done:
		o.forget(part, e)
		return err
	case <-ctx.Done():
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case err := <-e.done: // the outcome came with the end
		delete(o.entries, part)
		return err
	default:
	}
	if e.taken {
		return fmt.Errorf("%w: %w", ErrTaken, ctx.Err())
	}
	o.drop(part)
	delete(o.entries, part)
	return ctx.Err()
}

// InCycle says whether a cycle holds part and its outcome has not been
// returned yet (Submit answered ErrTaken).
func (o *Owner[T]) InCycle(part T) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.entries[part]
	return e != nil && e.taken
}

// Abandon lets go of a part whose outcome nobody will wait for (Submit
// answered ErrTaken, and the caller learns the outcome elsewhere).
func (o *Owner[T]) Abandon(part T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.entries[part]; e != nil {
		select {
		case <-e.done:
			delete(o.entries, part)
		default:
			e.abandoned = true
		}
	}
}

// Cycles is how many cycles the owner committed (or tried).
func (o *Owner[T]) Cycles() int64 { return o.cycles.Load() }

// Close ends the owner: a cycle under way is ended through its context,
// and the parts still waiting get ErrClosed.
func (o *Owner[T]) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cancel()
	o.start.Do(func() { close(o.done) }) // never started
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.queue {
		o.entries[p].done <- ErrClosed
	}
	o.queue, o.weight = nil, 0
}

func (o *Owner[T]) weigh(p T) int {
	if o.cfg.Weight == nil {
		return 0
	}
	return o.cfg.Weight(p)
}

// drop takes p out of the queue. The caller holds mu.
func (o *Owner[T]) drop(p T) {
	for i, q := range o.queue {
		if q == p {
			o.queue = append(o.queue[:i], o.queue[i+1:]...)
			o.weight -= o.weigh(p)
			return
		}
	}
}

func (o *Owner[T]) forget(p T, e *entry) {
	o.mu.Lock()
	if o.entries[p] == e {
		delete(o.entries, p)
	}
	o.mu.Unlock()
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run is the owner's goroutine: a cycle whenever parts wait, Interval
// after the first of them arrived (or once Enough waits).
func (o *Owner[T]) run() {
	defer close(o.done)
	for {
		select {
		case <-o.arrived:
		case <-o.ctx.Done():
			return
		}
		if o.waiting() == 0 {
			continue
		}
		if o.cfg.Interval > 0 {
			t := time.NewTimer(o.cfg.Interval)
			select {
			case <-t.C:
			case <-o.full:
			case <-o.ctx.Done():
				t.Stop()
				return
			}
			t.Stop()
		}
		for parts := o.take(); len(parts) > 0; parts = o.take() {
			o.cycles.Add(1)
			errs := o.cfg.Commit(o.ctx, parts)
			o.finish(parts, errs)
			if o.ctx.Err() != nil {
				return
			}
			if o.cfg.Together == nil {
				break // what came meanwhile waits for the next interval
			}
		}
	}
}

func (o *Owner[T]) waiting() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue)
}

// take returns the waiting parts that go together in the next cycle,
// marked taken; the others stay.
func (o *Owner[T]) take() []T {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) == 0 {
		return nil
	}
	first := o.queue[0]
	var group, rest []T
	for _, p := range o.queue {
		if o.cfg.Together == nil || o.cfg.Together(first, p) {
			o.entries[p].taken = true
			o.weight -= o.weigh(p)
			group = append(group, p)
		} else {
			rest = append(rest, p)
		}
	}
	o.queue = rest
	// Drain a stale signal: the parts it told of are taken.
	select {
	case <-o.full:
	default:
	}
	return group
}

// finish hands each part its outcome.
func (o *Owner[T]) finish(parts []T, errs []error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, p := range parts {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		e := o.entries[p]
		if e == nil {
			continue
		}
		if e.abandoned {
			delete(o.entries, p)
			continue
		}
		e.done <- err
	}
}
