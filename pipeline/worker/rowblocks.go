package worker

import (
	"sync"

	"github.com/logstore/logstore/sink"
)

// rowsGone is called when the batch lets go of its rows (staged into every
// sink, or the batch is over): their storage and their values' storage are
// used again for the next rows.
func (w *Worker) rowsGone() {
	w.rows.release()
	if w.scratch != nil {
		w.scratch.Release()
	}
}

// blockRows is how many rows one block holds.
const blockRows = 256

// rowBlocks cuts a worker's rows from shared blocks of blockRows rows: one
// allocation per 256 rows instead of one per row. Once the batch lets go of
// its rows (staged into every sink, or the batch is over), release hands
// the blocks back to the worker's pool, and the next rows are cut from them
// instead of from new memory: at full speed a row's storage is most of
// what the decoder allocates, and the collector's work follows the bytes
// allocated. The pool is a sync.Pool, so blocks idle through two
// collections are freed: a worker keeps no more than it uses.
//
// The rule that makes it safe: nothing keeps a sink.Row, or a value taken
// from one, after the batch lets go of it. The sinks copy what they keep
// (the Parquet writer's values point at a string's text, which is not
// reused, never at the row or the value), dead letters are made of the
// record's bytes or of the row as JSON, and the filter and expressions
// read rows only while the decoder runs.
type rowBlocks struct {
	columns int
	cur     []any   // the block rows are cut from now
	next    int     // where the next row starts in cur
	used    [][]any // blocks all of whose rows are cut, held by the batch
	pool    sync.Pool
}

// row is storage for the next row of columns values; it becomes the
// batch's with keep.
func (r *rowBlocks) row(columns int) sink.Row {
	if columns != r.columns {
		r.columns, r.cur, r.next = columns, nil, 0 // blocks of the old size are dropped
	}
	if r.next+r.columns > len(r.cur) {
		if r.cur != nil {
			r.used = append(r.used, r.cur)
		}
		if b, ok := r.pool.Get().(*[]any); ok && len(*b) == blockRows*r.columns {
			r.cur = *b
		} else {
			r.cur = make([]any, blockRows*r.columns)
		}
		r.next = 0
	}
	return r.cur[r.next : r.next+r.columns : r.next+r.columns]
}

// keep gives the row last returned to the batch.
func (r *rowBlocks) keep() { r.next += r.columns }

// handOver gives the rows cut so far to a batch that outlives this use of
// the blocks (a batch ahead, ahead.go): the next rows are cut from other
// blocks, and give hands these back to the pool once that batch lets go
// of its rows. give may run on another goroutine.
func (r *rowBlocks) handOver() (give func()) {
	blocks := r.used
	if r.cur != nil {
		blocks = append(blocks, r.cur)
	}
	r.used, r.cur, r.next = nil, nil, 0
	pool := &r.pool
	return func() {
		for _, b := range blocks {
			clear(b)
			pool.Put(&b)
		}
	}
}

// release takes every row back: the batch holds none of them any more.
// Values are cleared so a pooled block keeps nothing alive.
func (r *rowBlocks) release() {
	for _, b := range r.used {
		clear(b)
		r.pool.Put(&b)
	}
	clear(r.used)
	r.used = r.used[:0]
	clear(r.cur) // with the row a failed or filtered record left after next
	r.next = 0
}
