package iceberg

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/logstore/logstore/sink"
)

// TestUpkeepExpiresSnapshotsAndRemovesOrphans: after the upkeep the table
// keeps the configured snapshots, an old unreferenced data file (a killed
// write's) is gone, a young one stays (it may be a commit under way), and
// every row and position is still there once.
func TestUpkeepExpiresSnapshotsAndRemovesOrphans(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.PartitionBy = nil
	tb := openTestTable(t, cfg)
	ctx := context.Background()
	const commits = 40
	for i := range int64(commits) {
		if err := tb.Write(ctx, testBatch(0, i*5, i*5+4)); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := strings.TrimPrefix(tableOf(t, tb).Location(), "file://") + "/data"
	oldOrphan, youngOrphan := filepath.Join(dataDir, "killed-write.parquet"), filepath.Join(dataDir, "under-way.parquet")
	for _, f := range []string{oldOrphan, youngOrphan} {
		if err := os.WriteFile(f, []byte("PAR1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(oldOrphan, time.Now().Add(-48*time.Hour), time.Now().Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	u := sink.TableUpkeep{SnapshotMaxAge: 0, RetainLast: 5, OrphanMinAge: new(24 * time.Hour)}
	res, err := Upkeep(ctx, tb.cat, cfg.Table, u, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if res.SnapshotsBefore != commits || res.SnapshotsAfter != 5 || res.Orphans != 1 {
		t.Errorf("upkeep: %+v, want %d snapshots to 5 and 1 orphan deleted", res, commits)
	}
	if _, err := os.Stat(oldOrphan); !os.IsNotExist(err) {
		t.Errorf("the 48h-old orphan is still there (%v)", err)
	}
	if _, err := os.Stat(youngOrphan); err != nil {
		t.Errorf("the young orphan was deleted: %v", err)
	}
	r := readTable(t, cfg)
	wantOnce(t, r, testBatch(0, 0, commits*5-1))
	if r.Snapshots != 5 || len(r.Files) != commits {
		t.Errorf("%d snapshots and %d data files, want 5 and %d", r.Snapshots, len(r.Files), commits)
	}
	if pos := positionsOf(t, tb); pos != "logs/0:199" {
		t.Errorf("positions %s", pos)
	}
	// The next batch after the expiry is new, the re-cut of the last is held.
	if err := tb.Write(ctx, testBatch(0, 195, 199)); err != nil {
		t.Fatal(err)
	}
	if n := totalRecords(t, tb); n != commits*5 {
		t.Errorf("after re-cutting the last batch: %d rows, want %d", n, commits*5)
	}
}

// TestJobUpkeepRunsOnOneMember: with the upkeep due, only the member that
// commits the table's lowest source partition does it; another member's
// commits skip it, and none runs before the interval since the last.
func TestJobUpkeepRunsOnOneMember(t *testing.T) {
	tbl := chainTable(t, 30, true) // positions of logs/0..11
	group := func(parts ...int) []*pendingCommit {
		var g []*pendingCommit
		for _, p := range parts {
			g = append(g, &pendingCommit{batch: batchRef{Topic: "logs", Partition: p}})
		}
		return g
	}
	later := time.Now().Add(2 * time.Hour) // the oldest snapshot is now: due in an hour
	for _, tc := range []struct {
		name  string
		group []*pendingCommit
		now   time.Time
		want  bool
	}{
		{"lowest partition's member", group(3, 0), later, true},
		{"another member", group(1, 2, 11), later, false},
		{"not due yet", group(0), time.Now().Add(30 * time.Minute), false},
		{"a new topic below", append(group(0), &pendingCommit{batch: batchRef{Topic: "audit", Partition: 4}}), later, true},
	} {
		if got := upkeepTurn(tbl, tc.group, time.Hour, tc.now); got != tc.want {
			t.Errorf("%s: upkeepTurn %v, want %v", tc.name, got, tc.want)
		}
	}
	// Once it ran, the next is an interval later whoever runs it.
	ran := chainTableWith(t, 30, iceberg.Properties{upkeepKey: later.Add(-10 * time.Minute).UTC().Format(time.RFC3339)})
	if upkeepTurn(ran, group(0), time.Hour, later) {
		t.Error("upkeep 10 minutes after the last one")
	}
}

// TestJobDoesItsUpkeep: a member whose table's upkeep is due expires the
// snapshots beside its commits, without a CronJob.
func TestJobDoesItsUpkeep(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.PartitionBy = nil
	cfg.Upkeep = sink.TableUpkeep{Interval: new(time.Minute), SnapshotMaxAge: 0, RetainLast: 3, OrphanMinAge: new(time.Duration(0))}
	tb := openTestTable(t, cfg)
	ctx := context.Background()
	for i := range int64(8) {
		if err := tb.Write(ctx, testBatch(0, i*5, i*5+4)); err != nil {
			t.Fatal(err)
		}
	}
	// Compressed time: the last upkeep was two minutes ago.
	txn := tableOf(t, tb).NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{upkeepKey: time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tb.Write(ctx, testBatch(0, 40, 44)); err != nil {
		t.Fatal(err)
	}
	tb.upkeepWG.Wait()
	tbl := tableOf(t, tb)
	if n := len(tbl.Metadata().Snapshots()); n != 3 {
		t.Errorf("%d snapshots after the job's upkeep, want 3", n)
	}
	if n := totalRecords(t, tb); n != 45 {
		t.Errorf("%d rows, want 45", n)
	}
}
