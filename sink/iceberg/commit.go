package iceberg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/cycle"
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

// pendingCommit is one batch waiting for the member's next commit: its
// data files sealed in the spool, stored by the cycle that commits it.
type pendingCommit struct {
	batch  batchRef
	sealed []sink.SealedFile
	gone   sync.Once
}

// remove removes the batch's sealed files from the spool, once.
func (p *pendingCommit) remove() { p.gone.Do(func() { sink.RemoveSealed(p.sealed) }) }

// commit waits until p's batch is in the table. The member's partitions
// commit together: the member's cycle (package cycle) waits
// sinks.commit_interval after a batch arrives and commits every batch
// then waiting in one snapshot. So a member makes a snapshot per commit,
// not per partition's batch, and its partitions never race each other for
// the branch head. A writer whose ctx ends while its batch is in a cycle
// lets it go: a retry reads the table, which tells whether it holds the
// batch.
func (t *Table) commit(ctx context.Context, p *pendingCommit) error {
	if len(p.sealed) == 0 {
		return nil // every row went to the dead letters
	}
	err := t.cycle.Submit(ctx, p)
	if errors.Is(err, cycle.ErrTaken) {
		t.cycle.Abandon(p)
		return ctx.Err()
	}
	return err
}

// commitGroup stores the group's data files, joined (one file per table
// partition, sink.Files.StoreJoined), and appends them in one snapshot
// whose summary records, per batch, its partition's first..last, and
// returns each batch's outcome. Each try reads the table afresh: a batch
// it holds now (a commit whose answer was lost, another member's, a
// zombie's) is not added again, and the files are joined again without
// it. A committed batch's sealed files leave the spool.
func (t *Table) commitGroup(ctx context.Context, all []*pendingCommit) []error {
	outcome := make(map[*pendingCommit]error, len(all))
	group := all
	var err error
	var files []iceberg.DataFile
	var filesOf []*pendingCommit // the batches files hold
	defer func() {
		for _, p := range all {
			if outcome[p] == nil {
				p.remove()
			}
		}
	}()
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
		group = t.dropHeld(tbl, group, outcome)
		if len(group) == 0 {
			break
		}
		if !slices.Equal(filesOf, group) {
			if files, err = t.storeFiles(ctx, tbl, group); err != nil {
				err = fmt.Errorf("iceberg: storing the data files of %d batches in table %s: %w", len(group), t.name, err)
				break
			}
			filesOf = slices.Clone(group)
		}
		if err = t.tryCommit(ctx, tbl, group, files); err == nil {
			t.maybeUpkeep(tbl, group)
			group = nil
			break
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		err = fmt.Errorf("iceberg: committing %d batches to table %s: %w", len(group), t.name, err)
	}
	for _, p := range group {
		outcome[p] = err
	}
	errs := make([]error, len(all))
	for i, p := range all {
		errs[i] = outcome[p]
	}
	return errs
}

// dropHeld notes the outcome of the batches tbl holds already (or cannot
// take) and returns the rest.
func (t *Table) dropHeld(tbl *table.Table, group []*pendingCommit, outcome map[*pendingCommit]error) []*pendingCommit {
	live := group[:0:0]
	for _, p := range group {
		held, err := t.holds(tbl, p.batch)
		switch {
		case err != nil:
			outcome[p] = err
		case held:
			t.log.Info("iceberg: the table holds this batch already (an earlier try or another member committed it); not committing it again",
				"topic", p.batch.Topic, "partition", p.batch.Partition, "first", p.batch.First, "last", p.batch.Last)
			outcome[p] = nil
		default:
			live = append(live, p)
		}
	}
	return live
}

// tryCommit is one try: the group's files and positions against the head
// tbl shows.
func (t *Table) tryCommit(ctx context.Context, tbl *table.Table, group []*pendingCommit, files []iceberg.DataFile) error {
	summary := iceberg.Properties{}
	for _, p := range group {
		b := p.batch
		summary[lastKey(b.Topic, b.Partition)] = lastValue{Last: b.Last, First: b.First, TopicID: b.TopicID}.String()
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

// storeFiles stores the sealed data files of the group's batches, those
// of one table partition joined into one file (up to max_file_bytes), and
// describes them for the table. A try whose commit fails leaves its
// joined files unreferenced: the table's upkeep removes orphans.
func (t *Table) storeFiles(ctx context.Context, tbl *table.Table, group []*pendingCommit) ([]iceberg.DataFile, error) {
	var sealed []sink.SealedFile
	for _, p := range group {
		sealed = append(sealed, p.sealed...)
	}
	written, err := t.files.StoreJoined(ctx, sealed, cycleFileName())
	if err != nil {
		return nil, err
	}
	return t.dataFiles(tbl, written)
}

// cycleFileName names a cycle's joined files: the time and a random part,
// so no two cycles of any member share a name.
func cycleFileName() string {
	var r [6]byte
	rand.Read(r[:])
	return "cycle-" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + hex.EncodeToString(r[:])
}
