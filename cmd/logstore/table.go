//go:build !notable

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/iceberg"
)

func init() {
	register("table", "the Iceberg table of sinks.iceberg: per-partition positions, upkeep (snapshot expiry, orphan files), compaction", runTable)
}

// tableUsage names each subcommand with what it does; each one's own
// --help lists its flags.
const tableUsage = `positions|upkeep|expire|compact -c FILE [flags]

subcommands:
  positions  per source partition, the last offset the table holds and the
             snapshot that wrote it (where a restarted job resumes)
  upkeep     the job's upkeep once (sinks.iceberg.upkeep): expire old
             snapshots and delete orphan files, for a CronJob
  expire     expire old snapshots (--older-than, --retain-last) and delete
             the files no snapshot references any more
  compact    rewrite small data files into larger ones in one snapshot
             (--target-file-bytes, --dry-run)

Run 'logstore table <subcommand> --help' for its flags.`

func runTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fs := newFlags("table", tableUsage, stdout, stderr)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return usageError{"table needs a subcommand: positions, upkeep, expire or compact"}
	}
	switch args[0] {
	case "positions":
		return runTablePositions(ctx, args[1:], stdout, stderr)
	case "upkeep":
		return runTableUpkeep(ctx, args[1:], stdout, stderr)
	case "expire":
		return runTableExpire(ctx, args[1:], stdout, stderr)
	case "compact":
		return runTableCompact(ctx, args[1:], stdout, stderr)
	}
	return usageError{fmt.Sprintf("table: unknown subcommand %q; use positions, upkeep, expire or compact", args[0])}
}

// tableConfig is the sinks.iceberg of the job's config at path.
func tableConfig(path string) (*sink.IcebergConfig, error) {
	if path == "" {
		return nil, usageError{"table needs -c FILE, the job's config"}
	}
	cfg, err := pipeline.Load(path)
	if err != nil {
		return nil, err
	}
	if cfg.Sinks.Iceberg == nil {
		return nil, usageError{path + " has no sinks.iceberg"}
	}
	return cfg.Sinks.Iceberg, nil
}

// loadTable opens the table the config's sinks.iceberg names.
func loadTable(ctx context.Context, path string) (*table.Table, error) {
	tc, err := tableConfig(path)
	if err != nil {
		return nil, err
	}
	cat, err := iceberg.OpenCatalog(ctx, tc)
	if err != nil {
		return nil, err
	}
	tbl, err := cat.LoadTable(ctx, iceberg.Ident(tc.Table))
	if err != nil {
		return nil, fmt.Errorf("loading table %s: %w", tc.Table, err)
	}
	return tbl, nil
}

// runTableUpkeep is the job's upkeep (sinks.iceberg.upkeep) run once, for
// a CronJob beside a job whose upkeep.interval is 0s.
func runTableUpkeep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("table upkeep", "-c FILE [--snapshot-max-age D] [--retain-last N] [--orphan-min-age D]", stdout, stderr)
	path := fs.String("c", "", "the job's config (YAML) with sinks.iceberg")
	maxAge := fs.Duration("snapshot-max-age", -1, "expire snapshots older than this (default: sinks.iceberg.upkeep.snapshot_max_age)")
	retain := fs.Int("retain-last", 0, "keep at least this many of the newest snapshots (default: sinks.iceberg.upkeep.retain_last)")
	orphanAge := fs.Duration("orphan-min-age", -1, "delete unreferenced files older than this; 0s keeps them (default: sinks.iceberg.upkeep.orphan_min_age)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tc, err := tableConfig(*path)
	if err != nil {
		return err
	}
	u := tc.Upkeep
	if *maxAge >= 0 {
		u.SnapshotMaxAge = *maxAge
	}
	if *retain != 0 {
		if *retain < 1 {
			return usageError{"--retain-last must be at least 1"}
		}
		u.RetainLast = *retain
	}
	if *orphanAge >= 0 {
		if *orphanAge > 0 && *orphanAge < time.Hour {
			return usageError{"--orphan-min-age must be 0s (keep orphans) or 1h or more: a younger file may belong to a commit under way"}
		}
		u.OrphanMinAge = orphanAge
	}
	cat, err := iceberg.OpenCatalog(ctx, tc)
	if err != nil {
		return err
	}
	res, err := iceberg.Upkeep(ctx, cat, tc.Table, u, slog.Default())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "expired %d of %d snapshots (older than %s, the newest %d kept); deleted %d orphan files (%d bytes, older than %s)\n",
		res.SnapshotsBefore-res.SnapshotsAfter, res.SnapshotsBefore, u.SnapshotMaxAge, u.RetainLast, res.Orphans, res.OrphanBytes, *u.OrphanMinAge)
	return nil
}

func runTablePositions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("table positions", "-c FILE", stdout, stderr)
	path := fs.String("c", "", "the job's config (YAML) with sinks.iceberg")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tbl, err := loadTable(ctx, *path)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tLAST\tNEXT\tSNAPSHOT\tCOMMITTED")
	for _, p := range iceberg.Positions(tbl) {
		snap, at := "expired", "-"
		if p.SnapshotID != 0 {
			snap, at = fmt.Sprint(p.SnapshotID), p.Committed.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\n", p.Topic, p.Partition, p.Last, p.Last+1, snap, at)
	}
	return w.Flush()
}

func runTableExpire(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("table expire", "-c FILE [--older-than 120h] [--retain-last 1]", stdout, stderr)
	path := fs.String("c", "", "the job's config (YAML) with sinks.iceberg")
	olderThan := fs.Duration("older-than", 5*24*time.Hour, "expire snapshots older than this (Iceberg's default, 5 days)")
	retain := fs.Int("retain-last", 1, "keep at least this many of the newest snapshots")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *retain < 1 {
		return usageError{"--retain-last must be at least 1"}
	}
	tbl, err := loadTable(ctx, *path)
	if err != nil {
		return err
	}
	before := len(tbl.Metadata().Snapshots())
	// The positions outlive their snapshots: each commit also sets them
	// as table properties, which expiry keeps.
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(*olderThan), table.WithRetainLast(*retain)); err != nil {
		return fmt.Errorf("expiring snapshots: %w", err)
	}
	after, err := txn.Commit(ctx)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			return fmt.Errorf("expiring snapshots: the job committed meanwhile; run it again: %w", err)
		}
		return fmt.Errorf("expiring snapshots: %w", err)
	}
	fmt.Fprintf(stdout, "expired %d of %d snapshots (older than %s, the newest %d kept); files no snapshot references any more are deleted\n",
		before-len(after.Metadata().Snapshots()), before, *olderThan, *retain)
	return nil
}

func runTableCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("table compact", "-c FILE [--target-file-bytes 536870912] [--dry-run]", stdout, stderr)
	path := fs.String("c", "", "the job's config (YAML) with sinks.iceberg")
	target := fs.Int64("target-file-bytes", table.WriteTargetFileSizeBytesDefault, "size of a compacted file; files under 3/4 of it are rewritten, 5 or more of a partition together")
	dryRun := fs.Bool("dry-run", false, "print the plan, rewrite nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tbl, err := loadTable(ctx, *path)
	if err != nil {
		return err
	}
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = *target, *target*3/4, *target*9/5
	plan, err := compaction.Analyze(ctx, tbl, cfg)
	if err != nil {
		return fmt.Errorf("planning the compaction: %w", err)
	}
	files := 0
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
		files += len(g.Tasks)
	}
	fmt.Fprintf(stdout, "%d of %d data files in %d partitions to rewrite into about %d\n", files, plan.TotalInputFiles, len(groups), plan.EstOutputFiles)
	if *dryRun || len(groups) == 0 {
		return nil
	}
	// One snapshot replaces the small files; the job's commits meanwhile
	// make it try again on the fresh table. Positions stay: a rewrite adds
	// no rows, and the snapshots before it (or the table's properties)
	// still say where each partition stands.
	txn := tbl.NewTransaction()
	res, err := txn.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{})
	if err != nil {
		return fmt.Errorf("compacting: %w", err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("compacting: the commit failed (run it again): %w", err)
	}
	fmt.Fprintf(stdout, "rewrote %d data files into %d\n", res.RemovedDataFiles, res.AddedDataFiles)
	return nil
}
