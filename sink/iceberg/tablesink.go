package iceberg

import (
	"context"
	"log/slog"

	"github.com/logstore/logstore/sink"
)

// Importing this package is what links the table sink into a binary
// (sink.TableSink says why it is a seam).
func init() {
	sink.RegisterTable(func(ctx context.Context, cfg *sink.IcebergConfig, schema *sink.Schema, log *slog.Logger) (sink.TableSink, error) {
		t, err := New(ctx, cfg, schema, log)
		if err != nil {
			return nil, err
		}
		return t, nil
	})
	sink.RegisterTableCheck(Check)
}

// TablePosition is Position as the pipeline resumes from it.
func (t *Table) TablePosition(ctx context.Context, topic string, partition int) (sink.TablePosition, bool, error) {
	p, ok, err := t.Position(ctx, topic, partition)
	return sink.TablePosition{First: p.First, Last: p.Last, TopicID: p.TopicID, Committed: p.Committed}, ok, err
}
