package worker

import (
	"context"
	"time"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// Staging: when every sink is a sink.Stager, a worker hands its open
// batch's rows to the sinks as they pile up (the files sink encodes them
// into the batch's spool files, the Kafka sink produces them) and drops
// them, so a batch's size — and a file's — is not bounded by memory. The
// cut and the commit protocol are unchanged: the cut mark (first,
// "cut:<last>") is still committed before Write makes the batch durable
// under its names, and the same records staged in any chunks give the same
// files.

// stageChunk is how many bytes of decoded rows a worker holds before it
// stages them: few enough that the rows, their text and the storage the
// last chunk let go of are still in the core's cache when the sinks encode
// them (a core has 0.5-2 MiB of L2). The bench's job spends ~4 % less CPU
// per record with 256 KiB chunks than with 2 MiB ones (BENCHMARKS.md).
func (w *Worker) stageChunk() int64 { return 256 << 10 }

// holdChunk is how many bytes of rows that staging cannot give back (dead
// letters, sort runs, a batch whose sinks cannot stage) a worker holds
// before a spent budget cuts its batch: a small share of the budget, so
// many partitions fit, and not so little that a budget spent by fetches
// cuts a batch at every record.
func (w *Worker) holdChunk() int64 {
	return min(max(w.Budget.size/64, 256<<10), 16<<20)
}

// stagers returns the open batch's sinks (those of its layout) as
// Stagers, or nil unless every sink is one (then rows must stay until the
// cut). With exactly_once the Kafka output stages too: it holds the rows'
// records for the batch's transaction (sink.KafkaHeld).
func (w *Worker) stagers() ([]sink.Sink, []sink.Stager, error) {
	sinks, _, err := w.withLayout(w.batchLayout())
	if err != nil || len(sinks) == 0 {
		return nil, nil, err
	}
	st := make([]sink.Stager, 0, len(sinks))
	for _, s := range sinks {
		x, ok := s.(sink.Stager)
		if !ok {
			return nil, nil, nil
		}
		st = append(st, x)
	}
	return sinks, st, nil
}

// stageIfDue stages the held rows once they reach stageChunk.
func (w *Worker) stageIfDue(ctx context.Context) error {
	if w.batch.bytes-w.batch.deadBytes-w.batch.sinkBytes < w.stageChunk() {
		return nil
	}
	_, err := w.stage(ctx)
	return err
}

// stage hands the held rows to every sink and gives their budget back. It
// reports false when the sinks cannot stage (the rows stay).
//
// Rows no sink can ever take leave the batch here, before any sink has
// them, as dead letters with the sink's reason (refuse.go): first those the
// sinks' checks name, then any a Stage call refuses (the Parquet writer's),
// after which that sink is asked again without them. Each row's fate
// depends on the row alone, so a re-cut, staged in other chunks, gives the
// same files and the same dead letters.
func (w *Worker) stage(ctx context.Context) (bool, error) {
	sinks, stagers, err := w.stagers()
	if err != nil {
		return false, err
	}
	b := &w.batch
	if stagers == nil {
		return false, nil
	}
	if len(b.rows) > 0 {
		batch := &sink.Batch{Topic: w.Topic, Partition: w.Partition, First: b.first, Schema: w.Decoder.Schema(),
			Rows: b.rows, Sources: b.sources, Staged: b.staged, Prefix: w.Prefix, ValidText: true, KafkaFrom: w.kafkaFrom()}
		if err := w.checkRows(sinks, batch); err != nil {
			return true, err
		}
		// A stage cut short after some sinks took the rows (ctx ended
		// between two sinks) resumes with the next sink: those that have
		// them must not take them twice.
		for i := b.stagedBy; i < len(stagers) && len(batch.Rows) > 0; i++ {
			s := stagers[i]
			err := w.retrySink(ctx, "staging a batch", SinkKind(sinks[i]), func() error {
				full, err := s.Stage(ctx, batch)
				b.full = b.full || full
				return err
			})
			if refused := sink.AsRowErrors(err); refused != nil {
				if err := w.refuse(batch, refused); err != nil {
					return true, err
				}
				i-- // the same sink again, without them: it keeps the rows before them
				continue
			}
			if err != nil {
				return true, err
			}
			b.stagedBy = i + 1
		}
		b.stagedBy = 0
		b.staged += len(batch.Rows)
		clear(b.rows) // the rows' values can go now, not when the slice is reused
		clear(b.sources)
		b.rows, b.sources = b.rows[:0], b.sources[:0]
		w.rowsGone()
		w.Stats.StagedRows.Add(int64(len(batch.Rows)))
	}
	held := b.bytes - b.deadBytes - b.sinkBytes
	w.Budget.release(held)
	b.bytes -= held
	b.stagedBytes += held
	w.settleSinkBytes(stagers)
	return true, nil
}

// settleSinkBytes takes from the budget what the sinks now hold in memory
// of the batch's staged rows (a sorted file's run), or gives back what
// they let go. The bytes are in memory already, so they are taken past
// the size if they must be: the next reservation waits for them, and
// makeRoom cuts the batch to give them back.
func (w *Worker) settleSinkBytes(stagers []sink.Stager) {
	var n int64
	for _, s := range stagers {
		if h, ok := s.(sink.MemoryHolder); ok {
			n += h.HeldBytes(w.Topic, w.Partition, w.Prefix)
		}
	}
	b := &w.batch
	switch d := n - b.sinkBytes; {
	case d > 0:
		w.Budget.force(d)
	case d < 0:
		w.Budget.release(-d)
	}
	b.bytes += n - b.sinkBytes
	b.sinkBytes = n
}

// discardStaged tells the sinks that the open batch is given up: its staged
// rows are read again by whoever takes the partition next.
func (w *Worker) discardStaged() {
	if w.batch.staged == 0 && w.batch.stagedBy == 0 {
		return
	}
	_, stagers, _ := w.stagers()
	for _, s := range stagers {
		s.Discard(w.Topic, w.Partition, w.Prefix)
	}
}

// reserveFetch takes the next fetch's bytes from the budget before the
// fetch, waiting while the budget is spent: this is where a member pauses.
// The reservation is kafka.fetch.max_bytes at first, then follows the
// last fetch (nextFetch), and the fetch asks for no more; settleFetch
// corrects it once the records are in. A partition that caught up stages
// its rows first once they hold Budget.idleChunk: its fetch is a long
// poll, and hundreds of partitions' rows held across theirs, each below a
// stage chunk, would hold the budget for nothing. Before it waits, the worker gives back what it can: its rows are staged, or,
// when the sinks cannot stage, its batch is cut.
func (w *Worker) reserveFetch(ctx context.Context) error {
	if w.FetchMax <= 0 {
		return nil
	}
	if w.fetchGuess <= 0 {
		w.fetchGuess = w.FetchMax
	}
	if w.caughtUp && w.batch.bytes-w.batch.deadBytes-w.batch.sinkBytes >= w.Budget.idleChunk() {
		if _, err := w.stage(ctx); err != nil {
			return err
		}
	}
	n := w.Budget.clamp(w.fetchGuess)
	switch {
	case w.Budget.tryAcquire(n):
	case w.cut >= 0:
		if err := w.recutReserve(ctx, n); err != nil {
			return err
		}
	default:
		got, err := w.makeRoom(ctx, n, false)
		if err != nil {
			return err
		}
		n = got
	}
	w.fetchHeld = n
	if r, ok := w.Reader.(fetchLimiter); ok {
		r.SetFetchMax(int(n))
	}
	return nil
}

// recutReserve takes n bytes for a re-cut, which never waits on the
// budget: it cannot end early, and waiting could be for ever (every
// partition's share held by re-cuts, or a budget lowered below the batch).
// It gives back what it can by staging, then takes the bytes past the
// budget if it must; they are bounded by the batch the old flush rule cut
// and show in logstore_recut_over_budget_bytes_total. Normal fetching waits
// for them to go back.
func (w *Worker) recutReserve(ctx context.Context, n int64) error {
	staged, err := w.stage(ctx)
	if err != nil {
		return err
	}
	if staged && w.Budget.tryAcquire(n) {
		return nil
	}
	w.Budget.force(n)
	w.Stats.RecutOverBudget.Add(n)
	return nil
}

// makeRoom takes n bytes from a spent budget. The worker first gives back
// what staging can: its rows. What staging cannot give back — the whole
// batch when the sinks cannot stage, its dead letters and the sinks' sort
// runs when they can — only
// this worker can release, so it cuts its batch early rather than wait
// while it holds them (waiting then was for ever: a partition flooded with
// malformed records stopped the member). Then it waits for the bytes,
// unless they are a record's that is already fetched: those it takes at
// once, past the size, and the next fetch waits for them instead; its dead
// letters are cut then only once they hold a hold chunk, so a budget that
// other partitions spent does not cut a batch at every malformed record.
// It returns the bytes it took: n, or for a fetch fetchFloor past a
// budget that is over its size, when the open batch holds less
// (Budget.acquireOrFloor: the excess is records already in memory,
// another partition's, and may take that partition's whole flood to
// come back).
func (w *Worker) makeRoom(ctx context.Context, n int64, fetched bool) (int64, error) {
	staged, err := w.stage(ctx)
	if err != nil {
		return 0, err
	}
	if staged && w.Budget.tryAcquire(n) {
		return n, nil
	}
	b := &w.batch
	// What staging cannot give back: the dead letters and the sinks' sort
	// runs, or the whole batch when the sinks cannot stage (exactly_once). For a record already
	// fetched it is cut only once it holds a hold chunk (or half the
	// budget): a budget spent by fetches (records decompressed) or by
	// other partitions would cut a batch at every record.
	held, chunk := b.deadBytes+b.sinkBytes, w.holdChunk()
	if !staged {
		held, chunk = b.bytes, min(chunk, w.Budget.size/2)
	}
	hoarding := !fetched || held >= chunk
	if hoarding && w.cut < 0 && w.next > b.first && b.bytes > 0 {
		w.Stats.BudgetCuts.Add(1)
		// Said once per cut: a file smaller than the flush rule asks for
		// has this line as its reason.
		w.Log.Info("batch cut: the memory budget", "first", b.first, "last", w.next-1, "held_bytes", held,
			"budget_bytes", w.Budget.size, "staged", staged)
		if err := w.flush(ctx, w.next-1); err != nil {
			return 0, err
		}
	}
	// A fetched record's bytes are in memory already: waiting for them
	// could be for the worker's own fetch (with sinks that cannot stage,
	// a fetch bigger than the budget waited for ever).
	if fetched {
		if !w.Budget.tryAcquire(n) {
			w.Budget.force(n)
		}
		return n, nil
	}
	var floor int64
	if b.bytes < fetchFloor {
		floor = min(n, fetchFloor)
	}
	start := time.Now()
	got, floored, err := w.Budget.acquireOrFloor(ctx, n, floor)
	if err != nil {
		return 0, err
	}
	w.Stats.BackpressureNanos.Add(int64(time.Since(start)))
	if floored {
		w.floorHeld = true
		w.Stats.FloorFetches.Add(1)
	}
	return got, nil
}

// settleFetch notes when the first record arrived, and corrects the fetch's
// reservation to the bytes it returned (decompressed keys, values and
// headers), which stay in memory until every record of the fetch is decoded.
func (w *Worker) settleFetch(msgs []record.Record) {
	if len(msgs) > 0 && w.Stats.FirstRecord.Load() == 0 {
		w.Stats.FirstRecord.CompareAndSwap(0, time.Now().UnixNano())
	}
	if w.FetchMax <= 0 {
		return
	}
	var n int64
	for i := range msgs {
		m := &msgs[i]
		n += int64(len(m.Key) + len(m.Value))
		for _, h := range m.Headers {
			n += int64(len(h.Key) + len(h.Value))
		}
	}
	w.caughtUp = n < w.fetchHeld/2
	w.fetchGuess = nextFetch(n, w.FetchMax)
	switch {
	case n > w.fetchHeld:
		w.Budget.force(n - w.fetchHeld)
	case n < w.fetchHeld:
		w.Budget.release(w.fetchHeld - n)
	}
	w.fetchHeld = n
}

// releaseFetch gives the fetch's bytes back once its records are decoded.
func (w *Worker) releaseFetch() {
	w.Budget.release(w.fetchHeld)
	w.fetchHeld = 0
	if w.floorHeld {
		w.floorHeld = false
		w.Budget.floorBack()
	}
}
