package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/logstore/logstore/sink"
)

// commitAttempts bounds the tries of one commit against other writers'
// commits; past it Write fails and the worker retries the batch (with the
// same data files), backing off as for any sink.
const commitAttempts = 10

// batchRef is what a commit needs of a batch: the worker may reuse the
// batch itself once its Write returned.
type batchRef struct {
	Topic       string
	Partition   int
	First, Last int64
	TopicID     string
	Name        string
}

func refOf(b *sink.Batch) batchRef {
	return batchRef{Topic: b.Topic, Partition: b.Partition, First: b.First, Last: b.Last, TopicID: b.TopicID, Name: b.Name()}
}

// pendingCommit is one batch waiting for the member's next commit.
type pendingCommit struct {
	batch batchRef
	files []iceberg.DataFile
	done  chan error // its outcome; buffered
}

// commit waits until p's batch is in the table. The member's partitions
// commit together (a group commit): one of the waiting writers becomes the
// leader, waits sinks.iceberg.commit_interval for more, and commits every
// batch then waiting in one snapshot; the others wait for its outcome.
// So a member makes a snapshot per commit, not per partition's batch, and
// its partitions never race each other for the branch head.
func (t *Table) commit(ctx context.Context, p *pendingCommit) error {
	if len(p.files) == 0 {
		return nil // every row went to the dead letters
	}
	t.queueMu.Lock()
	t.queue = append(t.queue, p)
	t.queueMu.Unlock()
	for {
		// Its outcome first: select picks at random among ready cases, and
		// the leader, its group committed, finds the turn free as well;
		// taking it would sleep commit_interval for nothing.
		select {
		case err := <-p.done:
			return err
		default:
		}
		select {
		case err := <-p.done:
			return err
		case <-ctx.Done():
			t.queueMu.Lock()
			t.queue = slices.DeleteFunc(t.queue, func(q *pendingCommit) bool { return q == p })
			t.queueMu.Unlock()
			return ctx.Err() // a retry finds the table holds the batch, or commits it
		case t.leader <- struct{}{}:
			if t.interval > 0 {
				_ = sleep(ctx, t.interval)
			}
			t.queueMu.Lock()
			group := t.queue
			t.queue = nil
			t.queueMu.Unlock()
			t.commitGroup(ctx, group)
			<-t.leader
		}
	}
}

// commitGroup appends the group's files in one snapshot whose summary
// records, per batch, its partition's first..last, and tells each
// batch's writer the outcome. Each try reads the table afresh: a batch it
// holds now (a commit whose answer was lost, another member's, a
// zombie's) is not added again.
func (t *Table) commitGroup(ctx context.Context, group []*pendingCommit) {
	finish := func(p *pendingCommit, err error) { p.done <- err }
	var err error
	for attempt := 1; attempt <= commitAttempts && len(group) > 0; attempt++ {
		if attempt > 1 {
			t.retries.Add(1)
			t.log.Debug("iceberg: commit did not go through; reading the table again", "batches", len(group), "attempt", attempt, "err", err)
			if err = sleep(ctx, min(50*time.Millisecond<<(attempt-2), 2*time.Second)); err != nil {
				break
			}
		}
		var tbl *table.Table
		if tbl, err = t.cat.LoadTable(ctx, t.ident); err != nil {
			err = fmt.Errorf("iceberg: loading table %s: %w", t.name, err)
			break
		}
		group = t.dropHeld(tbl, group)
		if len(group) == 0 {
			return
		}
		if err = t.tryCommit(ctx, tbl, group); err == nil {
			t.maybeUpkeep(tbl, group)
			for _, p := range group {
				finish(p, nil)
			}
			return
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		err = fmt.Errorf("iceberg: committing %d batches to table %s: %w", len(group), t.name, err)
	}
	for _, p := range group {
		finish(p, err)
	}
}

// dropHeld answers the batches tbl holds already (or cannot take) and
// returns the rest.
func (t *Table) dropHeld(tbl *table.Table, group []*pendingCommit) []*pendingCommit {
	live := group[:0:0]
	for _, p := range group {
		held, err := t.holds(tbl, p.batch)
		switch {
		case err != nil:
			p.done <- err
		case held:
			t.log.Info("iceberg: the table holds this batch already (an earlier try or another member committed it); not committing it again",
				"topic", p.batch.Topic, "partition", p.batch.Partition, "first", p.batch.First, "last", p.batch.Last)
			p.done <- nil
		default:
			live = append(live, p)
		}
	}
	return live
}

// tryCommit is one try: the group's files and positions against the head
// tbl shows.
func (t *Table) tryCommit(ctx context.Context, tbl *table.Table, group []*pendingCommit) error {
	summary := iceberg.Properties{}
	var files []iceberg.DataFile
	for _, p := range group {
		b := p.batch
		summary[lastKey(b.Topic, b.Partition)] = lastValue{Last: b.Last, First: b.First, TopicID: b.TopicID}.String()
		files = append(files, p.files...)
	}
	txn := tbl.NewTransaction()
	// The head this try read: any commit since fails this one, which then
	// reads again rather than let iceberg-go replay it blindly.
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return err
	}
	props := iceberg.Properties{}
	if _, fast := headOf(tbl); !fast && tbl.CurrentSnapshot() != nil {
		// The properties may be ahead of the current snapshot (a rollback)
		// or the table older than the head: they are set afresh, every
		// partition, from the chain, so that from this commit on they are
		// the positions as of the head.
		for _, p := range Positions(tbl) {
			props[lastKey(p.Topic, p.Partition)] = lastValue{Last: p.Last, First: p.First, TopicID: p.TopicID, SnapshotID: p.SnapshotID, CommittedMs: p.Committed.UnixMilli()}.String()
		}
	}
	summary["logstore.batches"] = strconv.Itoa(len(group))
	// Whether the table holds a batch is dropHeld's check, by offsets;
	// iceberg-go's own would read every manifest of the table.
	if err := txn.AddDataFiles(ctx, files, summary, table.WithoutDuplicateCheck()); err != nil {
		return err
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return err
	}
	snap := staged.CurrentSnapshot()
	for _, p := range group {
		b := p.batch
		props[lastKey(b.Topic, b.Partition)] = lastValue{Last: b.Last, First: b.First, TopicID: b.TopicID, SnapshotID: snap.SnapshotID, CommittedMs: snap.TimestampMs}.String()
	}
	props[headKey] = strconv.FormatInt(snap.SnapshotID, 10)
	if err := txn.SetProperties(props); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
