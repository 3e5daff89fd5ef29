package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// TestRowBlocksHandOutEachRowOnce: rows kept are never handed out again
// until release; after it, the same storage serves the next rows.
func TestRowBlocksHandOutEachRowOnce(t *testing.T) {
	var r rowBlocks
	const n = 3*blockRows + 17
	rows := make([]sink.Row, n)
	for i := range rows {
		rows[i] = r.row(4)
		if len(rows[i]) != 4 || cap(rows[i]) != 4 {
			t.Fatalf("row %d: len %d cap %d, want 4 and 4", i, len(rows[i]), cap(rows[i]))
		}
		for j := range rows[i] {
			rows[i][j] = int64(i)
		}
		if i%5 == 0 { // a record that failed or was filtered: its storage is used again
			continue
		}
		r.keep()
	}
	for i, row := range rows {
		if i%5 == 0 {
			continue
		}
		for _, v := range row {
			if v != int64(i) {
				t.Fatalf("row %d holds %v: its storage was handed out again", i, v)
			}
		}
	}
	first := &r.row(4)[0]
	r.release()
	if again := &r.row(4)[0]; again != &r.cur[0] {
		t.Errorf("after release the next row is not cut from the start of a block")
	} else if first == again {
		for _, v := range r.cur {
			if v != nil {
				t.Fatalf("a released block still holds %v", v)
			}
		}
	}
}

// rowChecker is a sink that checks, whenever it is handed rows, that each
// row still holds the value decoded from its record (n == offset): a row
// whose storage was reused while the batch held it fails here.
type rowChecker struct {
	fakeStager
	t       *testing.T
	stager  bool
	checked int
}

func (c *rowChecker) check(b *sink.Batch) {
	for i, row := range b.Rows {
		if want := b.Sources[i].Offset; row[0] != want {
			c.t.Errorf("row of offset %d holds %v", want, row[0])
			return
		}
		c.checked++
	}
}

func (c *rowChecker) Stage(ctx context.Context, b *sink.Batch) (bool, error) {
	c.check(b)
	return c.fakeStager.Stage(ctx, b)
}

func (c *rowChecker) Write(ctx context.Context, b *sink.Batch) error {
	c.check(b)
	return c.fakeStager.Write(ctx, b)
}

// plainSink hides rowChecker's Stage: with it among the sinks, rows stay
// with the batch until the cut.
type plainSink struct{ c *rowChecker }

func (p plainSink) Write(ctx context.Context, b *sink.Batch) error { return p.c.Write(ctx, b) }
func (p plainSink) Close() error                                   { return nil }

// TestWorkerReusesRowsOnlyOnceLetGo: row storage goes back to the worker's
// pool when the batch lets go of its rows (staged into every sink, or the
// batch committed), never while a sink may still be handed them: with a
// sink that cannot stage, every row waits for the cut across several stage
// attempts and must arrive intact; with stagers only, every chunk must.
func TestWorkerReusesRowsOnlyOnceLetGo(t *testing.T) {
	for _, staging := range []bool{true, false} {
		t.Run(fmt.Sprintf("all sinks stage %v", staging), func(t *testing.T) {
			log := &fakeLog{values: logValues(60*blockRows, []int64{3, 700}, nil), perFetch: 100}
			w, _, _, _ := testWorker(t, log, 0, "dead_letter")
			// A stage is due every 256 KiB of rows (stageChunk):
			// thousands of rows, several times in the batch.
			w.Budget = NewBudget(16 << 20)
			if chunk := w.stageChunk() / w.recordCost(&record.Record{Value: log.values[1000]}); chunk*4 > int64(len(log.values)) {
				t.Fatalf("a stage every %d rows: too few for %d records", chunk, len(log.values))
			}
			a := &rowChecker{t: t, fakeStager: fakeStager{budget: w.Budget}}
			b := &rowChecker{t: t, fakeStager: fakeStager{budget: w.Budget}}
			w.Sinks = []sink.Sink{a, b}
			if !staging {
				w.Sinks[1] = plainSink{b}
			}
			if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
				t.Fatal(err)
			}
			want := len(log.values) - 2
			if a.checked != want || b.checked != want {
				t.Errorf("sinks checked %d and %d rows, want %d each", a.checked, b.checked, want)
			}
			if staging && len(a.staged) < 4 {
				t.Errorf("%d stages: the test needs rows staged in several chunks", len(a.staged))
			}
			if len(a.batches) != 1 {
				t.Errorf("batches %v: the test needs one batch", a.batches)
			}
		})
	}
}

// recyclingLog hands out each fetch's values from a buffer of its own and,
// when the worker gives a fetch back (Recycle), overwrites that buffer, as
// the fetch client reuses it: a row or dead letter that still pointed into
// it would read the overwritten bytes.
type recyclingLog struct {
	*fakeLog
	lent     [][]byte
	recycled int
}

func (l *recyclingLog) Fetch(ctx context.Context) ([]record.Record, int64, error) {
	msgs, high, err := l.fakeLog.Fetch(ctx)
	for i := range msgs {
		buf := append([]byte(nil), msgs[i].Value...)
		l.lent = append(l.lent, buf)
		msgs[i].Value = buf
	}
	return msgs, high, err
}

func (l *recyclingLog) Recycle() {
	for _, b := range l.lent {
		for i := range b {
			b[i] = 'X'
		}
	}
	l.lent = l.lent[:0]
	l.recycled++
}

// deadChecker keeps the dead letters' values as they are when written.
type deadChecker struct{ values []string }

func (d *deadChecker) writeDeadLetters(_ context.Context, b *deadBatch) error {
	for _, l := range b.Letters {
		d.values = append(d.values, string(l.Record.Value))
	}
	return nil
}

// TestWorkerRecyclesFetchesItNoLongerNeeds: once every record of a fetch
// is taken, the worker gives the fetch's bytes back, and the rows and dead
// letters it holds still read right after the bytes are overwritten; with
// sinks.kafka.value: original (rows keep their source records) it never
// gives them back.
func TestWorkerRecyclesFetchesItNoLongerNeeds(t *testing.T) {
	for _, originals := range []bool{false, true} {
		t.Run(fmt.Sprintf("originals %v", originals), func(t *testing.T) {
			log := &recyclingLog{fakeLog: &fakeLog{values: logValues(3000, []int64{5, 1500, 2999}, nil), perFetch: 100}}
			w, _, _, _ := testWorker(t, log.fakeLog, 1000, "dead_letter")
			w.Reader, w.Originals = log, originals
			w.Budget = NewBudget(16 << 20)
			s := &rowChecker{t: t, fakeStager: fakeStager{budget: w.Budget}}
			d := &deadChecker{}
			w.Sinks, w.Dead = []sink.Sink{s}, []DeadLetterWriter{d}
			if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
				t.Fatal(err)
			}
			if s.checked != 2997 {
				t.Errorf("%d rows checked, want 2997", s.checked)
			}
			if fmt.Sprint(d.values) != "[not json not json not json]" {
				t.Errorf("dead letters hold %q, want the records' values", d.values)
			}
			if want := !originals; (log.recycled > 0) != want {
				t.Errorf("%d fetches given back; want some: %v", log.recycled, want)
			}
		})
	}
}
