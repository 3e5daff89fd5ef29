// Package start decides where a partition starts reading when a member
// takes it, and says why. Everything known about the partition is weighed
// here and nowhere else: the group's committed offset and its cut mark, the
// output's own record of where it stands (the files' resume record, or the
// table's positions when there are no files), whether the group's offset is
// the exactly-once Kafka output's own position (committed in its
// transactions), kafka.start_offset, a backfill's range and the topic's id.
// The job gathers those facts (one request per topic where it can) and
// carries out what the decision asks; this package does no I/O of its own
// except the log bounds of a recreated topic, asked through Known.Log.
//
// The rule: a partition starts at the position of its least advanced
// output, and every output skips what it already holds.
//
//   - The group's offset is the position, unless an output's record is
//     ahead of it (the group lost its offsets: expired, deleted, reset; or a
//     batch was written and its commit was not): reading from the group's
//     offset then would write records the output holds under other names.
//     The files' record is written once every output holds a batch, so it is
//     where the least advanced output stands; without files the table's
//     position stands in for it.
//   - A cut mark, in the group's offset or in the files' record (a batch
//     being written), is re-cut at exactly its last offset, with the layout
//     it was cut with, unless a commit is past it.
//   - With exactly_once, the group's offset is the Kafka output's own
//     position. The table commits a batch before the transaction, so a table
//     ahead of the group is ahead of the Kafka output: the group's offset
//     decides and the table skips the batches it holds.
//   - With exactly_once and no group offset, the job's record in the
//     Kafka output's positions topic stands in for it: the record of the
//     job's group (or of the group sinks.kafka.adopt_positions_of names),
//     of the topic now (see KafkaRecord). Another group's record is
//     another job's and is not taken.
//   - A topic id other than the one recorded (a topic deleted and created
//     again, numbered from 0 again) — by the output's record, the group's
//     cut mark or the job's record in the positions topic — makes
//     kafka.on_offset_out_of_range decide: fail stops, earliest reads the
//     new topic from its start, latest from its end.
//   - With no offset and no record, kafka.start_offset decides.
//
// A position outside the log (retention deleted it, the log was
// truncated) is found by the partition's first fetch and handled there by
// kafka.on_offset_out_of_range, as the same answer is mid-run.
package start

import (
	"cmp"
	"fmt"
	"time"
)

// Record is where an output says it stands for one partition.
type Record struct {
	First, Last int64 // the last batch it holds (or is writing, with Mark)
	Next        int64 // Last+1; First while Mark is set
	// TopicID is Kafka's id of the topic the record's offsets are of; ""
	// when the record is older than ids.
	TopicID string
	// Mark is the cut mark of a batch being written (files only): the
	// batch First..Last was cut and some of its files may be stored.
	Mark    string
	Written time.Time
}

// Known is everything known about a partition when it starts.
type Known struct {
	Topic     string
	Partition int
	// TopicID is Kafka's id of the topic now; "" when the brokers keep
	// none (then no id is compared).
	TopicID string
	// Group is the group's committed offset and its cut mark; None when
	// the group has none.
	Group Position
	// StartOffset is where kafka.start_offset (StartSetting) points; read
	// only when the group has no offset.
	StartOffset  int64
	StartSetting string
	// Files is the files' resume record, written once every output holds
	// a batch; nil when there is no files output or it holds no record.
	Files *Record
	// Table is the table's last batch, for a job without files: it stands
	// in for the files' record, but says where one output stands, the
	// table's own. Beside Files it is not weighed (the files' record is
	// every output's, the table's included).
	Table *Record
	// Transactions says the group's offset is the exactly-once Kafka
	// output's own position, committed in the transactions that wrote it.
	Transactions bool
	// Kafka is the partition's records in the output's positions topic
	// (sinks.kafka.positions_topic, written in the same transactions as
	// the group's offsets), the last of each group that wrote one; nil
	// when unread (the group had an offset) or it holds none. The job's
	// own (OwnRecord) stands in for a group offset that was lost, when it
	// is of the topic now.
	Kafka []KafkaRecord
	// GroupID is kafka.group: the positions topic's record of this group
	// is the job's.
	GroupID string
	// AdoptFrom is sinks.kafka.adopt_positions_of: a group whose record
	// the job takes as its own when its group has none ("": no other
	// group's is taken).
	AdoptFrom string
	// KafkaFrom is the first offset of the last batch the Kafka output's
	// transactions committed (its commit metadata, "from:<first>", or the
	// job's record in the positions topic when it stands in); nil when
	// unknown. A table after the transaction that has no record yet
	// may lack that batch (a stop before its first snapshot).
	KafkaFrom *int64
	// TableAfterTxn says a table output commits each batch after its
	// transaction (a table beside exactly-once Kafka): the group's offset
	// may then be ahead of the table by the batches of a cycle cut short
	// between the two.
	TableAfterTxn bool
	// Layout is the files layout now ("" without files).
	Layout string
	// OnOutOfRange is kafka.on_offset_out_of_range: fail, earliest, latest.
	OnOutOfRange string
	// Log asks for the partition's log start and end; called only for a
	// recreated topic.
	Log func() (first, end int64, err error)
	// Backfill says the partition is read outside the group, from
	// BackfillFrom, its manifest's range start; nothing else is weighed.
	Backfill     bool
	BackfillFrom int64
}

// Start is where a partition starts, why, and what the job must do before
// it reads.
type Start struct {
	Position
	// By names what decided: group, files, table, start_offset, backfill,
	// recreated topic.
	By string
	// Reason says why in a sentence, for the "partition starts" log line.
	Reason string
	// Warn says the reason is one an operator should look at: an output
	// and the group disagree, offsets were lost, the topic was recreated.
	Warn bool
	// Commit: the position came from an output; the group takes it at
	// once, so lag shows right and the group is a checkpoint again.
	Commit bool
	// Settle: the files' record still says it is writing a batch the
	// group is past; record it as written.
	Settle bool
	// Recreated: the topic is new; its record names it from Offset on,
	// and Lost of its records are skipped (latest).
	Recreated bool
	Lost      int64
	// InKafka is the exactly-once Kafka output's own position, -1 when
	// there is none: it leaves out the records before it.
	InKafka int64
}

// Stop is a start the job must not make: the position cannot be chosen
// without losing or duplicating records. The message says how to go on.
type Stop struct{ Err error }

func (s *Stop) Error() string { return s.Err.Error() }
func (s *Stop) Unwrap() error { return s.Err }

// noGroupOffset begins the reason for a partition the group has no offset for.
const noGroupOffset = "the group has no committed offset (expired after offsets.retention.minutes, or the group was deleted); "

// Decide is where the partition starts, with its reason (see the package
// comment for the rule). A *Stop error means the job must stop; any other
// is Known.Log's.
func Decide(k Known) (Start, error) {
	if k.Backfill {
		return Start{Position: Position{Offset: k.BackfillFrom, Cut: -1}, By: "backfill", InKafka: -1,
			Reason: fmt.Sprintf("a backfill (--from/--to) reads its range from %d, outside the group", k.BackfillFrom)}, nil
	}
	lost := k.Group.Offset
	own, stale := k.kafkaRecord()
	if own != nil {
		k.Group, k.KafkaFrom = own.At, own.From
	}
	s, err := decide(k, stale)
	if err != nil {
		return Start{}, err
	}
	if note := k.othersNote(); note != "" {
		s.Reason += note
		s.Warn = true
	}
	if own != nil {
		was := "has no committed offset (expired after offsets.retention.minutes, or deleted)"
		if lost >= 0 {
			was = fmt.Sprintf("has the offset %d", lost)
		}
		whose := ""
		if own.Group != k.GroupID {
			whose = fmt.Sprintf(" (group %q's record, taken as sinks.kafka.adopt_positions_of says)", own.Group)
		}
		s.Reason = fmt.Sprintf("the group %s; the Kafka output's positions topic, written in the same transactions, has %d%s and stands in for it: %s", was, own.At.Offset, whose, s.Reason)
		s.Warn = true
		if s.By == "group" {
			s.By = "positions topic"
			s.Commit = s.Cut < 0 // the group takes its offset back; a re-cut commits its own
		}
	}
	s.InKafka = -1
	if k.Transactions {
		s.InKafka = k.Group.Offset
	}
	if s.Cut >= 0 && s.Cut < s.Offset {
		s.Reason += fmt.Sprintf("; its cut mark at %d is below it (the batch was committed after all), so no re-cut", s.Cut)
		s.Cut = -1
	}
	if s.Cut >= 0 && s.Layout != "" && s.Layout != k.Layout {
		s.Reason += fmt.Sprintf("; the files layout changed since the cut: the batch is finished with the layout it was cut with (%s), then %s", Fingerprint(s.Layout), Fingerprint(k.Layout))
		s.Warn = true
	}
	return s, nil
}

func decide(k Known, stale *KafkaRecord) (Start, error) {
	g := k.Group
	out, whose := k.Files, "files"
	if out == nil {
		out, whose = k.Table, "table"
	}
	ok := out != nil
	var rec Record
	if ok {
		rec = *out
	}
	oldOut := ok && otherTopic(rec.TopicID, k.TopicID)
	oldGroup := g.Offset >= 0 && otherTopic(g.TopicID, k.TopicID)
	if oldOut || oldGroup || stale != nil {
		return recreated(k, rec, oldGroup, stale)
	}

	pos, reason := reconcile(g, rec, ok, whose)
	if k.Transactions && whose == "table" && ok && g.Offset >= 0 && pos.Offset > g.Offset {
		reason = fmt.Sprintf("the table holds up to %d; the group's offset %d, where the Kafka output stands (committed in its transactions), is behind it: "+
			"starting there, the table skips what it holds", rec.Last, g.Offset)
		pos = g
	}
	keepGroup := false // the group's offset stays: it is the Kafka output's record
	if k.TableAfterTxn && ok && g.Offset >= 0 && pos == g {
		switch {
		case whose == "table" && rec.Next < g.Offset:
			pos, keepGroup = Position{Offset: rec.Next, Cut: -1}, true
			reason = fmt.Sprintf("the group's offset %d, where the Kafka output stands (committed in its transactions), is ahead of the table, which holds up to %d: "+
				"the job stopped between a transaction and the table's snapshot; starting after the table, the Kafka output skips what it holds", g.Offset, rec.Last)
		case whose == "files" && rec.Mark != "" && g.Offset > rec.Last:
			pos, keepGroup = ParseMark(rec.Mark).At(rec.Next), true
			reason = fmt.Sprintf("the group's offset %d, where the Kafka output stands, is past the batch %d-%d the files' record says is being written, "+
				"and the table commits after the transaction: re-cutting it (the files are written again under the same names, the table skips it if it holds it, "+
				"the Kafka output skips it)", g.Offset, rec.First, rec.Last)
		}
	}
	if k.TableAfterTxn && !ok && k.Layout == "" && g.Offset >= 0 && pos == g && k.KafkaFrom != nil && *k.KafkaFrom < g.Offset {
		pos, keepGroup = Position{Offset: *k.KafkaFrom, Cut: -1}, true
		reason = fmt.Sprintf("the group's offset %d, where the Kafka output stands, ends a batch from %d, and the table, which commits after the transaction, holds nothing of this partition: "+
			"writing that batch into the table (the job stopped before the table's first snapshot of it, or the table is new), the Kafka output skips it", g.Offset, *k.KafkaFrom)
	}
	if err := checkCutLayout(k.Topic, k.Partition, pos, k.Layout); err != nil {
		return Start{}, err
	}
	if pos != g {
		s := Start{Position: pos, By: whose, Commit: !keepGroup, Warn: true, Reason: reason}
		if reason == "" {
			s.Warn = false
			s.Reason = fmt.Sprintf("the pending cut is in the output whole (%s %d-%d, the group's cut mark; its commit was not made); continuing after it", holds(whose), g.Offset, g.Cut)
		}
		return s, nil
	}

	s := Start{Position: g, By: "group", Reason: reason}
	if ok && rec.Mark != "" && g.Offset > rec.Last {
		// The group commits a batch's next only once every output holds
		// it, so a record still pending was cut short between that commit
		// and the record (a kill after EndTxn). Left pending, it would have
		// the batch cut and written again once the group's offsets are lost.
		s.Settle = true
		s.Reason = fmt.Sprintf("the group's committed offset; the files' resume record still says the batch %d-%d is being written, and the group is past it: recorded as written", rec.First, rec.Last)
		return s, nil
	}
	if g.Offset < 0 {
		s.Position, s.By = Position{Offset: k.StartOffset, Cut: -1}, "start_offset"
		s.Reason = fmt.Sprintf("the group has no committed offset and no output records a position: kafka.start_offset %s", cmp.Or(k.StartSetting, "earliest"))
		return s, nil
	}
	if s.Reason != "" {
		return s, nil
	}
	switch {
	case g.Cut >= 0:
		s.Reason = fmt.Sprintf("the group's cut mark: the batch %d-%d was cut and not confirmed; re-cutting it there", g.Offset, g.Cut)
	case ok && rec.Next < g.Offset:
		s.Reason = fmt.Sprintf("the group's committed offset; %s up to %d (the batches after it wrote nothing there)", holds(whose), rec.Last)
	case ok:
		s.Reason = fmt.Sprintf("the group's committed offset; %s up to %d", holds(whose), rec.Last)
	default:
		s.Reason = "the group's committed offset"
	}
	return s, nil
}

// reconcile weighs the group's position and an output's record: the
// furthest of the two wins. The output is ahead only when the group lost
// its offsets or a batch was written but its commit was not; reading from
// the group's offset then would write records the output already holds
// under other names. The group is ahead when its last batches wrote
// nothing (all filtered). A pending cut is kept when the group wins, or
// when the output says it was writing that batch and the group lost it.
// reason is "" when the two agree.
func reconcile(group Position, out Record, ok bool, whose string) (pos Position, reason string) {
	pos = Position{Offset: out.Next, Cut: -1}
	if ok && out.Mark != "" {
		// A batch was being written: re-cut it, unless the group holds the
		// same mark or is past it.
		pos = ParseMark(out.Mark).At(out.Next)
		if pos.Cut >= 0 && (group.Offset < out.Next || group.Offset == out.Next && group.Cut < 0) {
			if group.Offset < 0 {
				return pos, noGroupOffset + "re-cutting the batch the output was writing"
			}
			return pos, "the group lost the pending cut the output was writing; re-cutting it so no record is written twice"
		}
		return group, ""
	}
	if !ok || out.Next <= group.Offset {
		return group, ""
	}
	switch {
	case group.Offset < 0:
		return pos, noGroupOffset + fmt.Sprintf("resuming after the last batch in the %s, %d", whose, out.Last)
	case group.Cut >= 0 && out.First == group.Offset && out.Next == group.Cut+1:
		return pos, "" // the pending cut was written whole; its commit was not
	}
	return pos, fmt.Sprintf("%s up to %d; the group's committed offset %d is behind it: following the output so no record is written twice "+
		"(to read again on purpose, run a backfill with --from/--to)", holds(whose), out.Last, group.Offset)
}

// holds is the output's name with its verb.
func holds(whose string) string {
	if whose == "table" {
		return "the table holds"
	}
	return "the files hold"
}

// checkCutLayout stops a re-cut whose mark names its layout by fingerprint
// alone (a layout too long for the mark) when that is not the current
// layout: the layout it was cut with is unknown, and re-cutting under the
// current one would write other names beside the files already stored.
func checkCutLayout(topic string, partition int, pos Position, layout string) error {
	if pos.Cut < 0 || pos.Layout != "" || pos.Fingerprint == "" || layout == "" || pos.Fingerprint == Fingerprint(layout) {
		return nil
	}
	return &Stop{fmt.Errorf("%s/%d: the pending cut %d-%d was made with files layout %s, recorded by its fingerprint alone (its JSON is over %d bytes), "+
		"and sinks.files now gives layout %s: restore the partition_by, max_file_bytes and parquet settings it was cut with so the batch is written "+
		"again under the same names, then change them", topic, partition, pos.Offset, pos.Cut, pos.Fingerprint, MaxMarkBytes, Fingerprint(layout))}
}

// otherTopic says a position recorded for topic id was for another topic
// of the same name than now; unknown ids ("") compare equal.
func otherTopic(recorded, now string) bool {
	return recorded != "" && now != "" && recorded != now
}

// recreated is where a partition starts when the output's record, the
// group's pending cut (oldGroup) or the job's record in the positions
// topic (stale) names another topic id than the topic has now: the topic
// was deleted and created again, and numbers its records from 0, so an
// offset of the old one says nothing of the new. The group's offset of
// the new topic (a plain commit, or the job's record in the positions
// topic of the topic now) is followed; else kafka.on_offset_out_of_range
// decides, as for a committed offset past the log's end: fail stops,
// earliest reads the new topic from its start, latest from its end,
// skipping its records so far.
func recreated(k Known, out Record, oldGroup bool, stale *KafkaRecord) (Start, error) {
	g := k.Group
	next, recorded := max(out.Next, g.Offset), cmp.Or(out.TopicID, g.TopicID)
	if stale != nil {
		next, recorded = max(next, stale.At.Offset), cmp.Or(recorded, stale.TopicID)
	}
	if !oldGroup && g.Offset >= 0 {
		return Start{Position: g, By: "group", Warn: true, Reason: fmt.Sprintf("the output's record (topic id %s) is of an earlier topic of this name (deleted and created again; "+
			"now %s); following the group's offset, of the topic now", recorded, k.TopicID)}, nil
	}
	if k.Log == nil {
		return Start{}, fmt.Errorf("%s/%d: the topic was recreated and its log's bounds are unknown", k.Topic, k.Partition)
	}
	first, end, err := k.Log()
	if err != nil {
		return Start{}, err
	}
	if k.OnOutOfRange == "fail" {
		return Start{}, &Stop{fmt.Errorf("%s/%d: the topic was deleted and recreated: its id is %s now, and the position remembered, next %d, is of topic id %s; "+
			"the new topic holds [%d, %d): set kafka.on_offset_out_of_range: earliest to read it from %d, or latest to continue from %d "+
			"(a recreated topic numbers its records from 0 again: move the old files or point sinks.files.url elsewhere first, or they are overwritten)",
			k.Topic, k.Partition, k.TopicID, next, recorded, first, end, first, end)}
	}
	to, lost, from := first, int64(0), "start"
	if k.OnOutOfRange == "latest" {
		to, lost, from = end, end-first, "end"
	}
	return Start{Position: Position{Offset: to, Cut: -1}, By: "recreated topic", Warn: true, Commit: true, Recreated: true, Lost: lost,
		Reason: fmt.Sprintf("the topic was deleted and recreated (id %s now; the position remembered, next %d, is of id %s): "+
			"kafka.on_offset_out_of_range %s reads the new topic, [%d, %d), from its %s; %d records skipped", k.TopicID, next, recorded, k.OnOutOfRange, first, end, from, lost)}, nil
}
