package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/sink"
)

// resumeRecord is where the output stands for one partition: the last
// batch every sink took. The group's committed offsets are not a durable
// checkpoint (Kafka deletes them when a group stays empty past
// offsets.retention.minutes, 7 days by default; a group can be deleted),
// so the output keeps its own, as Spark keeps its checkpoint in storage.
type resumeRecord struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	First     int64  `json:"first"`
	Last      int64  `json:"last"`
	Next      int64  `json:"next"` // Last+1: where a run without a committed offset resumes
	Layout    string `json:"layout,omitempty"`
	// TopicID is Kafka's id of the topic (KIP-516): a topic deleted and
	// created again under the same name has another, and numbers its
	// records from 0 again. Records of older versions hold none and are
	// taken as the current topic's; the next batch's record names it.
	TopicID string    `json:"topic_id,omitempty"`
	Written time.Time `json:"written"`
	// Mark is set while the batch First..Last is being written: its cut
	// mark (as committed to the group), and Next is First. The group's
	// copy of the mark goes with its offsets; this one lets a run that
	// resumes from the output re-cut exactly that batch, so files already
	// stored are overwritten under their names, not written again under
	// others.
	Mark string `json:"mark,omitempty"`
}

// resumeStore keeps one resume record per partition.
type resumeStore interface {
	saveResume(ctx context.Context, r resumeRecord) error
	// loadResume returns the partition's record; ok is false when the
	// output has none.
	loadResume(ctx context.Context, topic string, partition int) (r resumeRecord, ok bool, err error)
	// ofEveryOutput says the record is written once every output holds
	// the batch, so it is the least advanced output's position; else it
	// is one output's own (the table's snapshot summary).
	ofEveryOutput() bool
}

// filesResume keeps resume records in the files sink, at
// _logstore/resume/{topic}/{partition}.json below its root (a folder table
// readers skip), overwritten with each batch.
type filesResume struct{ files *sink.Files }

func resumeName(topic string, partition int) string {
	return "_logstore/resume/" + topic + "/" + strconv.Itoa(partition) + ".json"
}

func (f filesResume) saveResume(ctx context.Context, r resumeRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return f.files.PutMeta(ctx, resumeName(r.Topic, r.Partition), b)
}

func (filesResume) ofEveryOutput() bool { return true }

func (f filesResume) loadResume(ctx context.Context, topic string, partition int) (resumeRecord, bool, error) {
	var r resumeRecord
	b, err := f.files.GetMeta(ctx, resumeName(topic, partition))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("reading the resume record of %s/%d (it needs read access, s3:GetObject, on _logstore/ below sinks.files.url): %w", topic, partition, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("the resume record of %s/%d is not valid: %w", topic, partition, err)
	}
	return r, true, nil
}

// noGroupOffset begins the note for a partition the group has no offset for.
const noGroupOffset = "the group has no committed offset (expired after offsets.retention.minutes, or the group was deleted); "

// reconcile decides where a partition starts from the group's position
// and the output's resume record. The rule: the furthest of the two wins.
// The output is ahead only when the group lost its offsets (expired,
// deleted, reset) or a batch was written but its commit was not; reading
// from the group's offset then would write records the output already
// holds under other names. The group is ahead when its last batches wrote
// no file (all filtered). A pending cut is kept when the group wins, or
// when the output says it was writing that batch and the group lost it.
// note is what to log when the two disagree, "" when they do not.
func reconcile(group position, out resumeRecord, ok bool) (pos position, note string) {
	pos = position{Offset: out.Next, Cut: -1}
	if ok && out.Mark != "" {
		// A batch was being written: re-cut it, unless the group holds the
		// same mark or is past it.
		pos = parseMark(out.Mark).at(out.Next)
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
		return pos, noGroupOffset + "resuming after the last batch in the output"
	case group.Cut >= 0 && out.First == group.Offset && out.Next == group.Cut+1:
		return pos, "" // the pending cut was written whole; its commit was not
	}
	return pos, "the group's committed offset is behind the output; following the output so no record is written twice (to read again on purpose, run a backfill with --from/--to)"
}

// saveResume records, once every sink has the batch first..last and before
// last+1 is committed, that the output holds it; with writing set, after
// the batch's mark is committed and before any sink writes it, that the
// output is writing it.
func (w *worker) saveResume(ctx context.Context, last int64, writing bool) error {
	if w.resume == nil || w.prefix != "" {
		return nil
	}
	r := resumeRecord{Topic: w.topic, Partition: w.partition, First: w.batch.first, Last: last, Next: last + 1, TopicID: w.topicID, Written: time.Now().UTC()}
	if w.using != "" {
		r.Layout = fingerprint(w.using)
	}
	if writing {
		r.Next, r.Mark = w.batch.first, markOf(last, w.topicID, w.using)
	}
	return w.retrySink(ctx, "writing the resume record", opFiles, func() error { return w.resume.saveResume(ctx, r) })
}

// resumed is where a partition starts when the output's resume record
// wins over the group's position (see reconcile), or when either is of
// another topic of the same name (see recreated), else nil. topicID is the
// topic's id now ("" when the brokers keep none: nothing is compared).
func (j *Job) resumed(ctx context.Context, topic string, partition int, group position, topicID string) (*position, error) {
	var out resumeRecord
	var ok bool
	if j.resume != nil {
		var err error
		if out, ok, err = j.resume.loadResume(ctx, topic, partition); err != nil {
			return nil, err
		}
	}
	oldOut := ok && otherTopic(out.TopicID, topicID)
	oldGroup := group.Offset >= 0 && otherTopic(group.TopicID, topicID)
	if oldOut || oldGroup {
		return j.recreated(ctx, topic, partition, group, out, oldGroup, topicID)
	}
	pos, note := reconcile(group, out, ok)
	if j.eos != nil && j.resume != nil && !j.resume.ofEveryOutput() && group.Offset >= 0 && pos.Offset > group.Offset {
		// Two outputs record their own position: the table in its
		// snapshots, the Kafka output in the group's offset its
		// transactions commit. The least advanced one decides (the table
		// commits a batch before its transaction, so a stop between them
		// leaves it ahead); the table skips the batches it holds.
		note = fmt.Sprintf("the table holds up to %d; the Kafka output (the group's offset, committed in its transactions) is behind it at %d: starting there, the table skips what it holds", out.Last, group.Offset)
		pos = group
	}
	if err := checkCutLayout(topic, partition, pos, j.layout); err != nil {
		return nil, err
	}
	if pos == group {
		if ok && out.Mark != "" && group.Offset > out.Last {
			return nil, j.settleResume(ctx, out)
		}
		if note != "" {
			j.log.Info(note, "topic", topic, "partition", partition)
		}
		return nil, nil
	}
	log := j.log.With("topic", topic, "partition", partition, "group_offset", group.Offset, "group_cut", group.Cut, "output_next", out.Next, "output_written", out.Written)
	if note != "" {
		log.Warn(note)
	} else {
		log.Info("the pending cut is in the output whole; continuing after it")
	}
	return &pos, nil
}

// settleResume rewrites a pending resume record the group is past as
// written: the group commits a batch's next only once every sink holds
// it (with exactly_once, in the transaction that wrote it), so a record
// still pending was cut short between that commit and the record (a kill
// after EndTxn). Left pending, it would have the batch cut and written
// again once the group's offsets are lost, and a second transaction
// produce its rows twice.
func (j *Job) settleResume(ctx context.Context, out resumeRecord) error {
	out.Next, out.Mark, out.Written = out.Last+1, "", time.Now().UTC()
	if err := j.resume.saveResume(ctx, out); err != nil {
		return fmt.Errorf("settling the resume record of %s/%d (the group is past its pending cut): %w", out.Topic, out.Partition, err)
	}
	j.log.Info("the resume record's pending cut is committed; recorded as written", "topic", out.Topic, "partition", out.Partition, "last", out.Last)
	return nil
}

// otherTopic says a position recorded for topic id was for another topic
// of the same name than now; unknown ids ("") compare equal.
func otherTopic(recorded, now string) bool {
	return recorded != "" && now != "" && recorded != now
}

// recreated is where a partition starts when the output's resume record,
// or the group's pending cut (oldGroup), names another topic id than the
// topic has now: the topic was deleted and created again, and numbers its
// records from 0, so an offset of the old one says nothing of the new.
// The group's offset of the new topic (a plain commit) is followed; else
// kafka.on_offset_out_of_range decides, as for a committed offset past the
// log's end: fail stops, earliest reads the new topic from its start,
// latest from its end, counting the new records it skips in
// logstore_records_lost_total. The output's record then names the new topic.
func (j *Job) recreated(ctx context.Context, topic string, partition int, group position, out resumeRecord, oldGroup bool, topicID string) (*position, error) {
	log := j.log.With("topic", topic, "partition", partition, "topic_id", topicID, "output_topic_id", out.TopicID, "output_next", out.Next,
		"group_offset", group.Offset, "group_topic_id", group.TopicID)
	if !oldGroup && group.Offset >= 0 {
		log.Warn("the output's resume record is of an earlier topic of this name (deleted and created again); following the group's offset, of the topic now")
		return nil, nil
	}
	starts, err := listOffsets(ctx, j.conn.Client, topic, []int{partition}, kafka.ReadUncommitted, kafka.FirstOffsetOf)
	if err != nil {
		return nil, err
	}
	ends, err := listOffsets(ctx, j.conn.Client, topic, []int{partition}, kafka.ReadUncommitted, kafka.LastOffsetOf)
	if err != nil {
		return nil, err
	}
	start, end := starts[partition], ends[partition]
	next := max(out.Next, group.Offset)
	policy := j.cfg.Kafka.OnOffsetOutOfRange
	if policy == "fail" {
		return nil, errFatal{fmt.Errorf("%s/%d: the topic was deleted and recreated: its id is %s now, and the position remembered, next %d, is of topic id %s; "+
			"the new topic holds [%d, %d): set kafka.on_offset_out_of_range: earliest to read it from %d, or latest to continue from %d "+
			"(a recreated topic numbers its records from 0 again: move the old files or point sinks.files.url elsewhere first, or they are overwritten)",
			topic, partition, topicID, next, cmp.Or(out.TopicID, group.TopicID), start, end, start, end)}
	}
	to, lost := start, int64(0)
	if policy == "latest" {
		to, lost = end, end-start
	}
	j.stats.OffsetResets.Add(1)
	j.stats.LostRecords.Add(lost)
	log.Warn("the topic was deleted and recreated; starting it as a new topic", "to", to, "lost_records", lost, "policy", policy)
	if j.resume != nil {
		r := resumeRecord{Topic: topic, Partition: partition, First: to, Last: to - 1, Next: to, TopicID: topicID, Written: time.Now().UTC()}
		if err := j.resume.saveResume(ctx, r); err != nil {
			return nil, err
		}
	}
	return &position{Offset: to, Cut: -1}, nil
}

// topicID is Kafka's id of topic, "" when the brokers keep none.
func (j *Job) topicID(ctx context.Context, topic string) (string, error) {
	if j.client == nil {
		return "", nil
	}
	return j.client.TopicID(ctx, topic)
}
