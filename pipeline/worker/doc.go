// Package worker runs one partition of the job: it reads the partition
// through package fetch, decodes its records through package decode,
// cuts batches within the member's memory budget and commits each through
// the outputs in the order their commit ways give (sink.OrderByCommit):
// the commit protocol. The job (package pipeline) makes a worker per
// assigned partition with New and runs it from the position package start
// decided.
//
// The commit protocol, per partition. A batch starts at first, the offset
// the group has committed, and is cut at last, the offset of its last
// record; next is last+1.
//
//  1. read from first, decode, append to the open batch;
//  2. at the flush rule (rows, bytes, age, memory budget) cut at last and
//     commit first with the cut mark "cut:<last> layout:<fingerprint> <layout>"
//     as metadata (generation-fenced; the mark is read and written by
//     package start, start/mark.go);
//  3. record in the output (the partition's resume record) that the batch
//     first..last is being written, with its mark; write the batch to every
//     sink under names made of topic, partition, first and last, then its
//     dead letters, then the resume record again: the output holds it.
//     A write cut short resumes with the first sink that lacks the batch.
//     Sinks that stage (stage.go) take the batch's
//     rows as they pile up, before the cut; rows a sink refuses for good
//     become dead letters where they are staged, before any sink has them,
//     by the row alone, so a re-cut staged in other chunks gives the same
//     files. A re-cut stages under the layout of its mark and never waits
//     on the memory budget;
//  4. commit next, with the commit's time "at:<Unix ms>" as metadata
//     (committime.go; read as no mark, as the empty metadata before it).
//
// Where a batch's commit waits for the member's commit cycle (an
// exactly-once transaction, a table's snapshot), the steps after its files
// run beside the partition's reading (ahead.go): the worker reads, decodes
// and holds its next batch meanwhile, and starts step 2 for it only once
// the batch ahead is committed, so the steps still run one batch of a
// partition at a time.
//
// The invariant: the committed offset moves past a record only after every
// sink holds it, and while a cut mark is committed the batch from first is
// cut at exactly last again, with the layout the mark records, so a re-run
// after a crash at any point writes the same records under the same names
// (files overwrite, not duplicate).
//
// Several outputs, several positions. The files' resume record is written
// once every output holds the batch, so it is where the least advanced
// output stands. Other outputs record their own: the table its last
// offset per partition in each snapshot's summary, the exactly-once Kafka
// output its next offset in the group's offsets, committed in the
// transaction that writes the batch. The rule: a partition starts at the
// position of the LEAST advanced output, and every output skips what it
// already holds — files by their names (a batch re-cut at its mark
// overwrites them), the table by re-reading its positions at every commit
// try, the Kafka output by leaving out the records before the group's
// offset it read at the partition's start.
package worker
