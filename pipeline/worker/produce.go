package worker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/sink"
)

// ExactlyOnce is sinks.kafka.delivery: exactly_once. A batch's files are
// written first (idempotent by their names); then one transaction holds
// the batch's rows on the output topic, its dead letters on the
// dead-letter topic, and the commit of its next offset (TxnOffsetCommit
// with the member's generation, KIP-447). A crash anywhere before the
// commit leaves the cut mark, so the batch is cut again at the same place
// and its transaction written again; an aborted or unfinished transaction
// is never seen by read_committed consumers.
//
// The transactional id is one per member: logstore-<group>-<instance id>
// for a static member, so a restarted pod fences its predecessor and
// aborts its open transaction at start (InitProducerId); a dynamic member
// has no name that survives it, so its id carries a random suffix, and
// what a dead dynamic member left open is aborted by the brokers at
// sinks.kafka.transaction_timeout. Zombies are fenced by their generation
// either way (KIP-447); one id per member rather than per partition keeps
// one producer and its connections per member (the KIP-98 way, an id per
// partition, would open a producer per partition).
type ExactlyOnce struct {
	Kafka    *sink.Kafka
	Dead     *KafkaDeadLetters // on the sink's producer; nil without a dead-letter topic
	Group    string            // kafka.group
	Instance string            // kafka.group_instance_id
	// Own reads the positions topic (the job's): the Kafka output's
	// record where the group has none.
	Own func(ctx context.Context, want map[string][]int) (map[string]map[int]*KafkaOwn, error)
}

// TransactionalID is the member's (see ExactlyOnce).
func TransactionalID(group, instance string) string {
	if instance != "" {
		return "logstore-" + group + "-" + instance
	}
	return "logstore-" + group + "-" + rand.Text()[:12]
}

// inTxn says whether the worker's sink s writes in the transaction rather
// than in deliver.
func (w *Worker) inTxn(s sink.Sink) bool {
	return w.EOS != nil && sink.CommitWayOf(s) == sink.CommitsByTransaction
}

// afterTxn says whether the worker's sink s commits after the
// transaction rather than in deliver: with exactly_once, the table. The
// transaction's offset is the Kafka output's only record; a table
// committed before it could hold a batch the Kafka output lacks, and when
// the group's offsets are lost (deleted, expired) a job without files
// starts after the table's position and never writes that batch to Kafka.
// After the transaction, the table is never ahead of the Kafka output: a
// stop between the two leaves the group's offset ahead, the partition
// starts at the table's (its least advanced output) and the Kafka output
// skips what its offset says it holds.
func (w *Worker) afterTxn(s sink.Sink) bool {
	return w.EOS != nil && sink.CommitWayOf(s) == sink.CommitsBySnapshot
}

// snapshotAfterTxn writes the batch to the sinks that commit after the
// transaction (afterTxn), once.
func (w *Worker) snapshotAfterTxn(ctx context.Context, b *openBatch, last int64) error {
	if b.phase >= phaseTabled || (len(b.rows) == 0 && b.staged == 0) {
		return nil
	}
	sinks, _, err := w.withLayout(w.using)
	if err != nil {
		return err
	}
	batch := w.sinkBatch(b, last)
	for _, s := range sinks {
		if !w.afterTxn(s) {
			continue
		}
		kind, start := SinkKind(s), time.Now()
		err := w.retrySink(ctx, "writing a batch", kind, func() error { return s.Write(ctx, batch) })
		if refused := sink.AsRowErrors(err); refused != nil {
			// Every check that can refuse a row ran before the
			// transaction; its rows are in Kafka now and cannot leave.
			return FatalError{fmt.Errorf("%s/%d: the %s sink refused %d rows of batch %d-%d after its transaction committed them to Kafka (first: %v); "+
				"report this with the record: a check before the transaction should have refused it", w.Topic, w.Partition, kind, len(refused), b.first, last, refused[0])}
		}
		if err != nil {
			return err
		}
		w.timeFlush(kind, start)
	}
	b.reach(phaseTabled)
	return nil
}

// deadInTxn says whether the dead-letter writer d writes in the
// transaction rather than in deliver.
func (w *Worker) deadInTxn(d DeadLetterWriter) bool {
	return w.EOS != nil && w.EOS.Dead != nil && d == DeadLetterWriter(w.EOS.Dead)
}

// commitNext commits the batch's next offset: with exactly_once in the
// transaction that writes its rows and dead letters to Kafka, retried as
// a whole until it commits or the member is fenced.
//
// The resume record saying the output holds the batch is written only
// after its transaction committed (flush leaves it here): the files alone
// are not the output, and a record written before would make the member
// taking over continue after a batch whose rows a killed transaction took
// away (package start: "the pending cut is in the output whole").
func (w *Worker) commitNext(ctx context.Context, b *openBatch, last int64) error {
	if w.EOS == nil {
		return w.commitRetrying(ctx, last+1, "")
	}
	if len(b.rows) == 0 && b.held == nil && (len(b.dead) == 0 || w.EOS.Dead == nil) {
		// Nothing for Kafka (every record filtered out): a plain commit.
		if err := w.snapshotAfterTxn(ctx, b, last); err != nil {
			return err
		}
		if err := w.saveResume(ctx, b.first, last, false); err != nil {
			return err
		}
		return w.commitRetrying(ctx, w.kafkaNext(last), "")
	}
	if b.phase < phaseTransacted {
		start := time.Now()
		err := Retry(ctx, w.Log, "writing batch "+strconv.FormatInt(b.first, 10)+"-"+strconv.FormatInt(last, 10)+" in a transaction", w.retrier(OpCommit), func() error {
			return w.transact(ctx, b, last)
		})
		if err != nil {
			return err
		}
		w.timeCommit(StepNext, start)
		// Committed: a flush that fails after this must not write it again.
		b.reach(phaseTransacted)
	}
	if err := w.snapshotAfterTxn(ctx, b, last); err != nil {
		return err
	}
	return w.saveResume(ctx, b.first, last, false)
}

// transact runs one transaction for the delivered batch ending at last,
// with the generation the member is in now. Like MemberCommitter, a
// generation that ended under it while the partition stays this member's
// is waited for and the transaction written again in the next.
func (w *Worker) transact(ctx context.Context, b *openBatch, last int64) error {
	for {
		member, changed, owned := w.txnMember()
		if w.EOS.Kafka.InCycle(b.txn) {
			// The cycle that took it tells its outcome; the brokers cannot
			// before it sent its offsets (issue 45).
			w.Log.Info(waitingForCycle, "first", b.first, "last", last)
			b.phase = phaseDelivered
		} else if b.phase == phaseUnsure {
			committed, err := w.txnCommitted(ctx, b, last, member)
			if err != nil {
				return err
			}
			b.phase = phaseDelivered
			if committed {
				return nil
			}
		}
		err := w.transactOnce(ctx, b, last, member)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, producer.ErrTxnOutcomeUnknown):
			b.phase = phaseUnsure
			if w.EOS.Kafka.InCycle(b.txn) {
				break // the stop waits for the cycle that holds it
			}
			w.Log.Warn("the outcome of the batch's transaction is unknown (its commit went unanswered); the group's offset will tell before it is written again",
				"first", b.first, "last", last, "err", err)
		case errors.Is(err, producer.ErrProducerFenced):
			return FatalError{fmt.Errorf("%s/%d: %w; another process runs with this member's transactional id (two members with one kafka.group_instance_id?): stopping", w.Topic, w.Partition, err)}
		case errors.Is(err, producer.ErrGroupFenced):
			err = fmt.Errorf("%w: %w", errFenced, err)
		}
		if changed == nil || !rebalancing(err) || !owned() {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return err
		}
	}
}

// txnCommitted resolves a transaction whose outcome is unknown: it
// committed next (last+1) for the partition, so the group's offset, read
// once no transaction holds it (require_stable), is at or past next when
// and only when it committed. A replay commits no offsets and cannot tell:
// it takes the batch as not written (at least once, as a replay is).
func (w *Worker) txnCommitted(ctx context.Context, b *openBatch, last int64, member *producer.GroupMember) (bool, error) {
	if member == nil {
		return false, nil
	}
	offsets, err := w.EOS.Kafka.Producer().StableOffsets(ctx, member.Group, map[string][]int32{w.Topic: {int32(w.Partition)}})
	if err != nil {
		return false, fmt.Errorf("%s/%d: reading the group's offset to learn whether the transaction of %d-%d committed: %w", w.Topic, w.Partition, b.first, last, err)
	}
	at := offsets[w.Topic][int32(w.Partition)].Offset
	if at < 0 && w.EOS.Own != nil {
		// The group's offsets are gone (deleted, expired): the positions
		// topic, written in the same transaction, tells.
		own, err := w.EOS.Own(ctx, map[string][]int{w.Topic: {w.Partition}})
		if err != nil {
			return false, fmt.Errorf("%s/%d: reading the positions topic to learn whether the transaction of %d-%d committed: %w", w.Topic, w.Partition, b.first, last, err)
		}
		if o := own[w.Topic][w.Partition]; o != nil {
			at = o.At.Offset
		}
	}
	w.Log.Info("the unanswered transaction's outcome, from the group's offset", "first", b.first, "last", last, "group_offset", at, "committed", at > last)
	return at > last, nil
}

// txnMember is who commits the offsets: the member's current generation,
// a channel closed when it changes, and whether the partition is still
// the member's. A replay commits no offsets (nil member).
func (w *Worker) txnMember() (*producer.GroupMember, <-chan struct{}, func() bool) {
	switch c := w.Commit.(type) {
	case *MemberCommitter:
		changed := c.member.Changed()
		gen, id := c.member.Current()
		return &producer.GroupMember{Group: w.EOS.Group, Generation: gen, MemberID: id, InstanceID: w.EOS.Instance}, changed,
			func() bool { return c.owns(w.Topic, w.Partition) }
	case *GroupCommitter:
		return &producer.GroupMember{Group: c.group, Generation: int32(c.generation), MemberID: c.member, InstanceID: w.EOS.Instance}, nil, nil
	}
	return nil, nil, nil
}

// transactOnce writes the batch's rows and dead letters and commits next
// in the member's next transaction, with its other partitions' batches
// (sink.Kafka.Transact: one transaction per commit cycle). Rows the brokers refuse for their size leave the
// batch as dead_letter.on_error says, its files are written again
// without them (same names), and the transaction is tried again.
func (w *Worker) transactOnce(ctx context.Context, b *openBatch, last int64, member *producer.GroupMember) error {
	for {
		if !w.EOS.Kafka.InCycle(b.txn) {
			rows, sources, letters := w.notInKafka(b)
			batch := &sink.Batch{Topic: w.Topic, Partition: w.Partition, First: b.first, Last: last, Schema: w.Decoder.Schema(),
				Rows: rows, Sources: sources, Prefix: w.Prefix, ValidText: true, TopicID: w.TopicID, Held: b.held}
			var also func(context.Context) error
			if w.EOS.Dead != nil && len(letters) > 0 {
				dead := &deadBatch{Topic: w.Topic, Partition: w.Partition, First: b.first, Last: last, Prefix: w.Prefix, Letters: letters}
				also = func(ctx context.Context) error { return w.EOS.Dead.writeDeadLetters(ctx, dead) }
			}
			b.txn = &sink.TxnPart{Batch: batch, Also: also, Member: member,
				Offset: producer.Offset{Topic: w.Topic, Partition: int32(w.Partition), Offset: w.kafkaNext(last), Metadata: start.WithFrom(commitTimeMeta(time.Now()), b.first)}}
		}
		// A part a cycle took already (a stop under it) is not written
		// again: Transact waits for that cycle's outcome.
		batch := b.txn.Batch
		err := w.EOS.Kafka.Transact(ctx, b.txn)
		if errors.Is(err, sink.ErrCycleAborted) {
			continue // another partition's batch failed the member's transaction
		}
		refused := sink.AsRowErrors(err)
		if refused == nil {
			return err
		}
		if b != &w.batch {
			// A batch ahead (ahead.go): its refused rows leave it, and its
			// files are written again, in the worker's goroutine.
			return &errRefusedAhead{err}
		}
		// The refusals name rows of what went to Kafka; the batch holds
		// the rows the Kafka output skipped before them.
		skipped := len(b.rows) - len(batch.Rows)
		for _, e := range refused {
			e.Index += skipped
		}
		whole := *batch
		whole.Rows, whole.Sources = b.rows, b.sources
		if err := w.refuse(&whole, refused); err != nil {
			return err
		}
		b.wroteBy, b.deadBy = 0, 0
		if err := w.deliver(ctx, last, false); err != nil {
			return err
		}
	}
}

// notInKafka is the batch's rows, their sources and its dead letters from
// the Kafka output's own position on (inKafka, the group's offset its
// transactions committed, read when the partition started): a partition
// starts at its least advanced output, and the Kafka output skips what
// it already holds, as the table skips its batches.
func (w *Worker) notInKafka(b *openBatch) ([]sink.Row, []sink.Source, []RejectedRecord) {
	rows, sources, dead := b.rows, b.sources, b.dead
	if b.first >= w.InKafka {
		return rows, sources, dead
	}
	i := 0
	for i < len(sources) && sources[i].Offset < w.InKafka {
		i++
	}
	rows, sources = rows[i:], sources[i:]
	dead = slices.DeleteFunc(slices.Clone(dead), func(d RejectedRecord) bool { return d.Record.Offset < w.InKafka })
	if i > 0 || len(dead) < len(b.dead) {
		w.Log.Info("the Kafka output holds the start of the batch; producing the rest", "first", b.first, "kafka_next", w.InKafka, "rows_skipped", i, "dead_letters_skipped", len(b.dead)-len(dead))
	}
	return rows, sources, dead
}

// kafkaNext is the offset the group commits after a batch ending at last
// with exactly_once: the Kafka output's position, which a batch the
// partition reads again for its other outputs (started behind the Kafka
// output, at inKafka) does not move back.
func (w *Worker) kafkaNext(last int64) int64 { return max(last+1, w.InKafka) }

// catchingUp says the open batch starts before the Kafka output's
// position: it is read again for the other outputs alone. Its cut mark
// is not committed to the group, whose offset stays the Kafka output's
// position (the files' record keeps the mark, and a table takes a batch
// whatever its cut); committed, it would move the group back, and a
// start after a crash would produce again what the Kafka output holds.
func (w *Worker) catchingUp() bool { return w.EOS != nil && w.batch.first < w.InKafka }

// KafkaOwn is the exactly-once Kafka output's own record of a partition
// in its positions topic: where it stands, and the first offset of the
// batch that took it there (nil when unknown).
type KafkaOwn struct {
	At   position
	From *int64
}

func (o *KafkaOwn) Position() *position {
	if o == nil {
		return nil
	}
	return &o.At
}

// waitingForCycle is logged when a stopping partition waits for the
// member's cycle that holds its batch to tell the batch's outcome.
const waitingForCycle = "the partition stopped while the member's cycle holds its batch; waiting for the cycle's outcome"

// kafkaFrom is where the exactly-once Kafka output stages from: it holds
// the partition's records before InKafka already. 0 with at least once.
func (w *Worker) kafkaFrom() int64 {
	if w.EOS == nil {
		return 0
	}
	return w.InKafka
}
