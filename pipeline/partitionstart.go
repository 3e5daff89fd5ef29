package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/pipeline/worker"
)

// startOf is where a partition the member takes starts: package start
// decides from what is known (the group's position, the output's record,
// start_offset, the topic's id), and startOf carries out what the decision
// asks before the partition is read — a recreated topic's record names
// the new topic, a pending record the group is past is settled, and the
// group takes a position that came from an output.
func (j *Job) startOf(ctx context.Context, topic string, partition int, group position, kafkaRecords []start.KafkaRecord, from *int64, fresh int64, topicID string, commit worker.Committer) (start.Start, error) {
	k := start.Known{
		Topic: topic, Partition: partition, TopicID: topicID,
		Group: group, Kafka: kafkaRecords, GroupID: j.cfg.Kafka.Group, AdoptFrom: j.adoptPositionsOf(),
		KafkaFrom: from, StartOffset: fresh, StartSetting: j.cfg.Kafka.StartOffset,
		Transactions: j.eos != nil, TableAfterTxn: j.eos != nil && j.cfg.Sinks.Iceberg != nil, Layout: j.layout, OnOutOfRange: j.cfg.Kafka.OnOffsetOutOfRange,
		Log: func() (int64, int64, error) { return j.logBounds(ctx, topic, partition) },
	}
	var out worker.ResumeRecord
	if j.resume != nil {
		var ok bool
		var err error
		if out, ok, err = j.resume.LoadResume(ctx, topic, partition); err != nil {
			return start.Start{}, err
		}
		if ok {
			if j.resume.OfEveryOutput() {
				k.Files = out.Known()
			} else {
				k.Table = out.Known()
			}
		}
	}
	s, err := start.Decide(k)
	if _, stop := errors.AsType[*start.Stop](err); stop {
		return s, worker.FatalError{Err: err}
	}
	if err != nil {
		return s, err
	}
	if s.Recreated {
		j.stats.OffsetResets.Add(1)
		j.stats.LostRecords.Add(s.Lost)
		if j.resume != nil {
			r := worker.ResumeRecord{Topic: topic, Partition: partition, First: s.Offset, Last: s.Offset - 1, Next: s.Offset, TopicID: topicID, Written: time.Now().UTC()}
			if err := j.resume.SaveResume(ctx, r); err != nil {
				return s, err
			}
		}
	}
	if s.Settle {
		out.Next, out.Mark, out.Written = out.Last+1, "", time.Now().UTC()
		if err := j.resume.SaveResume(ctx, out); err != nil {
			return s, fmt.Errorf("settling the resume record of %s/%d (the group is past its pending cut): %w", topic, partition, err)
		}
	}
	if s.Commit {
		if err := commit.Commit(ctx, topic, partition, s.Offset, ""); err != nil {
			return s, err
		}
	}
	return s, nil
}

// logBounds is the partition's log start and end.
func (j *Job) logBounds(ctx context.Context, topic string, partition int) (first, end int64, err error) {
	starts, err := listOffsets(ctx, j.conn.Client, topic, []int{partition}, kafka.ReadUncommitted, kafka.FirstOffsetOf)
	if err != nil {
		return 0, 0, err
	}
	ends, err := listOffsets(ctx, j.conn.Client, topic, []int{partition}, kafka.ReadUncommitted, kafka.LastOffsetOf)
	if err != nil {
		return 0, 0, err
	}
	return starts[partition], ends[partition], nil
}

// logStart is the one line a partition's start is logged with: where, and why.
func (j *Job) logStart(ctx context.Context, topic string, partition int, s start.Start) {
	level := slog.LevelInfo
	if s.Warn {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("topic", topic), slog.Int("partition", partition), slog.Int64("offset", s.Offset)}
	if s.Cut >= 0 {
		attrs = append(attrs, slog.Int64("cut", s.Cut))
	}
	attrs = append(attrs, slog.String("by", s.By), slog.String("reason", s.Reason))
	j.log.LogAttrs(ctx, level, "partition starts", attrs...)
}

// topicID is Kafka's id of topic, "" when the brokers keep none.
func (j *Job) topicID(ctx context.Context, topic string) (string, error) {
	if j.client == nil {
		return "", nil
	}
	return j.client.TopicID(ctx, topic)
}
