package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/logstore/logstore/sink"
)

// upkeepKey is the table property saying when the table's upkeep last
// ran (RFC 3339): whichever member (or CronJob) ran it, the next is due an
// interval later.
const upkeepKey = "logstore.upkeep.last"

// UpkeepResult is what one upkeep did.
type UpkeepResult struct {
	SnapshotsBefore, SnapshotsAfter int
	Orphans                         int
	OrphanBytes                     int64
}

// upkeepAttempts bounds the expiry's tries against the job's commits.
const upkeepAttempts = 5

// Upkeep expires the table's snapshots older than u.SnapshotMaxAge (the
// newest u.RetainLast kept; iceberg-go deletes the files only they
// referenced), then deletes the files below the table's location that no
// snapshot references and older than u.OrphanMinAge. The positions live
// on as table properties, so expiry never makes a batch look unwritten.
func Upkeep(ctx context.Context, cat catalog.Catalog, name string, u sink.TableUpkeep, log *slog.Logger) (UpkeepResult, error) {
	var res UpkeepResult
	var tbl *table.Table
	var err error
	for attempt := 1; ; attempt++ {
		if tbl, err = cat.LoadTable(ctx, Ident(name)); err != nil {
			return res, fmt.Errorf("iceberg: loading table %s: %w", name, err)
		}
		res.SnapshotsBefore = len(tbl.Metadata().Snapshots())
		txn := tbl.NewTransaction()
		if err = txn.ExpireSnapshots(table.WithOlderThan(u.SnapshotMaxAge), table.WithRetainLast(u.RetainLast)); err == nil {
			if err = txn.SetProperties(iceberg.Properties{upkeepKey: time.Now().UTC().Format(time.RFC3339)}); err == nil {
				var after *table.Table
				if after, err = txn.Commit(ctx); err == nil {
					tbl = after
					break
				}
			}
		}
		if attempt == upkeepAttempts || ctx.Err() != nil || !errors.Is(err, table.ErrCommitFailed) {
			return res, fmt.Errorf("iceberg: table %s: expiring snapshots: %w", name, err)
		}
		log.Debug("iceberg: upkeep's expiry met a commit; reading the table again", "table", name, "attempt", attempt)
	}
	res.SnapshotsAfter = len(tbl.Metadata().Snapshots())
	if u.OrphanMinAge != nil && *u.OrphanMinAge > 0 {
		o, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(*u.OrphanMinAge))
		if err != nil {
			return res, fmt.Errorf("iceberg: table %s: removing orphan files: %w", name, err)
		}
		res.Orphans, res.OrphanBytes = len(o.DeletedFiles), o.TotalSizeBytes
	}
	return res, nil
}

// upkeepTurn says the member that commits group does the table's upkeep
// now: it is due (an interval since the last, or since the oldest
// snapshot when none ran yet), and group holds the table's lowest source
// partition (by topic, then partition). Exactly one member commits that
// partition at a time, as Kafka assigns it, so one member does the upkeep
// and the others skip it, with no lease to take: a lease in the table's
// properties could not be compare-and-set, since Iceberg's commit
// requirements do not cover properties (a REST catalog applies two
// racing property changes both). A duplicate in a rebalance's overlap is
// harmless: both expiries commit against the branch head, and deleting an
// orphan twice deletes it once.
func upkeepTurn(tbl *table.Table, group []*pendingCommit, every time.Duration, now time.Time) bool {
	if every <= 0 || len(group) == 0 {
		return false
	}
	last, err := time.Parse(time.RFC3339, tbl.Properties()[upkeepKey])
	if err != nil {
		snaps := tbl.Metadata().Snapshots()
		if len(snaps) == 0 {
			return false
		}
		last = time.UnixMilli(snaps[0].TimestampMs)
	}
	if now.Sub(last) < every {
		return false
	}
	lowest := ""
	consider := func(k string) {
		if _, _, ok := parseLastKey(k); ok && (lowest == "" || lessKey(k, lowest)) {
			lowest = k
		}
	}
	for k := range tbl.Properties() {
		consider(k)
	}
	for _, p := range group {
		consider(lastKey(p.batch.Topic, p.batch.Partition))
	}
	for _, p := range group {
		if lastKey(p.batch.Topic, p.batch.Partition) == lowest {
			return true
		}
	}
	return false
}

// lessKey orders position keys by topic, then partition as a number.
func lessKey(a, b string) bool {
	ta, pa, _ := parseLastKey(a)
	tb, pb, _ := parseLastKey(b)
	if ta != tb {
		return ta < tb
	}
	return pa < pb
}

// maybeUpkeep starts the upkeep beside the commits when it is this
// member's turn and none of its own is running.
func (t *Table) maybeUpkeep(tbl *table.Table, group []*pendingCommit) {
	if !upkeepTurn(tbl, group, t.upkeepEvery, time.Now()) || !t.upkeeping.CompareAndSwap(false, true) {
		return
	}
	t.upkeepWG.Go(func() {
		defer t.upkeeping.Store(false)
		start := time.Now()
		res, err := Upkeep(t.upkeepCtx, t.cat, t.name, t.upkeep, t.log)
		if err != nil {
			t.log.Warn("iceberg: table upkeep failed; the next interval tries again", "err", err)
			return
		}
		t.log.Info("iceberg: table upkeep", "snapshots_before", res.SnapshotsBefore, "snapshots_after", res.SnapshotsAfter,
			"orphan_files_deleted", res.Orphans, "orphan_bytes", res.OrphanBytes, "took", time.Since(start).Round(time.Millisecond))
	})
}
