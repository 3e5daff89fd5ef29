package pipeline

import (
	"context"

	"github.com/logstore/logstore/sink"
)

// tableResume is where the output stands for a job whose only durable
// output is an Iceberg table (no sinks.files): each commit records its
// batch (first, last, topic id) in the table, in the same snapshot as its
// rows, so the table keeps no record of its own and saveResume writes
// nothing. A batch being written needs none either: the table takes a
// batch once whatever its cut (sink/iceberg).
type tableResume struct{ table sink.TableSink }

func (tableResume) saveResume(context.Context, resumeRecord) error { return nil }

// ofEveryOutput is false: the table commits a batch before an
// exactly-once Kafka output's transaction, so it may be ahead of it.
func (tableResume) ofEveryOutput() bool { return false }

func (r tableResume) loadResume(ctx context.Context, topic string, partition int) (resumeRecord, bool, error) {
	p, ok, err := r.table.TablePosition(ctx, topic, partition)
	if err != nil || !ok {
		return resumeRecord{}, false, err
	}
	return resumeRecord{Topic: topic, Partition: partition, First: p.First, Last: p.Last, Next: p.Last + 1, TopicID: p.TopicID, Written: p.Committed}, true, nil
}
