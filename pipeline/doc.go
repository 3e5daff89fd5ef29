// Package pipeline is the job: it joins the consumer group, runs one worker
// per assigned partition (reading through package fetch, decoding through
// package decode), cuts batches, hands them to the sinks, writes dead letters
// and keeps the commit protocol.
//
// The commit protocol, per partition. A batch starts at first, the offset
// the group has committed, and is cut at last, the offset of its last
// record; next is last+1.
//
//  1. read from first, decode, append to the open batch;
//  2. at the flush rule (rows, bytes, age, memory budget) cut at last and
//     commit first with the cut mark "cut:<last>" as metadata
//     (generation-fenced);
//  3. write the batch to every sink under names made of topic, partition,
//     first and last;
//  4. commit next.
//
// The invariant: the committed offset moves past a record only after every
// sink holds it, and while a cut mark is committed the batch from first is
// cut at exactly last again, so a re-run after a crash at any point writes
// the same records under the same names (files overwrite, not duplicate).
package pipeline
