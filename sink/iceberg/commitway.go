package iceberg

import "github.com/logstore/logstore/sink"

// Commits says the table commits by snapshot, with positions: the
// member's batches go in one snapshot per commit cycle, after the files
// and before the Kafka transaction.
func (t *Table) Commits() sink.CommitWay { return sink.CommitsBySnapshot }
