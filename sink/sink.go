package sink

import (
	"context"
	"errors"
)

// Deps is what the caller provides to build the sinks.
type Deps struct {
	// KafkaBrokers are the output cluster's bootstrap servers when
	// sinks.kafka.brokers is empty: the input cluster's.
	KafkaBrokers []string
	// Kafka is what the Kafka sink takes from the job: the dial with TLS
	// and SASL, the member's zone, the produced-bytes counters.
	Kafka KafkaDeps
	// Schema, when set, is checked against the keys that name columns.
	Schema *Schema
}

// Sinks are the configured sinks. Write hands a batch to each in turn,
// files before Kafka, and succeeds only when every one has it; only then may
// the pipeline commit the batch's offsets.
type Sinks struct {
	Files *Files // nil unless sinks.files is set; also writes dead letters
	Kafka *Kafka // nil unless sinks.kafka is set
}

// New builds the configured sinks and checks each can write (the S3 or
// folder preflight, the output topic's metadata), so a wrong bucket,
// credential or topic fails at start.
func New(ctx context.Context, cfg Config, deps Deps) (*Sinks, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Schema != nil {
		if err := cfg.CheckSchema(deps.Schema); err != nil {
			return nil, err
		}
	}
	s := &Sinks{}
	if cfg.Files != nil {
		f, err := newFiles(ctx, cfg.Files)
		if err != nil {
			return nil, err
		}
		s.Files = f
	}
	if kc := cfg.Kafka; kc != nil {
		brokers := kc.Brokers
		if len(brokers) == 0 {
			brokers = deps.KafkaBrokers
		}
		kd := deps.Kafka
		kd.CommitInterval = cfg.CommitInterval
		k, err := newKafka(kc, brokers, kd)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Kafka = k
		if err := k.Preflight(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// All lists the configured sinks, files first.
func (s *Sinks) All() []Sink {
	var all []Sink
	if s.Files != nil {
		all = append(all, s.Files)
	}
	if s.Kafka != nil {
		all = append(all, s.Kafka)
	}
	return all
}

// Write writes b to every sink, in order, and stops at the first error: a
// batch the files did not take is not produced to Kafka either, which keeps
// repeats in the at-least-once output down when the pipeline retries.
func (s *Sinks) Write(ctx context.Context, b *Batch) error {
	for _, sk := range s.All() {
		if err := sk.Write(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every sink.
func (s *Sinks) Close() error {
	var errs []error
	for _, sk := range s.All() {
		errs = append(errs, sk.Close())
	}
	return errors.Join(errs...)
}

var (
	_ Sink   = (*Sinks)(nil)
	_ Stager = (*Files)(nil)
	_ Stager = (*Kafka)(nil)
)
