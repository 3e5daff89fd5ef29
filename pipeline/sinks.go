package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/pipeline/decode"
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
			j.layout, j.resume = f.Layout(), filesResume{f}
		}
		if k, ok := s.(*sink.Kafka); ok && k.ExactlyOnce() {
			j.eos = &exactlyOnce{kafka: k, group: j.cfg.Kafka.Group, instance: j.cfg.Kafka.GroupInstanceID}
		}
	}
	if j.eos != nil {
		if err := j.ensurePositionsTopic(ctx); err != nil {
			return err
		}
		j.eos.own = j.kafkaPositions
	}
	for _, s := range j.sinks {
		if t, ok := s.(sink.TableSink); ok && j.resume == nil {
			j.resume = tableResume{t}
		}
	}
	if t := j.cfg.DeadLetter.Topic; t != "" && j.eos != nil {
		// In the output's transactions, so on its producer, which creates
		// no topics.
		if _, err := j.eos.kafka.Producer().Partitions(ctx, t); err != nil {
			return fmt.Errorf("dead_letter.topic: %q: %w (with sinks.kafka.delivery: exactly_once dead letters go in the output's transactions, and the topic must exist)", t, err)
		}
		j.eos.dead = &kafkaDeadLetters{p: j.eos.kafka.Producer(), topic: t, stats: j.stats, log: j.log}
		j.dead = append(j.dead, j.eos.dead)
	} else if t != "" {
		k, err := newKafkaDeadLetters(j.conn, t, j.rack.Rack, j.produceInZone(), produced)
		if err != nil {
			return err
		}
		k.stats, k.log = j.stats, j.log
		j.dead = append(j.dead, k)
		j.closers = append(j.closers, k.Close)
	}
	if j.cfg.DeadLetter.Files && files != nil {
		j.dead = append(j.dead, fileDeadLetters{files})
	}
	return nil
}

// transactionalID is the member's transactional id with
// sinks.kafka.delivery: exactly_once (see exactlyOnce); "" without a group.
func (j *Job) transactionalID() string {
	if j.cfg.Kafka.Group == "" {
		return ""
	}
	return transactionalID(j.cfg.Kafka.Group, j.cfg.Kafka.GroupInstanceID)
}

// produceInZone says whether producers place keyless records in the
// member's zone by default: when the zone matched a broker rack, unless
// the job runs rack-blind (the baseline for measurement).
func (j *Job) produceInZone() bool {
	return j.rack.Matched && j.cfg.Rack.Mode != rack.ModeBlind
}
