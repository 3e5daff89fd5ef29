package sink

import (
	"cmp"
	"slices"
)

// CommitWay is how an output makes a batch durable, and so where it
// stands in the member's commit cycle: what can be written again without
// harm goes first, and the output whose commit is the batch's record (the
// transaction that commits the group's offsets) goes last.
type CommitWay int

const (
	// CommitsByName: a batch written again overwrites its own objects
	// (the files: names from topic, partition, first and last).
	CommitsByName CommitWay = iota
	// CommitsBySnapshot: the member's batches go in one snapshot that
	// records each partition's position; a batch it holds is skipped
	// (the Iceberg table). Beside CommitsByTransaction the job writes it
	// after the transaction (pipeline's afterTxn): the transaction's
	// offsets are the Kafka output's only record, and the table must
	// never hold a batch the Kafka output lacks.
	CommitsBySnapshot
	// CommitsAtLeastOnce: written as it comes; a batch written again is
	// written again (Kafka at_least_once, told apart by its headers).
	CommitsAtLeastOnce
	// CommitsByTransaction: in the member's transaction with the group's
	// offsets, which is the batch's record (Kafka exactly_once).
	CommitsByTransaction
)

// CommitWayOf is how s commits: as it declares (a Commits method), or
// at least once.
func CommitWayOf(s Sink) CommitWay {
	if c, ok := s.(interface{ Commits() CommitWay }); ok {
		return c.Commits()
	}
	return CommitsAtLeastOnce
}

// OrderByCommit orders outputs as the commit cycle writes them, keeping
// the given order among outputs that commit the same way.
func OrderByCommit(sinks []Sink) {
	slices.SortStableFunc(sinks, func(a, b Sink) int { return cmp.Compare(CommitWayOf(a), CommitWayOf(b)) })
}

// Commits says the files commit by name.
func (f *Files) Commits() CommitWay { return CommitsByName }

// Commits says the Kafka output commits in transactions with exactly_once,
// else at least once.
func (k *Kafka) Commits() CommitWay {
	if k.ExactlyOnce() {
		return CommitsByTransaction
	}
	return CommitsAtLeastOnce
}
