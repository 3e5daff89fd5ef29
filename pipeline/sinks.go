package pipeline

import (
	"context"

	"github.com/logstore/logstore/pipeline/decode"
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
	if deps.Sinks != nil {
		j.sinks = deps.Sinks
	} else {
		s, err := sink.New(ctx, j.cfg.Sinks, sink.Deps{KafkaBrokers: j.cfg.Kafka.Brokers, KafkaTransport: j.conn.Transport, Schema: dec.Schema()})
		if err != nil {
			return prefixed("sinks.", err)
		}
		j.sinks, files = s.All(), s.Files
	}
	for _, s := range j.sinks {
		if f, ok := s.(*sink.Files); ok {
			j.layout, j.resume = f.Layout(), filesResume{f}
		}
	}
	if t := j.cfg.DeadLetter.Topic; t != "" {
		k := newKafkaDeadLetters(j.conn, t)
		k.stats, k.log = j.stats, j.log
		j.dead = append(j.dead, k)
		j.closers = append(j.closers, k.Close)
	}
	if j.cfg.DeadLetter.Files && files != nil {
		j.dead = append(j.dead, fileDeadLetters{files})
	}
	return nil
}
