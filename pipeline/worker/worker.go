package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/sink"
)

// Reader is what a worker needs from its reader; fetch.PartitionReader
// (fetch from the nearest replica) is the one the job uses.
type Reader interface {
	SetOffset(offset int64)
	// Offset is the next offset to read: past the last record returned, and
	// past control batches and aborted records that were skipped.
	Offset() int64
	Fetch(ctx context.Context) ([]record.Record, int64, error)
	Close() error
}

// Worker runs the commit protocol (see the package doc) for one partition.
type Worker struct {
	Config

	fetchGuess int64 // the next fetch's reservation: the last fetch's bytes
	fetchHeld  int64 // the budget the current fetch holds
	caughtUp   bool  // the last fetch came back less than half full (reserveFetch)
	floorHeld  bool  // the fetch's reservation is the budget's floor (Budget.acquireOrFloor)

	batch   openBatch
	next    int64           // the next offset to take
	cut     int64           // a pending re-cut b, or -1
	reached bool            // the target was reached and committed
	rows    rowBlocks       // storage for the rows
	scratch *decode.Scratch // storage for their values; nil until the first record
	// cutLayout is the layout the pending cut was made with when it is not
	// the current one; using is the layout of the batch being written.
	cutLayout string
	using     string
	// other is the sinks writing under a layout other than the current one
	// (the pending cut's), kept so the rows staged into them are the ones
	// its Write finds.
	other *layoutSinks
	// ahead is the delivered batch whose commit runs while the worker
	// reads on (ahead.go); spare is the values' storage it gave back.
	ahead *aheadBatch
	spare *decode.Scratch
}

// openBatch is the records read since the last cut.
type openBatch struct {
	first   int64
	rows    []sink.Row
	sources []sink.Source
	dead    []RejectedRecord
	bytes   int64 // the budget held for rows not yet staged, dead letters and sinkBytes
	opened  time.Time

	deadBytes   int64 // of bytes, held for dead letters
	sinkBytes   int64 // of bytes, what the sinks hold in memory of the staged rows (sink.MemoryHolder)
	staged      int   // rows handed to the sinks before the cut (stage.go)
	stagedBytes int64 // their estimate, for max_bytes
	stagedBy    int   // how many sinks already took the rows being staged
	wroteBy     int   // how many sinks already wrote the batch being delivered
	deadBy      int   // how many dead-letter writers already wrote its dead letters
	phase       phase // where it is in its life (phase.go)
	// txn: exactly_once: its part in the member's transaction, kept while
	// a cycle holds it and its outcome is not known (sink.Kafka.InCycle).
	txn *sink.TxnPart
	// held: exactly_once: the records the Kafka output staged of it,
	// taken at its cut for its transaction (sink.Kafka.TakeHeld).
	held         *sink.KafkaHeld
	last         int64     // where it was cut, once delivered
	snapshotFrom time.Time // phaseFilesOnly: since when its data files are written
	// full: a sink said the batch reached its target size: a cue to cut
	// it, not a phase.
	full bool
}

// Config is what the job gives a partition's worker.
type Config struct {
	Topic     string
	Partition int
	Reader    Reader
	Decoder   *decode.Decoder
	Commit    Committer
	Sinks     []sink.Sink // in the order of their commit ways (sink.OrderByCommit)
	Dead      []DeadLetterWriter
	// OnError is dead_letter.on_error (dead_letter, skip or fail);
	// OnOutOfRange kafka.on_offset_out_of_range (fail, earliest, latest).
	OnError, OnOutOfRange string
	Limits                Limits
	Budget                *Budget       // the member's, shared by its workers
	Limiter               *rate.Limiter // nil: unlimited
	Stats                 *Stats
	Prefix                string        // object-name prefix (replays)
	Target                int64         // stop once the next offset reaches it; -1 streams on
	Originals             bool          // keep each row's source key and value (sinks.kafka.value: original)
	Columns               int           // output columns, for the memory estimate
	Layout                string        // the files sink's layout (sink.Files.Layout), "" without one
	TopicID               string        // Kafka's id of the topic (KIP-516), "" when the brokers keep none
	Resume                ResumeStore   // nil: the output keeps no resume records
	EOS                   *ExactlyOnce  // nil: the Kafka output is at least once
	InKafka               int64         // exactly_once: the Kafka output holds the partition's records before it
	Stride                int64         // a backfill's cut points; 0 otherwise
	FlushWait             time.Duration // run.shutdown_timeout: how long a stop may take to commit
	Log                   *slog.Logger
	Metrics               Metrics  // nil: nothing recorded
	Progress              Progress // nil: nothing followed
	FetchMax              int64    // kafka.fetch.max_bytes: the first fetch's reservation; 0 reserves per record only
	// Release is how the worker lets go of its partition when its
	// context ends (ReleaseWrite, ReleaseHandover, ReleaseLost); nil writes.
	Release *atomic.Int32
}

// New makes the worker of one partition; Run runs it.
func New(c Config) *Worker { return &Worker{Config: c} }

// Progress follows a partition for the job's metrics: how far behind its
// end it reads, since when it holds records not yet committed.
type Progress interface {
	SetLag(high, next int64)
	Taken(now time.Time)
	Committed()
}

// Reached says the worker stopped because its partition reached the
// target, and committed it.
func (w *Worker) Reached() bool { return w.reached }

// Close closes the worker's reader.
func (w *Worker) Close() error { return w.Reader.Close() }

// Limits bound a batch (the job's batch.max_rows, max_bytes, max_age):
// it is cut when it reaches one.
type Limits struct {
	MaxRows  int
	MaxBytes int64
	MaxAge   time.Duration
}

// FatalError marks an error that must stop the whole job (on_error: fail,
// lost data with on_offset_out_of_range: fail).
type FatalError struct{ Err error }

func (e FatalError) Error() string { return e.Err.Error() }
func (e FatalError) Unwrap() error { return e.Err }

// Run reads the partition from pos until ctx ends or, with a target, until
// the target is reached and committed (then reached is set). When ctx ends —
// the generation or the job is over — it flushes what it holds (within
// flushWait) so the next owner starts where this one stopped; a flush that
// ctx cut short leaves its mark, and the next owner re-cuts the same batch.
func (w *Worker) Run(ctx context.Context, pos position) error {
	w.next, w.cut = pos.Offset, pos.Cut // package start decided, and said why
	if w.cut >= 0 && pos.Layout != "" && pos.Layout != w.Layout {
		w.cutLayout = pos.Layout // the pending cut finishes with the layout it was cut with
	}
	if w.cut < 0 {
		w.cut = w.plannedCut(w.next)
	}
	w.Reader.SetOffset(w.next)
	w.batch = openBatch{first: w.next, opened: time.Now()}
	defer func() {
		w.dropAhead()
		w.Budget.release(w.batch.bytes)
		w.releaseFetch()
		w.discardStaged()
	}()
	var err error
	if w.Target >= 0 && w.next > w.Target {
		err = w.confirmPastTarget(ctx)
	}
	if err == nil {
		err = w.restaging(ctx)
	}
	if err != nil && ctx.Err() != nil && !errors.As(err, new(FatalError)) {
		return w.stop()
	}
	return err
}

func (w *Worker) loop(ctx context.Context) error {
	for {
		if w.Target >= 0 && w.next >= w.Target && w.cut < 0 {
			if err := w.flush(ctx, w.next-1); err != nil {
				return err
			}
			w.reached = true
			return nil
		}
		w.releaseFetch()
		if err := w.reserveFetch(ctx); err != nil {
			if ctx.Err() != nil {
				return w.stop()
			}
			return err
		}
		msgs, high, err := w.Reader.Fetch(ctx)
		if ctx.Err() != nil {
			return w.stop()
		}
		w.settleFetch(msgs)
		if err != nil {
			var rangeErr *fetch.OffsetOutOfRangeError
			if !errors.As(err, &rangeErr) {
				w.Log.Warn("fetch failed; retrying", "err", err)
				w.retried(OpFetch)
				if !clock.Sleep(ctx, time.Second) {
					return w.stop()
				}
				continue
			}
			if err := w.outOfRange(ctx, rangeErr); err != nil {
				return err
			}
			continue
		}
		if len(msgs) > 0 {
			sink.Failpoint(ctx, sink.FailFetched)
		}
		ended, paced := false, 0
		for i := range msgs {
			m := &msgs[i]
			if m.Offset < w.next {
				continue // a retried fetch may return records already taken
			}
			if i >= paced {
				// max_records_per_second, a chunk at a time: records are
				// taken (and batches cut) steadily, not a whole fetch late.
				n, err := w.wait(ctx, len(msgs)-i)
				if err != nil {
					return w.stop()
				}
				paced = i + n
				// A paced fetch takes long: max_age holds inside it too.
				if w.Limiter != nil && w.cut < 0 && w.next > w.batch.first && time.Since(w.batch.opened) >= w.Limits.MaxAge {
					if err := w.flushAhead(ctx, w.next-1); err != nil {
						return err
					}
				}
			}
			if w.Target >= 0 && m.Offset >= w.Target {
				ended = true // a replay's end, or the end seen at start: not one record more
				break
			}
			if w.cut >= 0 && m.Offset > w.cut {
				if err := w.flushCut(ctx); err != nil {
					return err
				}
			}
			if err := w.reserve(ctx, m); err != nil {
				return err
			}
			if err := w.take(m); err != nil {
				return err
			}
			// The record is in the batch now: a stop from here on (the
			// generation ending while rows are staged) flushes and commits
			// past it.
			w.next = m.Offset + 1
			if err := w.stageIfDue(ctx); err != nil {
				return err
			}
			if w.cut < 0 && w.full() {
				if err := w.flushAhead(ctx, w.next-1); err != nil {
					return err
				}
			}
		}
		w.recycle()
		if ended {
			w.next = w.Target
		} else {
			w.next = max(w.next, w.Reader.Offset())
		}
		if w.Progress != nil {
			w.Progress.SetLag(high, w.next)
		}
		if w.next > w.batch.first && w.Progress != nil {
			w.Progress.Taken(time.Now())
		}
		switch {
		case w.cut >= 0 && w.next > w.cut:
			if err := w.flushCut(ctx); err != nil {
				return err
			}
		case w.cut < 0 && w.next > w.batch.first && (w.full() || time.Since(w.batch.opened) >= w.Limits.MaxAge):
			if err := w.flushAhead(ctx, w.next-1); err != nil {
				return err
			}
		}
	}
}

// flushCut re-cuts the pending batch exactly where the mark says.
func (w *Worker) flushCut(ctx context.Context) error {
	if err := w.flush(ctx, w.cut); err != nil {
		return err
	}
	w.cut = w.plannedCut(w.cut + 1)
	return nil
}

// How a worker lets go of its partition (worker.release).
const (
	// ReleaseWrite cuts the open batch, writes and commits it: the job's
	// stop, and kafka.revoke: write.
	ReleaseWrite int32 = iota
	// ReleaseHandover drops the open batch: the partition moves and its
	// new owner reads the batch again from the last commit, so no file
	// smaller than the flush rule's is written (kafka.revoke: handover).
	ReleaseHandover
	// ReleaseLost writes and commits nothing: the group already gave the
	// partition to another member.
	ReleaseLost
)

// stop is the end of the worker's time with its partition: flush what is
// held, unless a re-cut is pending (then the mark stays and the next owner
// re-cuts), the partition was lost, or its open batch is handed over.
func (w *Worker) stop() error {
	if w.ahead != nil {
		if err := w.stopAhead(); err != nil {
			return nil // the next owner reads both batches again
		}
	}
	if w.cut >= 0 || w.next <= w.batch.first {
		return nil
	}
	switch w.releaseMode() {
	case ReleaseLost:
		w.Log.Info("partition lost to another member: not writing its open batch; the new owner reads from the last commit", "first", w.batch.first, "next", w.next)
		return nil
	case ReleaseHandover:
		// A batch older than half of max_age is written all the same, so a
		// partition that moves more often than max_age still commits.
		if !w.batch.delivered() && time.Since(w.batch.opened) < w.Limits.MaxAge/2 {
			w.Log.Info("partition moves: handing its open batch over; the new owner reads it again from the last commit", "first", w.batch.first, "next", w.next)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.FlushWait)
	defer cancel()
	err := w.flush(ctx, w.next-1)
	switch {
	case err == nil:
	case errors.Is(err, errFenced):
		w.Log.Info("not flushing on stop: the group already moved on", "err", err)
	default:
		// Nothing is lost: the next owner reads again from the last commit
		// (and re-cuts the batch if its mark was committed).
		w.Log.Warn("flushing on stop failed; the next owner re-reads the batch", "err", err)
	}
	return nil
}

// stopAhead finishes the batch ahead at the stop, as stop flushes a
// delivered batch: not when the partition is lost.
func (w *Worker) stopAhead() error {
	if w.releaseMode() == ReleaseLost {
		w.Log.Info("partition lost to another member: not committing its batch in the cycle; the new owner reads from the last commit", "first", w.ahead.b.first, "last", w.ahead.last)
		w.dropAhead()
		return errFenced
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.FlushWait)
	defer cancel()
	err := w.join(ctx, true)
	switch {
	case err == nil:
	case errors.Is(err, errFenced):
		w.Log.Info("not committing the batch in the cycle on stop: the group already moved on", "err", err)
	default:
		w.Log.Warn("committing the batch in the cycle on stop failed; the next owner re-reads it", "first", w.ahead.b.first, "last", w.ahead.last, "err", err)
	}
	return err
}

func (w *Worker) releaseMode() int32 {
	if w.Release == nil {
		return ReleaseWrite
	}
	return w.Release.Load()
}

// full is the size part of the flush rule, checked after every record so a
// batch never exceeds max_rows or max_bytes; the age part is checked once a
// fetch.
func (w *Worker) full() bool {
	b := &w.batch
	return (w.Limits.MaxRows > 0 && len(b.rows)+b.staged+len(b.dead) >= w.Limits.MaxRows) || b.full ||
		(w.Limits.MaxBytes > 0 && b.bytes-b.sinkBytes+b.stagedBytes >= w.Limits.MaxBytes)
}

// reserve takes the record's bytes from the memory budget. When the budget is
// full, the worker stages its rows into the sinks (stage.go) and takes the
// bytes even past the budget: the record is already fetched, and the next
// fetch waits until the excess is back. When the sinks cannot stage, it cuts
// its own batch rather than wait for others that may be waiting too; it
// waits only with nothing to give back. A re-cut never waits (recutReserve).
func (w *Worker) reserve(ctx context.Context, m *record.Record) error {
	n := w.Budget.clamp(w.recordCost(m))
	if w.Budget.tryAcquire(n) {
		w.batch.bytes += n
		return nil
	}
	if w.cut >= 0 {
		if err := w.recutReserve(ctx, n); err != nil {
			return err
		}
		w.batch.bytes += n
		return nil
	}
	if _, err := w.makeRoom(ctx, n, true); err != nil {
		return err
	}
	w.batch.bytes += n
	return nil
}

// recordCost approximates what a record holds while its batch is open: the
// decoded row (its strings, about the value's size, plus an interface word
// and a boxed value per column) and, with `value: original`, the raw key and
// value. On the demo's logs it is 1.2× the heap a row keeps (1,086 vs
// 889 bytes; TestRecordCostCoversTheHeap).
func (w *Worker) recordCost(m *record.Record) int64 {
	n := len(m.Value) + 48*w.Columns + 96
	if w.Originals {
		n += len(m.Key) + len(m.Value)
	}
	return int64(n)
}

// take decodes one record into the open batch, or makes it a dead letter.
func (w *Worker) take(m *record.Record) error {
	w.Stats.Records.Add(1)
	if w.scratch == nil {
		w.scratch = w.Decoder.NewScratch()
	}
	row, keep, err := w.scratch.Decode(m, w.rows.row(w.Columns))
	b := &w.batch
	if err != nil {
		dead := len(b.dead)
		if err := w.onBadRecord(m.Offset, err.Error(), func() RejectedRecord { return RejectedRecord{Reason: err.Error(), Record: detach(m)} }); err != nil {
			return err
		}
		if len(b.dead) > dead {
			b.deadBytes += w.Budget.clamp(w.recordCost(m))
		}
		return nil
	}
	if !keep {
		w.Stats.Filtered.Add(1)
		return nil
	}
	b.rows = append(b.rows, row)
	w.rows.keep()
	src := sink.Source{Offset: m.Offset, Timestamp: m.Time}
	if w.Originals {
		src.Key, src.Value = m.Key, m.Value
	}
	b.sources = append(b.sources, src)
	return nil
}

// recycle gives the fetch's bytes back to the reader once every record of
// it was taken: nothing the batch keeps points into them (take copies what
// rows and dead letters keep), unless the rows keep their source records
// (sinks.kafka.value: original).
func (w *Worker) recycle() {
	if r, ok := w.Reader.(interface{ Recycle() }); ok && !w.Originals {
		r.Recycle()
	}
}

// detach copies a record's bytes: the reader hands out keys and values cut
// from one buffer per fetch, and a dead letter kept with the batch must not
// hold a whole fetch in memory.
func detach(m *record.Record) record.Record {
	d := *m
	d.Key, d.Value = bytes.Clone(m.Key), bytes.Clone(m.Value)
	d.Headers = make([]record.Header, len(m.Headers))
	for i, h := range m.Headers {
		d.Headers[i] = record.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
	}
	return d
}

// flush cuts the open batch at last and runs the commit protocol.
func (w *Worker) flush(ctx context.Context, last int64) error {
	return w.cutBatch(ctx, last, false)
}

// flushAhead is flush where the partition reads on: with exactly_once the
// batch's commit may finish while the worker reads its next batch (ahead.go).
func (w *Worker) flushAhead(ctx context.Context, last int64) error {
	return w.cutBatch(ctx, last, true)
}

func (w *Worker) cutBatch(ctx context.Context, last int64, ahead bool) error {
	// Nothing of this batch reaches an output's record (its cut mark, the
	// files' record, the transaction's offset) before the batch ahead of
	// it is committed: the group's offset never passes what the outputs hold.
	if err := w.join(ctx, false); err != nil {
		return err
	}
	b := &w.batch
	if last < b.first {
		return nil
	}
	if b.delivered() {
		// A flush that wrote the batch and failed only at the commit of
		// next (the job stopping under it): the sinks hold it and may not
		// take it again (its spool is gone); commit next.
		last = b.last
	} else if w.using = w.batchLayout(); len(b.rows) > 0 || b.staged > 0 || len(b.dead) > 0 {
		if !w.catchingUp() {
			if err := w.commitRetrying(ctx, b.first, start.MarkOf(last, w.TopicID, w.using)); err != nil {
				return err
			}
		}
		sink.Failpoint(ctx, sink.FailMarked)
		if err := w.saveResume(ctx, b.first, last, true); err != nil {
			return err
		}
		// Where the partition reads on, a table that is the last output
		// gets its data files written here and its snapshot with the rest
		// of the batch ahead (commitAhead).
		split := ahead && w.EOS == nil && w.using == w.Layout && last != w.cut
		if err := w.deliver(ctx, last, split); err != nil {
			if errors.As(err, new(*sink.RestageError)) {
				w.cut = last // the mark names this cut: the batch read again ends here
			}
			return err
		}
		if b.phase == phaseFilesOnly {
			w.handOff(ctx, last)
			return nil
		}
		// With exactly_once the output holds the batch once its
		// transaction commits: commitNext records it then.
		if w.EOS == nil {
			if err := w.saveResume(ctx, b.first, last, false); err != nil {
				return err
			}
		}
		b.reach(phaseDelivered)
		b.last = last
		sink.Failpoint(ctx, sink.FailDelivered)
	}
	if ahead && w.EOS != nil && w.using == w.Layout && last != w.cut {
		w.handOff(ctx, last)
		return nil
	}
	if err := w.commitNext(ctx, b, last); err != nil {
		return err
	}
	w.batchCommitted(b, last)
	*b = openBatch{first: last + 1, opened: time.Now()}
	w.rowsGone()
	if last == w.cut {
		w.cutLayout = ""
	}
	return nil
}

// batchCommitted counts a batch whose commit is in and gives its budget
// back.
func (w *Worker) batchCommitted(b *openBatch, last int64) {
	if w.Progress != nil {
		w.Progress.Committed()
	}
	w.Stats.Batches.Add(1)
	w.Stats.Rows.Add(int64(b.staged + len(b.rows)))
	w.Stats.DeadLetters.Add(int64(len(b.dead)))
	w.Log.Debug("batch committed", "first", b.first, "last", last, "rows", b.staged+len(b.rows), "dead_letters", len(b.dead))
	w.Budget.release(b.bytes)
}

// commitRetrying commits until the coordinator takes it or refuses this
// member: a lost connection or a moving coordinator (a broker restart —
// kafka-go looks the coordinator up afresh for every commit) is waited out,
// a fence is final.
func (w *Worker) commitRetrying(ctx context.Context, offset int64, metadata string) error {
	step := StepNext
	if metadata != "" {
		step = StepCut
	}
	defer w.timeCommit(step, time.Now())
	return Retry(ctx, w.Log, "committing offset "+strconv.FormatInt(offset, 10), w.retrier(OpCommit), func() error {
		return w.Commit.Commit(ctx, w.Topic, w.Partition, offset, metadata)
	})
}

// deliver hands the batch to every sink and the dead letters to every
// dead-letter writer, retrying each until it succeeds or ctx ends: a sink
// outage holds the partition (and, through the budget, the fetching) instead
// of dropping or skipping a batch.
//
// With split, a table that is the last output (CommitsBySnapshot, no
// at-least-once Kafka after it) only gets its data files written
// (sink.TableSink.WriteFiles), and the batch is left in phaseFilesOnly:
// its snapshot is commitAhead's.
func (w *Worker) deliver(ctx context.Context, last int64, split bool) error {
	b := &w.batch
	sinks, dead, err := w.withLayout(w.using)
	if err != nil {
		return err
	}
	// With staging sinks the last rows are staged too, so every row meets
	// the refusal check in one place (stage), whatever the chunks were.
	if _, err := w.stage(ctx); err != nil {
		return err
	}
	batch := w.sinkBatch(b, last)
	// Rows a sink will never take leave the batch before anything is
	// written, so no sink holds a row another refused.
	if err := w.checkRows(sinks, batch); err != nil {
		return err
	}
	// A delivery cut short (the job stopping under it) resumes with the
	// first sink or dead-letter writer that does not have the batch yet:
	// one that wrote it may not take it twice (the files sink's spool is
	// gone once its files are stored).
	for i := b.wroteBy; i < len(sinks) && (len(batch.Rows) > 0 || b.staged > 0); i++ {
		s := sinks[i]
		if w.inTxn(s) {
			// Its rows go in the transaction with next (commitNext): the
			// batch takes what the sink staged of them.
			if k, ok := s.(*sink.Kafka); ok {
				if h := k.TakeHeld(w.Topic, w.Partition, w.Prefix); h != nil {
					b.held = h
					b.sinkBytes -= h.Bytes() // b.bytes keeps them until the batch is committed
				}
			}
			b.wroteBy = i + 1
			continue
		}
		if w.afterTxn(s) {
			// The table beside exactly-once Kafka: its snapshot comes
			// after the transaction (commitNext), its data files now, so
			// the partition may stage its next batch meanwhile.
			if t, ok := s.(sink.TableSink); ok {
				kind, start := SinkKind(s), time.Now()
				if err := w.retrySink(ctx, "writing a batch's data files", kind, func() error { _, err := t.WriteFiles(ctx, batch); return err }); err != nil {
					return err
				}
				w.timeFlush(kind, start)
			}
			b.wroteBy = i + 1
			continue
		}
		if sink.CommitWayOf(s) == sink.CommitsBySnapshot {
			// The dead letters go before the table's snapshot: without
			// files the snapshot is the batch's record, and a next run
			// after a stop between the two would start past the batch
			// and never write its dead letters to the topic.
			if err := w.writeDeadLetters(ctx, dead, last); err != nil {
				return err
			}
			// So do the rows staged into an at-least-once output after
			// it (Kafka sends them without waiting): the snapshot records
			// the batch, and a stop after it must not leave rows on
			// their way.
			if err := w.waitStaged(ctx, sinks[i+1:], batch); err != nil {
				return err
			}
		}
		kind, start := SinkKind(s), time.Now()
		write := func() error { return s.Write(ctx, batch) }
		t, isTable := s.(sink.TableSink)
		filesOnly, held := isTable && split && i == len(sinks)-1, false
		if filesOnly {
			write = func() (err error) { held, err = t.WriteFiles(ctx, batch); return err }
		}
		err := w.retrySink(ctx, "writing a batch", kind, write)
		if refused := sink.AsRowErrors(err); refused != nil {
			// A refusal no check foresaw (the Parquet writer's): write the
			// batch without those rows to every sink again, same names,
			// and the dead letters, which now hold those rows, again too.
			// (Staged batches meet it in stage instead.)
			if err := w.refuse(batch, refused); err != nil {
				return err
			}
			i, b.wroteBy, b.deadBy = -1, 0, 0
			continue
		}
		if err != nil {
			return err
		}
		if filesOnly && !held {
			b.reach(phaseFilesOnly)
			b.snapshotFrom = start
			break
		}
		b.wroteBy = i + 1
		w.timeFlush(kind, start)
	}
	return w.writeDeadLetters(ctx, dead, last)
}

// waitStaged waits, retrying as a write does, until each of sinks that
// sends staged rows without waiting (sinks.kafka at least once) has
// written every row of the batch.
func (w *Worker) waitStaged(ctx context.Context, sinks []sink.Sink, batch *sink.Batch) error {
	for _, s := range sinks {
		if ws, ok := s.(interface {
			WaitStaged(context.Context, *sink.Batch) error
		}); ok {
			if err := w.retrySink(ctx, "writing staged rows", SinkKind(s), func() error { return ws.WaitStaged(ctx, batch) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// sinkBatch is the open batch, cut at last, as the sinks take it.
func (w *Worker) sinkBatch(b *openBatch, last int64) *sink.Batch {
	return &sink.Batch{Topic: w.Topic, Partition: w.Partition, First: b.first, Last: last, Schema: w.Decoder.Schema(), Rows: b.rows,
		Sources: b.sources, Staged: b.staged, Prefix: w.Prefix, ValidText: true, TopicID: w.TopicID}
}

// writeDeadLetters writes the batch's dead letters with every dead-letter
// writer that has not yet, but those that write in the transaction.
func (w *Worker) writeDeadLetters(ctx context.Context, dead []DeadLetterWriter, last int64) error {
	b := &w.batch
	for ; b.deadBy < len(dead) && len(b.dead) > 0; b.deadBy++ {
		d := dead[b.deadBy]
		if w.deadInTxn(d) {
			continue
		}
		if err := w.retrySink(ctx, "writing dead letters", OpDeadLetter, func() error {
			return d.writeDeadLetters(ctx, &deadBatch{Topic: w.Topic, Partition: w.Partition, First: b.first, Last: last, Prefix: w.Prefix, Letters: b.dead})
		}); err != nil {
			return err
		}
	}
	return nil
}

// outOfRange applies `kafka.on_offset_out_of_range` once the reader has
// confirmed with the leader that next is gone (or not there yet). Before
// the log start, retention deleted records before they were read; past the
// log end, the topic was deleted and recreated, or an unclean leader
// election truncated it. A pending cut keeps its name either way: records
// already in its files are never written again under another.
func (w *Worker) outOfRange(ctx context.Context, oor *fetch.OffsetOutOfRangeError) error {
	next := w.next
	pastEnd := next > oor.LogEnd
	if w.OnOutOfRange == "fail" {
		if pastEnd && !oor.Truncated {
			return FatalError{fmt.Errorf("%s/%d: the committed offset %d is past the log end %d (the log holds [%d, %d)): the topic was deleted and recreated, "+
				"or an unclean leader election truncated it; set kafka.on_offset_out_of_range: earliest to read it from %d, or latest to continue from %d "+
				"(a recreated topic numbers its records from 0 again: move the old files or point sinks.files.url elsewhere first, or they are overwritten)",
				w.Topic, w.Partition, next, oor.LogEnd, oor.LogStart, oor.LogEnd, oor.LogStart, oor.LogEnd)}
		}
		if next < oor.LogStart {
			inCut := ""
			if w.cut >= 0 {
				inCut = fmt.Sprintf(" (in the pending cut %d-%d: earliest re-cuts what is left under the same name)", w.batch.first, w.cut)
			}
			return FatalError{fmt.Errorf("%s/%d: offset %d is gone (the log now starts at %d): retention deleted %d records before they were read%s; "+
				"set kafka.on_offset_out_of_range: earliest to continue from %d", w.Topic, w.Partition, next, oor.LogStart, oor.LogStart-next, inCut, oor.LogStart)}
		}
	}
	w.Stats.OffsetResets.Add(1)
	if w.cut >= 0 && !pastEnd && oor.LogStart <= w.cut {
		// Retention moved the start into a batch already cut: re-cut what
		// is left, under the mark's name, before any policy applies.
		lost := oor.LogStart - next
		w.Stats.LostRecords.Add(lost)
		w.Log.Warn("offset out of range inside a pending cut; re-cutting what is left under its name", "offset", next, "log_start", oor.LogStart,
			"first", w.batch.first, "cut", w.cut, "lost_records", lost)
		w.Reader.SetOffset(oor.LogStart)
		w.next = oor.LogStart
		return nil
	}
	if next > w.batch.first || w.cut >= 0 {
		last := next - 1
		if w.cut >= 0 {
			last = w.cut // the batch ends where its mark says, whatever is left of it
		}
		if err := w.flush(ctx, last); err != nil {
			return err
		}
		w.cut = -1
	}
	if w.OnOutOfRange == "fail" && oor.Truncated {
		return FatalError{fmt.Errorf("%s/%d: %w; the records from %d to %d were written out but are no longer in Kafka; "+
			"set kafka.on_offset_out_of_range: earliest to continue from %d, the new leader's records", w.Topic, w.Partition, oor, oor.LogEnd, next-1, oor.LogEnd)}
	}
	to := oor.LogStart // earliest, and a recreated log read from its start
	if w.OnOutOfRange == "latest" || oor.Truncated {
		to = oor.LogEnd // a truncated log goes on where the logs part
	}
	lost := max(0, to-next)
	if pastEnd && !oor.Truncated {
		lost = to - oor.LogStart // the new log's records skipped
	}
	w.Stats.LostRecords.Add(lost)
	w.Log.Warn("offset out of range; moving on", "offset", next, "log_start", oor.LogStart, "log_end", oor.LogEnd, "past_end", pastEnd,
		"to", to, "lost_records", lost, "policy", w.OnOutOfRange)
	w.Reader.SetOffset(to)
	w.batch.first, w.next = to, to
	w.cut = w.plannedCut(to)
	return nil
}

// confirmPastTarget asks the leader about a committed offset beyond the
// end a run with a target saw at start: the log was recreated or truncated
// (an out-of-range answer, handled like any), or it grew past the offset
// since, and then there is nothing to read up to the target.
func (w *Worker) confirmPastTarget(ctx context.Context) error {
	for {
		_, _, err := w.Reader.Fetch(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var oor *fetch.OffsetOutOfRangeError
		switch {
		case errors.As(err, &oor):
			return w.outOfRange(ctx, oor)
		case err == nil:
			w.Target = w.next
			w.Reader.SetOffset(w.next)
			return nil
		}
		w.Log.Warn("fetch failed; retrying", "err", err)
		if !clock.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// wait applies max_records_per_second to the next of n records: it waits
// for up to a burst of them and says how many may be taken.
func (w *Worker) wait(ctx context.Context, n int) (int, error) {
	if w.Limiter == nil {
		return n, nil
	}
	k := min(n, w.Limiter.Burst())
	return k, w.Limiter.WaitN(ctx, k)
}

// Retry calls f with capped exponential backoff until it succeeds, ctx ends,
// or the error is one retrying cannot fix (a batch lost from the spool is
// read again instead: restaging); onRetry counts each new attempt.
func Retry(ctx context.Context, log *slog.Logger, what string, onRetry func(), f func() error) error {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || errors.Is(err, errFenced) || errors.As(err, new(FatalError)) || sink.AsRowErrors(err) != nil || errors.As(err, new(*sink.RestageError)) {
			return err
		}
		if ctx.Err() != nil {
			// The run is stopping (a signal, the shutdown timeout): the call
			// ended with it, which is no failure to warn about or count.
			return fmt.Errorf("%s: %w", what, err)
		}
		log.Warn(what+" failed; retrying", "attempt", attempt, "backoff", backoff, "err", err)
		onRetry()
		if !clock.Sleep(ctx, backoff) {
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// plannedCut is where a backfill batch from offset from ends: the next
// offset k·stride-1, or the range's last offset; -1 outside backfills and
// at the range's end.
func (w *Worker) plannedCut(from int64) int64 {
	if w.Stride <= 0 || w.Target < 0 || from >= w.Target {
		return -1
	}
	return min((from/w.Stride+1)*w.Stride-1, w.Target-1)
}
