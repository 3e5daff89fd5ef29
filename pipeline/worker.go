package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// partitionReader is what a worker needs from its reader; PartitionReader
// (fetch from the nearest replica) is the one the job uses.
type partitionReader interface {
	SetOffset(offset int64)
	// Offset is the next offset to read: past the last record returned, and
	// past control batches and aborted records that were skipped.
	Offset() int64
	Fetch(ctx context.Context) ([]record.Record, int64, error)
	Close() error
}

// worker runs the commit protocol (see the package doc) for one partition.
type worker struct {
	topic        string
	partition    int
	reader       partitionReader
	decoder      *decode.Decoder
	commit       committer
	sinks        []sink.Sink
	dead         []deadLetterWriter
	onError      string // dead_letter, skip or fail
	onOutOfRange string // on_offset_out_of_range: fail, earliest, latest
	limits       BatchConfig
	budget       *budget
	limiter      *rate.Limiter // nil: unlimited
	stats        *Stats
	prefix       string // object-name prefix (replays)
	target       int64  // stop once the next offset reaches it; -1 streams on
	originals    bool   // keep each row's source key and value (sinks.kafka.value: original)
	columns      int    // output columns, for the memory estimate
	flushWait    time.Duration
	log          *slog.Logger
	metrics      *Metrics        // nil in tests: nothing recorded
	progress     *partitionStats // nil in tests
	fetchMax     int64           // kafka.fetch.max_bytes: the first fetch's reservation; 0 reserves per record only

	fetchGuess int64 // the next fetch's reservation: the last fetch's bytes
	fetchHeld  int64 // the budget the current fetch holds

	batch   openBatch
	next    int64 // the next offset to take
	cut     int64 // a pending re-cut b, or -1
	reached bool  // the target was reached and committed
	slab    []any // storage for the next rows
}

// openBatch is the records read since the last cut.
type openBatch struct {
	first   int64
	rows    []sink.Row
	sources []sink.Source
	dead    []RejectedRecord
	bytes   int64 // the budget held for rows not yet staged and for dead letters
	opened  time.Time

	deadBytes   int64 // of bytes, held for dead letters
	staged      int   // rows handed to the sinks before the cut (stage.go)
	stagedBytes int64 // their estimate, for max_bytes
	full        bool  // a sink said the batch reached its target size
}

// errFatal marks an error that must stop the whole job (on_error: fail,
// lost data with on_offset_out_of_range: fail).
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }
func (e errFatal) Unwrap() error { return e.err }

// run reads the partition from pos until ctx ends or, with a target, until
// the target is reached and committed (then reached is set). When ctx ends —
// the generation or the job is over — it flushes what it holds (within
// flushWait) so the next owner starts where this one stopped; a flush that
// ctx cut short leaves its mark, and the next owner re-cuts the same batch.
func (w *worker) run(ctx context.Context, pos position) error {
	w.next, w.cut = pos.Offset, pos.Cut
	if w.cut >= 0 && w.cut < w.next {
		w.cut = -1 // a stale mark: the batch was committed after all
	}
	if w.cut >= 0 {
		w.log.Info("re-cutting a batch that was marked but not confirmed", "from", w.next, "cut", w.cut)
	}
	w.reader.SetOffset(w.next)
	w.batch = openBatch{first: w.next, opened: time.Now()}
	defer func() {
		w.budget.release(w.batch.bytes)
		w.releaseFetch()
		w.discardStaged()
	}()
	err := w.loop(ctx)
	if err != nil && ctx.Err() != nil && !errors.As(err, new(errFatal)) {
		return w.stop()
	}
	return err
}

func (w *worker) loop(ctx context.Context) error {
	for {
		if w.target >= 0 && w.next >= w.target && w.cut < 0 {
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
		msgs, high, err := w.reader.Fetch(ctx)
		if ctx.Err() != nil {
			return w.stop()
		}
		w.settleFetch(msgs)
		if err != nil {
			var rangeErr *fetch.OffsetOutOfRangeError
			if !errors.As(err, &rangeErr) {
				w.log.Warn("fetch failed; retrying", "err", err)
				w.metrics.retried(opFetch)
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
			sink.Failpoint(sink.FailFetched)
		}
		if err := w.wait(ctx, len(msgs)); err != nil {
			return w.stop()
		}
		ended := false
		for i := range msgs {
			m := &msgs[i]
			if m.Offset < w.next {
				continue // a retried fetch may return records already taken
			}
			if w.target >= 0 && m.Offset >= w.target {
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
			if err := w.stageIfDue(ctx); err != nil {
				return err
			}
			w.next = m.Offset + 1
			if w.cut < 0 && w.full() {
				if err := w.flush(ctx, w.next-1); err != nil {
					return err
				}
			}
		}
		if ended {
			w.next = w.target
		} else {
			w.next = max(w.next, w.reader.Offset())
		}
		w.progress.setLag(high, w.next)
		if w.next > w.batch.first {
			w.progress.taken(time.Now())
		}
		switch {
		case w.cut >= 0 && w.next > w.cut:
			if err := w.flushCut(ctx); err != nil {
				return err
			}
		case w.cut < 0 && w.next > w.batch.first && (w.full() || time.Since(w.batch.opened) >= w.limits.MaxAge):
			if err := w.flush(ctx, w.next-1); err != nil {
				return err
			}
		}
	}
}

// flushCut re-cuts the pending batch exactly where the mark says.
func (w *worker) flushCut(ctx context.Context) error {
	if err := w.flush(ctx, w.cut); err != nil {
		return err
	}
	w.cut = -1
	return nil
}

// stop is the end of a generation or of the job: flush what is held, unless
// a re-cut is pending (then the mark stays and the next owner re-cuts).
func (w *worker) stop() error {
	if w.cut >= 0 || w.next <= w.batch.first {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.flushWait)
	defer cancel()
	err := w.flush(ctx, w.next-1)
	switch {
	case err == nil:
	case errors.Is(err, errFenced):
		w.log.Info("not flushing on stop: the group already moved on", "err", err)
	default:
		// Nothing is lost: the next owner reads again from the last commit
		// (and re-cuts the batch if its mark was committed).
		w.log.Warn("flushing on stop failed; the next owner re-reads the batch", "err", err)
	}
	return nil
}

// full is the size part of the flush rule, checked after every record so a
// batch never exceeds max_rows or max_bytes; the age part is checked once a
// fetch.
func (w *worker) full() bool {
	b := &w.batch
	return (w.limits.MaxRows > 0 && len(b.rows)+b.staged+len(b.dead) >= w.limits.MaxRows) || b.full ||
		(w.limits.MaxBytes > 0 && b.bytes+b.stagedBytes >= w.limits.MaxBytes)
}

// reserve takes the record's bytes from the memory budget. When the budget is
// full, the worker stages its rows into the sinks (stage.go) and takes the
// bytes even past the budget: the record is already fetched, and the next
// fetch waits until the excess is back. When the sinks cannot stage, it cuts
// its own batch rather than wait for others that may be waiting too; it
// waits only with nothing to give back.
func (w *worker) reserve(ctx context.Context, m *record.Record) error {
	n := w.budget.clamp(w.recordCost(m))
	if w.budget.tryAcquire(n) {
		w.batch.bytes += n
		return nil
	}
	if err := w.makeRoom(ctx, n, true); err != nil {
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
func (w *worker) recordCost(m *record.Record) int64 {
	n := len(m.Value) + 48*w.columns + 96
	if w.originals {
		n += len(m.Key) + len(m.Value)
	}
	return int64(n)
}

// take decodes one record into the open batch, or makes it a dead letter.
func (w *worker) take(m *record.Record) error {
	w.stats.Records.Add(1)
	if len(w.slab) < w.columns {
		// Rows are cut from a shared block: one allocation per 256 rows
		// instead of one per row.
		w.slab = make([]any, 256*w.columns)
	}
	row, keep, err := w.decoder.Decode(m, w.slab[:w.columns:w.columns])
	b := &w.batch
	if err != nil {
		switch w.onError {
		case "fail":
			return errFatal{fmt.Errorf("%s/%d offset %d: %v (dead_letter.on_error is fail)", m.Topic, m.Partition, m.Offset, err)}
		case "skip":
			w.stats.Skipped.Add(1)
		default:
			b.dead = append(b.dead, RejectedRecord{Reason: err.Error(), Record: detach(m)})
			b.deadBytes += w.budget.clamp(w.recordCost(m))
		}
		return nil
	}
	if !keep {
		w.stats.Filtered.Add(1)
		return nil
	}
	b.rows = append(b.rows, row)
	w.slab = w.slab[w.columns:]
	src := sink.Source{Offset: m.Offset, Timestamp: m.Time}
	if w.originals {
		src.Key, src.Value = m.Key, m.Value
	}
	b.sources = append(b.sources, src)
	return nil
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
func (w *worker) flush(ctx context.Context, last int64) error {
	b := &w.batch
	if last < b.first {
		return nil
	}
	if len(b.rows) > 0 || b.staged > 0 || len(b.dead) > 0 {
		if err := w.commitRetrying(ctx, b.first, cutPrefix+strconv.FormatInt(last, 10)); err != nil {
			return err
		}
		sink.Failpoint(sink.FailMarked)
		if err := w.deliver(ctx, last); err != nil {
			return err
		}
		sink.Failpoint(sink.FailDelivered)
	}
	if err := w.commitRetrying(ctx, last+1, ""); err != nil {
		return err
	}
	w.progress.committed()
	w.stats.Batches.Add(1)
	w.stats.Rows.Add(int64(b.staged + len(b.rows)))
	w.stats.DeadLetters.Add(int64(len(b.dead)))
	w.log.Debug("batch committed", "first", b.first, "last", last, "rows", b.staged+len(b.rows), "dead_letters", len(b.dead))
	w.budget.release(b.bytes)
	*b = openBatch{first: last + 1, opened: time.Now()}
	return nil
}

// commitRetrying commits until the coordinator takes it or refuses this
// member: a lost connection or a moving coordinator (a broker restart —
// kafka-go looks the coordinator up afresh for every commit) is waited out,
// a fence is final.
func (w *worker) commitRetrying(ctx context.Context, offset int64, metadata string) error {
	step := stepNext
	if metadata != "" {
		step = stepCut
	}
	defer w.metrics.timeCommit(step, time.Now())
	return retry(ctx, w.log, "committing offset "+strconv.FormatInt(offset, 10), w.metrics.retrier(opCommit), func() error {
		return w.commit.commit(ctx, w.topic, w.partition, offset, metadata)
	})
}

// deliver hands the batch to every sink and the dead letters to every
// dead-letter writer, retrying each until it succeeds or ctx ends: a sink
// outage holds the partition (and, through the budget, the fetching) instead
// of dropping or skipping a batch.
func (w *worker) deliver(ctx context.Context, last int64) error {
	b := &w.batch
	batch := &sink.Batch{Topic: w.topic, Partition: w.partition, First: b.first, Last: last, Schema: w.decoder.Schema(), Rows: b.rows, Sources: b.sources, Staged: b.staged, Prefix: w.prefix}
	for _, s := range w.sinks {
		if len(batch.Rows) == 0 && b.staged == 0 {
			break
		}
		kind, start := sinkKind(s), time.Now()
		if err := retry(ctx, w.log, "writing a batch", w.metrics.retrier(kind), func() error { return s.Write(ctx, batch) }); err != nil {
			return err
		}
		w.metrics.timeFlush(kind, start)
	}
	for _, d := range w.dead {
		if len(b.dead) == 0 {
			break
		}
		if err := retry(ctx, w.log, "writing dead letters", w.metrics.retrier(opDeadLetter), func() error {
			return d.writeDeadLetters(ctx, &deadBatch{Topic: w.topic, Partition: w.partition, First: b.first, Last: last, Prefix: w.prefix, Letters: b.dead})
		}); err != nil {
			return err
		}
	}
	return nil
}

// outOfRange applies `kafka.on_offset_out_of_range` once the reader has
// confirmed with the leader that next is gone (or not there yet).
func (w *worker) outOfRange(ctx context.Context, rangeErr *fetch.OffsetOutOfRangeError) error {
	next := w.next
	if next > w.batch.first {
		if err := w.flush(ctx, next-1); err != nil {
			return err
		}
	}
	to := rangeErr.LogStart
	if w.onOutOfRange == "latest" || next > rangeErr.LogEnd {
		to = rangeErr.LogEnd
	}
	lost := max(0, to-next)
	if w.onOutOfRange == "fail" && rangeErr.Truncated {
		return errFatal{fmt.Errorf("%s/%d: %w; the records from %d to %d were written out but are no longer in Kafka; "+
			"set kafka.on_offset_out_of_range: earliest to continue from %d, the new leader's records", w.topic, w.partition, rangeErr, rangeErr.LogEnd, next-1, rangeErr.LogEnd)}
	}
	if w.onOutOfRange == "fail" && next < rangeErr.LogStart {
		return errFatal{fmt.Errorf("%s/%d: offset %d is gone (the log now starts at %d): retention deleted %d records before they were read; "+
			"set kafka.on_offset_out_of_range: earliest to continue from %d", w.topic, w.partition, next, rangeErr.LogStart, rangeErr.LogStart-next, rangeErr.LogStart)}
	}
	w.stats.LostRecords.Add(lost)
	w.log.Warn("offset out of range; moving on", "offset", next, "log_start", rangeErr.LogStart, "log_end", rangeErr.LogEnd, "to", to, "lost_records", lost, "policy", w.onOutOfRange)
	w.reader.SetOffset(to)
	w.batch.first, w.next, w.cut = to, to, -1
	return nil
}

// wait applies max_records_per_second.
func (w *worker) wait(ctx context.Context, n int) error {
	if w.limiter == nil {
		return nil
	}
	for n > 0 {
		k := min(n, w.limiter.Burst())
		if err := w.limiter.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// retry calls f with capped exponential backoff until it succeeds, ctx ends,
// or the error is one retrying cannot fix; onRetry counts each new attempt.
func retry(ctx context.Context, log *slog.Logger, what string, onRetry func(), f func() error) error {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || errors.Is(err, errFenced) || errors.As(err, new(errFatal)) {
			return err
		}
		log.Warn(what+" failed; retrying", "attempt", attempt, "backoff", backoff, "err", err)
		onRetry()
		if !clock.Sleep(ctx, backoff) {
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
