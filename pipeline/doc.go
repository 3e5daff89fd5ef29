// Package pipeline is the job: it joins the consumer group (package
// group), decides where each assigned partition starts (package start),
// runs a worker per partition (package worker: reading, decoding, cutting
// batches and committing them through the outputs, the commit protocol),
// opens the outputs and the dead-letter destinations, and reports
// progress, metrics and the run's summary.
//
// The job's rooms, from the top: this package (the config, the group
// membership and the partitions it holds, starting partitions, replays
// and backfills, metrics); package worker (one partition: the commit
// protocol, the memory budget, dead letters, resume records); package
// start (where a partition starts: facts in, a position and its reason
// out); packages fetch and decode below them. Nothing below reaches
// back up: the worker knows the job only through worker.Config and the
// small interfaces it names there (Committer, ResumeStore, Metrics,
// Progress).
//
// Where a partition starts is decided in one place, package start
// (pipeline/start): it weighs the group's offset and cut mark, the files'
// resume record, the table's position, the transactions' offsets,
// start_offset, a backfill's range and the topic's id, and returns the
// position with what decided it and why. The job gathers those facts
// (positions.go, the resume stores of package worker), carries out what the decision
// asks and logs it once per partition start (partitionstart.go); package
// start's comment and docs/guarantees.md list the reasons.
package pipeline
