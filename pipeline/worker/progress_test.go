package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// fakeProgress is a Progress that keeps the partition's lag and since
// when records taken are pending (0: none).
type fakeProgress struct {
	lag, pendingSince atomic.Int64
}

func (p *fakeProgress) SetLag(high, next int64) {
	if high >= 0 {
		p.lag.Store(max(high-next, 0))
	}
}
func (p *fakeProgress) Taken(now time.Time) { p.pendingSince.CompareAndSwap(0, now.UnixNano()) }
func (p *fakeProgress) Committed()          { p.pendingSince.Store(0) }

// progressCommitter records the partition's lag and whether records were
// pending at each commit.
type progressCommitter struct {
	fakeCommitter
	p    *fakeProgress
	seen []progressAt
}

type progressAt struct {
	offset  int64
	lag     int64
	pending bool
}

func (c *progressCommitter) Commit(ctx context.Context, topic string, partition int, offset int64, meta string) error {
	c.seen = append(c.seen, progressAt{offset, c.p.lag.Load(), c.p.pendingSince.Load() != 0})
	return c.fakeCommitter.Commit(ctx, topic, partition, offset, meta)
}

// TestWorkerReportsLagAndPending: the lag follows the high watermark of each
// fetch, records count as pending from the fetch that took them until the
// commit of b+1.
func TestWorkerReportsLagAndPending(t *testing.T) {
	log := &fakeLog{values: logValues(10, nil, nil), perFetch: 4}
	w, _, _, _ := testWorker(t, log, 6, "dead_letter")
	c := &progressCommitter{p: &fakeProgress{}}
	w.Commit, w.Progress = c, c.p
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	want := []progressAt{
		{0, 6, true},  // cut at row 6, inside the second fetch: the first fetch left 6 of 10 unread
		{6, 6, true},  // b+1: pending until this commit returns
		{6, 0, true},  // the last batch, cut at the end: everything read
		{10, 0, true}, // and committed
	}
	if len(c.seen) != len(want) {
		t.Fatalf("commits saw %+v, want %+v", c.seen, want)
	}
	for i := range want {
		if c.seen[i] != want[i] {
			t.Errorf("commit %d saw %+v, want %+v", i, c.seen[i], want[i])
		}
	}
	if c.p.pendingSince.Load() != 0 || c.p.lag.Load() != 0 {
		t.Errorf("after the run: lag %d, pending since %d; want 0, 0", c.p.lag.Load(), c.p.pendingSince.Load())
	}
}
