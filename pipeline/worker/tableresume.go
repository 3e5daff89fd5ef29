package worker

import (
	"context"

	"github.com/logstore/logstore/sink"
)

// TableResume is where the output stands for a job whose only durable
// output is an Iceberg table (no sinks.files): each commit records its
// batch (first, last, topic id) in the table, in the same snapshot as its
// rows, so the table keeps no record of its own and saveResume writes
// nothing. A batch being written needs none either: the table takes a
// batch once whatever its cut (sink/iceberg).
type TableResume struct{ Table sink.TableSink }

func (TableResume) SaveResume(context.Context, ResumeRecord) error { return nil }

// OfEveryOutput is false: the table commits a batch before an
// exactly-once Kafka output's transaction, so it may be ahead of it.
func (TableResume) OfEveryOutput() bool { return false }

func (r TableResume) LoadResume(ctx context.Context, topic string, partition int) (ResumeRecord, bool, error) {
	p, ok, err := r.Table.TablePosition(ctx, topic, partition)
	if err != nil || !ok {
		return ResumeRecord{}, false, err
	}
	return ResumeRecord{Topic: topic, Partition: partition, First: p.First, Last: p.Last, Next: p.Last + 1, TopicID: p.TopicID, Written: p.Committed}, true, nil
}
