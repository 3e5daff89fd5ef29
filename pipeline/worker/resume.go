package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/sink"
)

// ResumeRecord is where the output stands for one partition: the last
// batch every sink took. The group's committed offsets are not a durable
// checkpoint (Kafka deletes them when a group stays empty past
// offsets.retention.minutes, 7 days by default; a group can be deleted),
// so the output keeps its own, as Spark keeps its checkpoint in storage.
type ResumeRecord struct {
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

// known is the record as package start weighs it.
func (r ResumeRecord) Known() *start.Record {
	return &start.Record{First: r.First, Last: r.Last, Next: r.Next, TopicID: r.TopicID, Mark: r.Mark, Written: r.Written}
}

// ResumeStore keeps one resume record per partition.
type ResumeStore interface {
	SaveResume(ctx context.Context, r ResumeRecord) error
	// LoadResume returns the partition's record; ok is false when the
	// output has none.
	LoadResume(ctx context.Context, topic string, partition int) (r ResumeRecord, ok bool, err error)
	// OfEveryOutput says the record is written once every output holds
	// the batch, so it is the least advanced output's position; else it
	// is one output's own (the table's snapshot summary).
	OfEveryOutput() bool
}

// FilesResume keeps resume records in the files sink, at
// _logstore/resume/{topic}/{partition}.json below its root (a folder table
// readers skip), overwritten with each batch.
type FilesResume struct{ Files *sink.Files }

func ResumeName(topic string, partition int) string {
	return "_logstore/resume/" + topic + "/" + strconv.Itoa(partition) + ".json"
}

func (f FilesResume) SaveResume(ctx context.Context, r ResumeRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return f.Files.PutMeta(ctx, ResumeName(r.Topic, r.Partition), b)
}

func (FilesResume) OfEveryOutput() bool { return true }

func (f FilesResume) LoadResume(ctx context.Context, topic string, partition int) (ResumeRecord, bool, error) {
	var r ResumeRecord
	b, err := f.Files.GetMeta(ctx, ResumeName(topic, partition))
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

// SaveResume records, once every sink has the batch first..last and before
// last+1 is committed, that the output holds it; with writing set, after
// the batch's mark is committed and before any sink writes it, that the
// output is writing it.
func (w *Worker) saveResume(ctx context.Context, first, last int64, writing bool) error {
	if w.Resume == nil || w.Prefix != "" {
		return nil
	}
	r := ResumeRecord{Topic: w.Topic, Partition: w.Partition, First: first, Last: last, Next: last + 1, TopicID: w.TopicID, Written: time.Now().UTC()}
	if w.using != "" {
		r.Layout = start.Fingerprint(w.using)
	}
	if writing {
		r.Next, r.Mark = first, start.MarkOf(last, w.TopicID, w.using)
	}
	return w.retrySink(ctx, "writing the resume record", OpFiles, func() error { return w.Resume.SaveResume(ctx, r) })
}
