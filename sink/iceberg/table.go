// Package iceberg is the table sink: each batch's Parquet files, written
// by the files sink below the table's location, committed to an Apache
// Iceberg table through github.com/apache/iceberg-go.
//
// Guarantee: exactly once per source record in the table's current
// snapshot. Each commit's snapshot summary records, per source partition,
// the batch it covers (logstore.last/{topic}/{partition}); a commit
// asserts the branch head it read (optimistic concurrency), and every try,
// the first and each one after a conflict or an unknown outcome, reads
// the table again and skips a batch the table already holds. So a re-cut
// after a crash, a zombie of an old generation and a racing new owner
// never add the same rows twice.
package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/cycle"
)

// Table is the sink. It stages rows as the files sink does (it is one),
// and at the cut stores the batch's files and commits them, in one
// snapshot with the member's other partitions' batches waiting then.
type Table struct {
	name  string
	ident table.Identifier
	cat   catalog.Catalog
	files *sink.Files
	log   *slog.Logger

	// sortOrder is the table's sort order id the data files are written
	// in (sinks.iceberg.sort_by); nil: unsorted.
	sortOrder *int

	// cycle is the member's snapshots: one per commit_interval with
	// every batch then waiting (commit.go).
	cycle   *cycle.Owner[*pendingCommit]
	retries atomic.Int64 // commit tries after the first (another writer's commit came between)

	// The table's upkeep (upkeep.go): at most one of this member's at a
	// time, stopped by Close.
	upkeep       sink.TableUpkeep
	upkeepEvery  time.Duration
	upkeeping    atomic.Bool
	upkeepCtx    context.Context
	upkeepCancel context.CancelFunc
	upkeepWG     sync.WaitGroup

	mu      sync.Mutex
	schemas map[*sink.Schema]*sink.Schema // the output's, in microseconds (inMicros)
	// stored are batches whose data files are sealed and not committed
	// (waiting for the cycle, or the commit failed): a retry commits them
	// without sealing them again, since the files sink lets go of a
	// batch's rows once sealed.
	stored map[batchKey]*storedBatch
}

type batchKey struct {
	topic     string
	partition int
}

// storedBatch is a batch whose data files are sealed in the spool and
// wait for the member's cycle, which stores them joined with the other
// batches of the cycle (commitGroup) and removes them once committed.
type storedBatch struct {
	first, last int64
	pending     *pendingCommit
}

// New opens the catalog and the table, creating the table (and its
// namespace) when missing, and checks an existing one against the output
// columns and partition_by. cfg must have had SetDefaults.
func New(ctx context.Context, cfg *sink.IcebergConfig, schema *sink.Schema, log *slog.Logger) (*Table, error) {
	if log == nil {
		log = slog.Default()
	}
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tbl, err := openTable(ctx, cat, cfg, schema, log)
	if err != nil {
		return nil, err
	}
	files, err := sink.NewTableFiles(ctx, cfg.FilesConfig(tbl.Location()+"/data"))
	if err != nil {
		return nil, fmt.Errorf("iceberg: table %s: its data folder: %w", cfg.Table, err)
	}
	t := &Table{name: cfg.Table, ident: Ident(cfg.Table), cat: cat, files: files, log: log.With("table", cfg.Table),
		schemas: map[*sink.Schema]*sink.Schema{}, stored: map[batchKey]*storedBatch{},
		upkeep: cfg.Upkeep, sortOrder: fileSortOrder(tbl)}
	if cfg.Upkeep.Interval != nil {
		t.upkeepEvery = *cfg.Upkeep.Interval
	}
	t.cycle = cycle.New(cycle.Config[*pendingCommit]{Interval: cfg.CommitInterval, Commit: t.commitGroup})
	t.upkeepCtx, t.upkeepCancel = context.WithCancel(context.Background())
	return t, nil
}

// Check loads the table sinks.iceberg names, if it exists, and checks
// that it can take what the config writes, changing nothing: its
// partition spec against partition_by, its schema against the output's
// (what evolve would change, and what it cannot). A missing table (or
// SQLite catalog file) passes: the job creates it. A table
// that cannot is a *sink.TableConfigError (exit 2); a catalog it cannot
// reach or read, a plain error (sink.TableChecker).
func Check(ctx context.Context, cfg *sink.IcebergConfig, schema *sink.Schema) error {
	want, err := tableSchema(schema)
	if err != nil {
		return &sink.TableConfigError{Err: fmt.Errorf("iceberg: table %s: %w", cfg.Table, err)}
	}
	if c := cfg.Catalog; c.Type == "sql" && !strings.Contains(c.URI, "?") {
		// Opening a SQLite catalog makes its file: none yet, no table yet.
		if _, err := os.Stat(strings.TrimPrefix(c.URI, "file:")); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		return err
	}
	tbl, err := cat.LoadTable(ctx, Ident(cfg.Table))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil // the job creates it
	}
	if err != nil {
		return fmt.Errorf("iceberg: loading table %s: %w", cfg.Table, err)
	}
	if _, err := planEvolution(cfg.Table, tbl.Schema(), want); err != nil {
		return &sink.TableConfigError{Err: err}
	}
	// A partition column the schema's evolution adds is not in the table's
	// schema yet: the spec is planned against the schema the job will have.
	if _, err := planSpec(cfg.Table, want, tbl.Spec(), cfg.PartitionBy); err != nil {
		return &sink.TableConfigError{Err: err}
	}
	return nil
}

func openTable(ctx context.Context, cat catalog.Catalog, cfg *sink.IcebergConfig, schema *sink.Schema, log *slog.Logger) (*table.Table, error) {
	want, err := tableSchema(schema)
	if err != nil {
		return nil, &sink.TableConfigError{Err: fmt.Errorf("iceberg: table %s: %w", cfg.Table, err)}
	}
	ident := Ident(cfg.Table)
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		var spec iceberg.PartitionSpec
		if spec, err = tableSpec(cfg.PartitionBy, want); err != nil {
			return nil, &sink.TableConfigError{Err: err}
		}
		var order table.SortOrder
		if order, err = sortOrder(cfg.Table, cfg.SortBy, want); err != nil {
			return nil, &sink.TableConfigError{Err: err}
		}
		if err := cat.CreateNamespace(ctx, ident[:len(ident)-1], nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("iceberg: creating the namespace of %s: %w", cfg.Table, err)
		}
		tbl, err = cat.CreateTable(ctx, ident, want, catalog.WithPartitionSpec(&spec), catalog.WithSortOrder(order), catalog.WithProperties(iceberg.Properties{
			"format-version": "2", "write.parquet.compression-codec": cfg.Parquet.Compression,
		}))
		if errors.Is(err, catalog.ErrTableAlreadyExists) { // another member made it first
			tbl, err = cat.LoadTable(ctx, ident)
		} else if err == nil {
			log.Info("iceberg: table created", "table", cfg.Table, "location", tbl.Location(), "partition_spec", tbl.Spec().String())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg: loading table %s: %w", cfg.Table, err)
	}
	if _, err := planSpec(cfg.Table, want, tbl.Spec(), cfg.PartitionBy); err != nil {
		return nil, &sink.TableConfigError{Err: err}
	}
	if tbl, err = evolve(ctx, cat, tbl, cfg.Table, want, log); err != nil {
		return nil, err
	}
	if tbl, err = evolveSpec(ctx, cat, tbl, cfg.Table, cfg.PartitionBy, log); err != nil {
		return nil, err
	}
	return syncSortOrder(ctx, cat, tbl, cfg.Table, cfg.SortBy, log)
}

// evolveSpec changes the table's partition spec to partition_by
// (planSpec): the data files written from now on carry the new spec, the
// ones before keep theirs (Iceberg's partition evolution; Spark's ALTER
// TABLE ... ADD/DROP PARTITION FIELD). One commit that asserts the spec it
// read, tried again against members doing the same at the same start.
func evolveSpec(ctx context.Context, cat catalog.Catalog, tbl *table.Table, name string, by []sink.TablePartition, log *slog.Logger) (*table.Table, error) {
	for attempt := 1; ; attempt++ {
		c, err := planSpec(name, tbl.Schema(), tbl.Spec(), by)
		if err != nil {
			return nil, &sink.TableConfigError{Err: err}
		}
		if c.empty() {
			return tbl, nil
		}
		txn := tbl.NewTransaction()
		us := txn.UpdateSpec(true)
		for _, f := range c.remove {
			us.RemoveField(f)
		}
		for _, p := range c.add {
			us.AddField(p.Column, transforms[p.Transform], partitionName(p))
		}
		if err = us.Commit(); err == nil {
			var next *table.Table
			if next, err = txn.Commit(ctx); err == nil {
				log.Info("iceberg: table partition spec changed to sinks.iceberg.partition_by; files written before keep theirs", "table", name,
					"removed", c.remove, "added", partitionList(c.add), "partition_spec", next.Spec().String())
				return next, nil
			}
		}
		if attempt == evolveAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("iceberg: table %s: changing its partition spec (removing %v, adding %s): %w", name, c.remove, partitionList(c.add), err)
		}
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return nil, fmt.Errorf("iceberg: loading table %s: %w", name, err)
		}
	}
}

// evolveAttempts bounds the tries of a schema change against other
// members changing it (or committing) at the same start.
const evolveAttempts = 5

// evolve changes the table's schema to take what the config writes
// (planEvolution), in one commit that asserts the schema it read: members
// starting together each try, and one that lost the race finds the
// change made when it reads the table again.
func evolve(ctx context.Context, cat catalog.Catalog, tbl *table.Table, name string, want *iceberg.Schema, log *slog.Logger) (*table.Table, error) {
	for attempt := 1; ; attempt++ {
		e, err := planEvolution(name, tbl.Schema(), want)
		if err != nil {
			return nil, &sink.TableConfigError{Err: err}
		}
		if e.empty() {
			return tbl, nil
		}
		txn := tbl.NewTransaction()
		// Readers find our files' columns by name (the files carry no
		// field ids): the mapping must learn the new column too, which
		// iceberg-go does only when given the mapping.
		var opts []table.UpdateSchemaOption
		if nm := tbl.Metadata().NameMapping(); nm != nil {
			opts = append(opts, table.WithNameMapping(nm))
		}
		us := txn.UpdateSchema(true, false, opts...)
		for _, f := range e.adds {
			us.AddColumn([]string{f.Name}, f.Type, "", false, nil)
		}
		for _, f := range e.promote {
			us.UpdateColumn([]string{f.Name}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: f.Type, Valid: true}})
		}
		if err = us.Commit(); err == nil {
			var next *table.Table
			if next, err = txn.Commit(ctx); err == nil {
				log.Info("iceberg: table schema changed to take schema.columns", "table", name, "added", fieldNames(e.adds), "promoted", fieldNames(e.promote),
					"schema_id", next.Schema().ID)
				return next, nil
			}
		}
		if attempt == evolveAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("iceberg: table %s: changing its schema (adding %v, promoting %v): %w", name, fieldNames(e.adds), fieldNames(e.promote), err)
		}
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return nil, fmt.Errorf("iceberg: loading table %s: %w", name, err)
		}
	}
}

func fieldNames(fs []iceberg.NestedField) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name + " " + f.Type.String()
	}
	return names
}

// Stage encodes the open batch's rows into its spool files (sink.Stager).
func (t *Table) Stage(ctx context.Context, b *sink.Batch) (bool, error) {
	if err := refusePrefix(b); err != nil {
		return false, err
	}
	return t.files.Stage(ctx, t.inMicros(b))
}

// inMicros is b with its timestamps written in microseconds.
func (t *Table) inMicros(b *sink.Batch) *sink.Batch {
	t.mu.Lock()
	s := t.schemas[b.Schema]
	if s == nil {
		s = inMicros(b.Schema)
		t.schemas[b.Schema] = s
	}
	t.mu.Unlock()
	out := *b
	out.Schema = s
	return &out
}

// CheckRows names the rows whose data file the store cannot take (a key
// too long), before any sink writes the batch (sink.RowChecker).
func (t *Table) CheckRows(b *sink.Batch) []*sink.RowError {
	return t.files.CheckRows(t.inMicros(b))
}

// HeldBytes is what the partition's open batch holds in its sorted data
// files' runs (sink.MemoryHolder).
func (t *Table) HeldBytes(topic string, partition int, prefix string) int64 {
	return t.files.HeldBytes(topic, partition, prefix)
}

// Discard drops the partition's staged rows (sink.Stager).
func (t *Table) Discard(topic string, partition int, prefix string) {
	t.files.Discard(topic, partition, prefix)
}

// RemoveLeftovers removes what a dead writer left half stored of the
// partition's data files (sink.Files.RemoveLeftovers).
func (t *Table) RemoveLeftovers(ctx context.Context, topic string, partition int) int {
	return t.files.RemoveLeftovers(ctx, topic, partition)
}

// Write seals the batch's data files and commits them, unless the table
// holds the batch already; it returns once the commit is in the table.
func (t *Table) Write(ctx context.Context, b *sink.Batch) error {
	held, err := t.WriteFiles(ctx, b)
	if err != nil || held {
		return err
	}
	k := batchKey{b.Topic, b.Partition}
	t.mu.Lock()
	st := t.stored[k]
	t.mu.Unlock()
	if err := t.commit(ctx, st.pending); err != nil {
		return err
	}
	t.mu.Lock()
	if t.stored[k] == st {
		delete(t.stored, k)
	}
	t.mu.Unlock()
	sink.Failpoint(ctx, sink.FailTableCommitted)
	return nil
}

// WriteFiles is Write's first half: the batch's data files, from its
// staged rows, sealed in the spool for its commit; held when the table
// holds the batch already (Write then has nothing to do). Once it
// returns, the partition may stage its next batch while this one waits
// for its snapshot.
func (t *Table) WriteFiles(ctx context.Context, b *sink.Batch) (held bool, err error) {
	if err := refusePrefix(b); err != nil {
		return false, err
	}
	k := batchKey{b.Topic, b.Partition}
	t.mu.Lock()
	st := t.stored[k]
	t.mu.Unlock()
	if st != nil && st.first == b.First && st.last == b.Last {
		return false, nil
	}
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return false, fmt.Errorf("iceberg: loading table %s: %w", t.name, err)
	}
	if held, err := t.holds(tbl, refOf(b)); err != nil || held {
		if held {
			t.files.Discard(b.Topic, b.Partition, b.Prefix)
			t.log.Info("iceberg: the table holds this batch already; not writing it again", "topic", b.Topic, "partition", b.Partition, "first", b.First, "last", b.Last)
		}
		return held, err
	}
	sealed, err := t.files.SealFiles(ctx, t.inMicros(b))
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	if st != nil && !t.cycle.InCycle(st.pending) {
		st.pending.remove() // another cut of the partition's, given up
	}
	t.stored[k] = &storedBatch{first: b.First, last: b.Last, pending: &pendingCommit{batch: refOf(b), sealed: sealed}}
	t.mu.Unlock()
	sink.Failpoint(ctx, sink.FailTableFiles)
	return false, nil
}

// holds says whether tbl holds b: its position for b's partition is at or
// past b.Last. A position inside the batch means another cut of the same
// records was committed, which the commit protocol never makes (a re-cut
// ends where its mark says): a second job writing the same table.
func (t *Table) holds(tbl *table.Table, b batchRef) (bool, error) {
	p, ok := PositionOf(tbl, b.Topic, b.Partition)
	pos := p.Last
	switch {
	case ok && b.TopicID != "" && p.TopicID != "" && p.TopicID != b.TopicID:
		t.log.Warn("iceberg: the table's position is of an earlier topic of this name (deleted and created again); the new topic's records are new to the table",
			"topic", b.Topic, "partition", b.Partition, "table_last", pos, "table_topic_id", p.TopicID, "topic_id", b.TopicID)
		return false, nil
	case !ok || pos < b.First:
		return false, nil
	case pos >= b.Last:
		return true, nil
	}
	return false, fmt.Errorf("iceberg: table %s holds %s/%d up to offset %d, inside the batch %d..%d being written: "+
		"another job (another kafka.group_id) writes the same table, or its logstore.last properties were edited; give each job its own table",
		t.name, b.Topic, b.Partition, pos, b.First, b.Last)
}

// dataFiles describes the stored files for the table's manifests, from
// what the writer knows: path, rows, size, the partition its folder names
// and the column metrics of its footer. Nothing is read back.
func (t *Table) dataFiles(tbl *table.Table, written []sink.WrittenFile) ([]iceberg.DataFile, error) {
	spec, schema := tbl.Spec(), tbl.Schema()
	dfs := make([]iceberg.DataFile, 0, len(written))
	for _, w := range written {
		values, logical, err := partitionValues(w.Folder, spec, schema)
		if err != nil {
			return nil, fmt.Errorf("iceberg: table %s: %w", t.name, err)
		}
		bld, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, t.files.URL(w), iceberg.ParquetFile, values, logical, nil, w.Rows, w.Bytes)
		if err != nil {
			return nil, fmt.Errorf("iceberg: table %s: describing %s: %w", t.name, w.Key, err)
		}
		if t.sortOrder != nil && w.Joined <= 1 {
			// A joined file is sorted within each batch's row groups,
			// not across them: it does not claim the order.
			bld.SortOrderID(*t.sortOrder)
		}
		fileMetrics(w.Footer, schema).apply(bld)
		dfs = append(dfs, bld.Build())
	}
	return dfs, nil
}

// Position reads the table and says how far it holds topic/partition:
// where a job that lost its group's offsets resumes.
func (t *Table) Position(ctx context.Context, topic string, partition int) (Position, bool, error) {
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return Position{}, false, fmt.Errorf("iceberg: loading table %s: %w", t.name, err)
	}
	p, ok := PositionOf(tbl, topic, partition)
	return p, ok, nil
}

// Records is how many rows the table's current snapshot holds (its
// summary's total-records), 0 before the first commit.
func (t *Table) Records(ctx context.Context) (int64, error) {
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return 0, fmt.Errorf("iceberg: loading table %s: %w", t.name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("iceberg: table %s: total-records of snapshot %d: %w", t.name, snap.SnapshotID, err)
	}
	return n, nil
}

// refusePrefix turns away backfills and replays: they write beside the
// main output for review, which a table has no room for. The job refuses
// them before it reads (a refusal here is retried batch after batch).
func refusePrefix(b *sink.Batch) error {
	if b.Prefix == "" {
		return nil
	}
	return fmt.Errorf("iceberg: the table sink does not take backfills or replays (they write under %q); run them with sinks.files only", b.Prefix)
}

// Close drops staged and sealed batches (committed ones are in the table) and stops
// an upkeep under way (the next one finishes it).
func (t *Table) Close() error {
	t.cycle.Close()
	t.mu.Lock()
	for k, st := range t.stored {
		st.pending.remove()
		delete(t.stored, k)
	}
	t.mu.Unlock()
	t.upkeepCancel()
	t.upkeepWG.Wait()
	err := t.files.Close()
	if c, ok := t.cat.(interface{ Close() error }); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

var (
	_ sink.Stager     = (*Table)(nil)
	_ sink.RowChecker = (*Table)(nil)
)
