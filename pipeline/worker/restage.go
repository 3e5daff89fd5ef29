package worker

import (
	"context"
	"errors"
	"time"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/sink"
)

// restaging runs loop, and reads the open batch again from its first
// offset whenever a sink lost what it had staged of it (sink.RestageError:
// the spool disk filled or failed, and the rows staged before are gone
// from memory too: the worker reuses their storage). The partition holds
// meanwhile, backing off as any retry does and counted in
// logstore_retries_total; the same records read again make the same
// files once the disk has room, and a batch whose cut mark was committed
// is cut there again (flush keeps the cut).
func (w *Worker) restaging(ctx context.Context) error {
	backoff, at := restageFirstBackoff, int64(-1)
	for {
		err := w.loop(ctx)
		var lost *sink.RestageError
		if !errors.As(err, &lost) {
			return err
		}
		if w.batch.first != at { // a batch committed since the last loss
			backoff, at = restageFirstBackoff, w.batch.first
		}
		w.Log.Warn("a sink lost the open batch from its spool; reading it again from its first offset", "first", w.batch.first, "cut", w.cut, "backoff", backoff, "err", err)
		w.retried(OpFiles)
		w.restage()
		if !clock.Sleep(ctx, backoff) {
			return w.stop()
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// restageFirstBackoff is the first wait before a lost batch is read again,
// as for any retry; a disk that stays full doubles it up to 30 s.
const restageFirstBackoff = 250 * time.Millisecond

// restage gives the open batch up and goes back to its first offset: the
// sinks drop what they staged, its rows and dead letters go (they are made
// again from the records), and its budget is given back.
func (w *Worker) restage() {
	b := &w.batch
	_, stagers, _ := w.stagers()
	for _, s := range stagers {
		s.Discard(w.Topic, w.Partition, w.Prefix)
	}
	w.Budget.release(b.bytes)
	w.releaseFetch()
	*b = openBatch{first: b.first, opened: b.opened}
	w.rowsGone()
	w.next = b.first
	w.Reader.SetOffset(b.first)
}
