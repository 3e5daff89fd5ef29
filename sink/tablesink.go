package sink

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// TableSink is a sink that commits each batch to a table and records, in
// the same commit, how far each partition stands, so a job whose only
// durable output is the table resumes from it (package sink/iceberg).
//
// It is a seam, not an abstraction over table formats: the pipeline
// reaches the table sink only through it, so a binary that does not link
// sink/iceberg (built with -tags notable) links none of iceberg-go, Arrow,
// the catalogs' SDKs or their package init (substrait's extension YAML,
// ~110 ms and 32 MB at every start, used or not).
type TableSink interface {
	Sink
	// TablePosition is the last batch the table holds of topic/partition;
	// false when it holds none.
	TablePosition(ctx context.Context, topic string, partition int) (TablePosition, bool, error)
	// WriteFiles is Write up to its commit: the batch's data files, from
	// its staged rows, kept for the Write that commits them; held when
	// the table holds the batch already (that Write has nothing to do).
	// Once it returns the partition may stage its next batch while this
	// one waits for its snapshot.
	WriteFiles(ctx context.Context, b *Batch) (held bool, err error)
}

// TablePosition is where a table stands for one partition.
type TablePosition struct {
	First, Last int64  // the last batch committed: its first and last offset
	TopicID     string // of the topic Last is an offset of; "" when unknown
	Committed   time.Time
}

// TableOpener opens the table sinks.iceberg names.
type TableOpener func(ctx context.Context, cfg *IcebergConfig, schema *Schema, log *slog.Logger) (TableSink, error)

var tableOpener TableOpener

// RegisterTable makes OpenTable open tables with open; sink/iceberg calls
// it from its init, so importing that package is what links the table.
func RegisterTable(open TableOpener) { tableOpener = open }

// ErrNoTableSink is OpenTable's answer in a binary built without the table
// sink: a config error to fix, never to retry.
var ErrNoTableSink = errors.New("iceberg: this logstore was built without the table sink (go build -tags notable); " +
	"use a binary built without that tag (make build, the container image) or remove sinks.iceberg")

// OpenTable opens the table sinks.iceberg names through the registered
// table sink.
func OpenTable(ctx context.Context, cfg *IcebergConfig, schema *Schema, log *slog.Logger) (TableSink, error) {
	if tableOpener == nil {
		return nil, ErrNoTableSink
	}
	return tableOpener(ctx, cfg, schema, log)
}

// TableConfigError is a table that cannot take what the config writes: a
// column the output narrows (long to int), a partition spec or sort order
// the config does not match. Retrying cannot help; the CLI exits 2, a
// config error, which a Kubernetes Job's podFailurePolicy does not retry.
type TableConfigError struct{ Err error }

func (e *TableConfigError) Error() string { return e.Err.Error() }
func (e *TableConfigError) Unwrap() error { return e.Err }

// TableChecker checks, without changing it, that the table sinks.iceberg
// names can take what the config writes (a missing table can: the job
// creates it). A table that cannot is a *TableConfigError; a catalog it
// cannot reach, any other error.
type TableChecker func(ctx context.Context, cfg *IcebergConfig, schema *Schema) error

var tableChecker TableChecker

// RegisterTableCheck makes CheckTable check tables with check (sink/iceberg's
// init, as RegisterTable).
func RegisterTableCheck(check TableChecker) { tableChecker = check }

// CheckTable checks the table sinks.iceberg names through the registered
// table sink (`logstore check`).
func CheckTable(ctx context.Context, cfg *IcebergConfig, schema *Schema) error {
	if tableChecker == nil {
		return ErrNoTableSink
	}
	return tableChecker(ctx, cfg, schema)
}
