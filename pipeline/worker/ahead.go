package worker

import (
	"context"
	"errors"
	"time"

	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/sink"
)

// A batch may wait for the member's next commit cycle: with
// sinks.kafka.delivery: exactly_once its rows, dead letters and next
// offset go in the member's transaction (then the table's snapshot and the
// files' record); beside a table that is the last output, in the table's
// next snapshot (sinks.commit_interval). The cycle gathers the member's
// partitions. The partition does not wait with it: once the batch's files
// are written, the rest of its commit (commitAhead) goes on in a goroutine
// of its own while the worker reads, decodes and holds the next batch,
// within the memory budget, which the batch in the cycle keeps until it is
// committed.
//
// One batch is ahead at a time. The next one is cut no earlier than the
// batch ahead is committed (cutBatch joins it first): its cut mark, its
// files' record and its transaction's offset would otherwise reach the
// group or the files before the batch ahead's transaction or snapshot,
// and a stop between the two would start the partition past rows an
// output does not hold. What overlaps the cycle is reading, never committing.

// aheadBatch is a delivered batch whose commit runs while the worker
// reads on.
type aheadBatch struct {
	b    openBatch
	last int64
	// The rows' storage and their values', the batch's until it is
	// committed: the worker cuts its next rows from other storage.
	rows    func()
	scratch *decode.Scratch
	done    chan error
	err     error
	joined  bool               // err came from done
	cancel  context.CancelFunc // ends the commit: the worker ended on an error
}

// errRefusedAhead is the brokers refusing rows of a batch ahead for their
// size: they leave the batch and its files are written again, which is
// the worker's to do (join), not the cycle's goroutine's.
type errRefusedAhead struct{ err error }

func (e *errRefusedAhead) Error() string { return e.err.Error() }
func (e *errRefusedAhead) Unwrap() error { return e.err }

// handOff starts the commit of the delivered batch cut at last and opens
// the next batch.
func (w *Worker) handOff(ctx context.Context, last int64) {
	ctx, cancel := context.WithCancel(ctx)
	p := &aheadBatch{b: w.batch, last: last, rows: w.rows.handOver(), scratch: w.scratch, done: make(chan error, 1), cancel: cancel}
	w.scratch, w.spare = w.spare, nil
	w.batch = openBatch{first: last + 1, opened: time.Now()}
	w.ahead = p
	go func() {
		defer cancel()
		err := w.commitAhead(ctx, &p.b, last)
		if err == nil {
			w.aheadCommitted(p)
		}
		p.done <- err
	}()
}

// commitAhead is the rest of the commit protocol for a batch ahead: the
// table's snapshot and the files' record where deliver left them
// (phaseFilesOnly), then the commit of next (commitNext).
func (w *Worker) commitAhead(ctx context.Context, b *openBatch, last int64) error {
	if b.phase == phaseFilesOnly {
		sinks, _, err := w.withLayout(w.using)
		if err != nil {
			return err
		}
		// The table is the last sink: past it, only the files' record
		// is left (a retry after it failed).
		if b.wroteBy < len(sinks) {
			s := sinks[b.wroteBy]
			kind := SinkKind(s)
			if err := w.retrySink(ctx, "writing a batch", kind, func() error { return s.Write(ctx, w.sinkBatch(b, last)) }); err != nil {
				return err
			}
			w.timeFlush(kind, b.snapshotFrom)
			b.wroteBy++
		}
		if err := w.saveResume(ctx, b.first, last, false); err != nil {
			return err
		}
		b.reach(phaseDelivered)
		b.last = last
		sink.Failpoint(ctx, sink.FailDelivered)
	}
	return w.commitNext(ctx, b, last)
}

// aheadCommitted counts the batch ahead and gives its budget and storage
// back, at once: a worker waiting for budget to read does not wait for
// its own join.
func (w *Worker) aheadCommitted(p *aheadBatch) {
	w.batchCommitted(&p.b, p.last)
	p.rows()
	if p.scratch != nil {
		p.scratch.Release()
	}
}

// join waits for the batch ahead's commit. A commit the cycle could not
// finish is finished here, in the worker's goroutine, with ctx: always
// for rows the brokers refused, and for any failure when again (the
// worker's stop, with a context of its own, as flush after a failed
// commit). Otherwise the cycle's error is the worker's, and the batch
// stays ahead for the stop.
func (w *Worker) join(ctx context.Context, again bool) error {
	p := w.ahead
	if p == nil {
		return nil
	}
	if !p.joined {
		p.err, p.joined = <-p.done, true
		if p.err == nil {
			w.ahead, w.spare = nil, p.scratch
			return nil
		}
	}
	if !again && !errors.As(p.err, new(*errRefusedAhead)) {
		return p.err
	}
	// The batch is the open one again while it is finished, so a
	// refusal's handling (transactOnce: refuse, deliver) meets it where
	// it looks; the next batch waits aside.
	next := w.batch
	w.batch = p.b
	err := w.commitAhead(ctx, &w.batch, p.last)
	p.b, w.batch = w.batch, next
	if err != nil {
		p.err = err
		return err
	}
	w.aheadCommitted(p)
	w.ahead, w.spare = nil, p.scratch
	return nil
}

// dropAhead lets go of a batch ahead that was never committed (the worker
// ends on an error): its commit is ended (a commit retried through an
// outage would otherwise hold the worker's end, and the job's, until the
// job's context ends), then its budget and storage; the next owner reads
// it again from the last commit.
func (w *Worker) dropAhead() {
	p := w.ahead
	if p == nil {
		return
	}
	if !p.joined {
		p.cancel()
		p.err, p.joined = <-p.done, true
	}
	if p.err != nil {
		w.Budget.release(p.b.bytes)
		p.rows()
	}
	w.ahead = nil
}
