package sink

import (
	"context"
	"fmt"
	"time"
)

// DeadLetterRow is a record the pipeline could not turn into a row, with the
// reason.
type DeadLetterRow struct {
	Reason string
	Source Source
}

// deadLetterSchema is fixed so that every _errors/ file reads the same:
// reason, topic, partition, offset, timestamp (the record's, ms; null when
// it had none or one outside MinTime..MaxTime), key and value (the
// record's bytes; null when the record had none). Every column takes any
// record, so a dead letter is always writable.
var deadLetterSchema = &Schema{Fields: []Field{
	{Name: "reason", Type: String, Required: true},
	{Name: "topic", Type: String, Required: true},
	{Name: "partition", Type: Int32, Required: true},
	{Name: "offset", Type: Int64, Required: true},
	{Name: "timestamp", Type: Timestamp, Unit: time.Millisecond},
	{Name: "key", Type: Bytes},
	{Name: "value", Type: Bytes},
}}

// NewDeadLetterBatch makes the dead letters of a partition's records
// first..last into a batch with deadLetterSchema, for Files.WriteDeadLetters.
// Prefix is left empty; set it as for the main batch.
func NewDeadLetterBatch(topic string, partition int, first, last int64, letters []DeadLetterRow) *Batch {
	b := &Batch{
		Topic: topic, Partition: partition, First: first, Last: last,
		Schema:  deadLetterSchema,
		Rows:    make([]Row, len(letters)),
		Sources: make([]Source, len(letters)),
	}
	for i, d := range letters {
		var ts, key, value any
		reason := d.Reason
		if t := d.Source.Timestamp; !t.IsZero() {
			// A dead letter must always be writable: a time the column
			// cannot hold (a producer's microseconds sent as milliseconds)
			// is null there, and its value is in the reason.
			if TimeInRange(t) {
				ts = t.UTC()
			} else {
				reason += fmt.Sprintf(" (the record's timestamp, %d ms since the epoch, is outside %s..%s; the timestamp column is null)",
					t.UnixMilli(), MinTime.Format(time.DateOnly), MaxTime.Format(time.DateOnly))
			}
		}
		if d.Source.Key != nil {
			key = d.Source.Key
		}
		if d.Source.Value != nil {
			value = d.Source.Value
		}
		b.Rows[i] = Row{reason, topic, int32(partition), d.Source.Offset, ts, key, value}
		b.Sources[i] = d.Source
	}
	return b
}

// DeadLetterExt is the extension of a dead-letter file, a Parquet file
// (deadLetterSchema): not .parquet, so a glob of the data's files
// (**/*.parquet, as DuckDB reads a folder tree) does not take the
// dead letters for data.
const DeadLetterExt = ".deadletter"

// WriteDeadLetters writes b (from NewDeadLetterBatch) to
// {prefix}/{b.Prefix}/_errors/{topic}-{partition}-{first}-{last}.deadletter,
// without partition folders. Spark, Hive, Trino and pyarrow skip folders
// that start with '_', and a **/*.parquet glob (DuckDB) skips the
// extension, so the errors never mix into the data. Like Write, it is
// exactly once by name.
func (f *Files) WriteDeadLetters(ctx context.Context, b *Batch) error {
	if len(b.Rows) == 0 {
		return nil
	}
	st := &stagedBatch{first: b.First, schema: b.Schema, layout: oneFolder("_errors"), folders: map[string]*stagedFolder{}, ext: DeadLetterExt}
	defer st.remove()
	if err := f.seal(ctx, st, b); err != nil {
		return err
	}
	_, err := f.upload(ctx, st, b)
	return err
}
