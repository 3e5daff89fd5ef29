package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/rack"
	"github.com/logstore/logstore/sink"
)

// openSinks builds the configured sinks (running their preflight checks)
// and the dead-letter destinations.
func (j *Job) openSinks(ctx context.Context, deps Deps) error {
	dec, err := decode.New(j.cfg.Schema)
	if err != nil {
		return prefixed("schema.", err)
	}
	j.decoder = dec // safe for every partition worker at once
	var files *sink.Files
	// The Kafka sink and the dead-letter topic count what they produce
	// together, by locality.
	produced := &producer.Stats{}
	j.metrics.watchProduce(produced, j.rack.Rack)
	if deps.Sinks != nil {
		j.sinks = deps.Sinks
	} else {
		s, err := sink.New(ctx, j.cfg.Sinks, sink.Deps{KafkaBrokers: j.cfg.Kafka.Brokers, Schema: dec.Schema(), Kafka: sink.KafkaDeps{
			Dial: j.conn.produceDial(), Rack: j.rack.Rack, RackMatched: j.produceInZone(), Stats: produced, Log: j.log,
			TransactionalID: j.transactionalID(),
		}})
		if err != nil {
			return prefixed("sinks.", err)
		}
		j.sinks, files = s.All(), s.Files
		if tc := j.cfg.Sinks.Iceberg; tc != nil {
			t, err := sink.OpenTable(ctx, tc, dec.Schema(), j.log)
			if err != nil {
				s.Close()
				return prefixed("sinks.", err)
			}
			j.sinks = append(j.sinks, t)
		}
	}
	// The commit cycle's order comes from how each output commits (by
	// name, by snapshot, at least once, by transaction: the last is the
	// batch's record), whatever the outputs are.
	j.sinks = slices.Clone(j.sinks)
	sink.OrderByCommit(j.sinks)
	for _, s := range j.sinks {
		if f, ok := s.(*sink.Files); ok {
			j.layout, j.resume = f.Layout(), worker.FilesResume{Files: f}
		}
		if k, ok := s.(*sink.Kafka); ok && k.ExactlyOnce() {
			j.eos = &worker.ExactlyOnce{Kafka: k, Group: j.cfg.Kafka.Group, Instance: j.cfg.Kafka.GroupInstanceID}
		}
	}
	if j.eos != nil {
		if err := j.ensurePositionsTopic(ctx); err != nil {
			return err
		}
		j.eos.Own = j.kafkaPositions
	}
	for _, s := range j.sinks {
		if t, ok := s.(sink.TableSink); ok && j.resume == nil {
			j.resume = worker.TableResume{Table: t}
		}
	}
	if t := j.cfg.DeadLetter.Topic; t != "" && j.eos != nil {
		// In the output's transactions, so on its producer, which creates
		// no topics.
		if _, err := j.eos.Kafka.Producer().Partitions(ctx, t); err != nil {
			return fmt.Errorf("dead_letter.topic: %q: %w (with sinks.kafka.delivery: exactly_once dead letters go in the output's transactions, and the topic must exist)", t, err)
		}
		j.eos.Dead = worker.NewKafkaDeadLetters(j.eos.Kafka.Producer(), t, j.stats, j.log)
		j.dead = append(j.dead, j.eos.Dead)
	} else if t != "" {
		k, err := newKafkaDeadLetters(j.conn, t, j.rack.Rack, j.produceInZone(), produced, j.stats, j.log)
		if err != nil {
			return err
		}
		j.dead = append(j.dead, k)
		j.closers = append(j.closers, k.Close)
	}
	if j.cfg.DeadLetter.Files && files != nil {
		j.dead = append(j.dead, worker.FileDeadLetters{Files: files})
	}
	return nil
}

// transactionalID is the member's transactional id with
// sinks.kafka.delivery: exactly_once (see worker.ExactlyOnce); "" without a group.
func (j *Job) transactionalID() string {
	if j.cfg.Kafka.Group == "" {
		return ""
	}
	return worker.TransactionalID(j.cfg.Kafka.Group, j.cfg.Kafka.GroupInstanceID)
}

// produceInZone says whether producers place keyless records in the
// member's zone by default: when the zone matched a broker rack, unless
// the job runs rack-blind (the baseline for measurement).
func (j *Job) produceInZone() bool {
	return j.rack.Matched && j.cfg.Rack.Mode != rack.ModeBlind
}

// newKafkaDeadLetters produces to topic on the input cluster; keyless
// letters go to partitions led in rack when inZone (produced counts the
// bytes; stats the letters cut or lost, log says why).
func newKafkaDeadLetters(conn *Clients, topic, rack string, inZone bool, produced *producer.Stats, stats *worker.Stats, log *slog.Logger) (*worker.KafkaDeadLetters, error) {
	part := producer.Sticky
	if inZone {
		part = producer.RackAware
	}
	p, err := newProducer(conn, producer.Config{
		Rack: rack, Partitioner: part, Stats: produced,
		Linger: 20 * time.Millisecond,
		// The dead-letter topic may not exist on a fresh cluster.
		AutoCreateTopics: true,
	})
	if err != nil {
		return nil, fmt.Errorf("dead-letter topic %s: %w", topic, err)
	}
	return worker.NewKafkaDeadLetters(p, topic, stats, log), nil
}
