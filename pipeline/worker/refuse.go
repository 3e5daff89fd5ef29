package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/logstore/logstore/pipeline/record"

	"github.com/logstore/logstore/sink"
)

// refuse takes the rows a sink refused for good out of batch and applies
// dead_letter.on_error to them, as to a record that does not decode: into
// the batch's dead letters (in offset order, so a re-cut writes the same
// files), skipped, or a fatal error. Retrying cannot help such a row, and
// holding the partition for it would stall it for ever.
func (w *Worker) refuse(batch *sink.Batch, refused []*sink.RowError) error {
	if len(refused) == 0 {
		return nil
	}
	reasons := make(map[int]string, len(refused))
	for _, e := range refused {
		if e.Index >= 0 && e.Index < len(batch.Rows) {
			reasons[e.Index] = e.Err.Error()
		}
	}
	rows := make([]sink.Row, 0, len(batch.Rows))
	sources := make([]sink.Source, 0, len(batch.Sources))
	for i, row := range batch.Rows {
		reason, bad := reasons[i]
		if !bad {
			rows = append(rows, row)
			sources = append(sources, batch.Sources[i])
			continue
		}
		src := batch.Sources[i]
		if err := w.onBadRecord(src.Offset, "a sink refused the row: "+reason, func() RejectedRecord { return w.refusedLetter(batch.Schema, row, src, reason) }); err != nil {
			return err
		}
		w.Stats.Refused.Add(1)
		w.Log.Warn("a sink refused a row for good; applying dead_letter.on_error", "offset", src.Offset, "reason", reason, "on_error", w.OnError)
	}
	batch.Rows, batch.Sources = rows, sources
	w.batch.rows, w.batch.sources = rows, sources
	slices.SortStableFunc(w.batch.dead, func(a, b RejectedRecord) int { return int(a.Record.Offset - b.Record.Offset) })
	return nil
}

// onBadRecord applies dead_letter.on_error to a record that cannot become
// a row, whether it did not decode or a sink refused its row.
func (w *Worker) onBadRecord(offset int64, reason string, letter func() RejectedRecord) error {
	switch w.OnError {
	case "fail":
		return FatalError{fmt.Errorf("%s/%d offset %d: %s (dead_letter.on_error is fail)", w.Topic, w.Partition, offset, reason)}
	case "skip":
		w.Stats.Skipped.Add(1)
	default:
		w.batch.dead = append(w.batch.dead, letter())
	}
	return nil
}

// refusedLetter is the dead letter of a row a sink refused. The record's
// bytes are gone once it is decoded (unless sinks.kafka.value is original),
// so the letter holds the row as JSON, and its reason says so.
func (w *Worker) refusedLetter(schema *sink.Schema, row sink.Row, src sink.Source, reason string) RejectedRecord {
	m := record.Record{Topic: w.Topic, Partition: w.Partition, Offset: src.Offset, Time: src.Timestamp, Key: src.Key, Value: src.Value}
	if m.Value == nil {
		m.Value = sink.RowJSON(schema, row)
		reason += " (value: the decoded row as JSON)"
	}
	return RejectedRecord{Reason: "sink refused the row: " + strings.TrimSpace(reason), Record: m}
}

// checkRows takes the rows the sinks' checks name (sink.RowChecker) out of
// batch before any sink has them.
func (w *Worker) checkRows(sinks []sink.Sink, batch *sink.Batch) error {
	for _, s := range sinks {
		if c, ok := s.(sink.RowChecker); ok && len(batch.Rows) > 0 {
			if err := w.refuse(batch, c.CheckRows(batch)); err != nil {
				return err
			}
		}
	}
	return nil
}

// retrySink is retry for sink and dead-letter writes, counting each retry
// in logstore_retries_total under op.
func (w *Worker) retrySink(ctx context.Context, what, op string, f func() error) error {
	return Retry(ctx, w.Log, what, w.retrier(op), f)
}
