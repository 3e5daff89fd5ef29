package worker

import (
	"time"

	"github.com/logstore/logstore/sink"
)

// Retry operations (logstore_retries_total's op) and commit steps
// (logstore_commit_duration_seconds' step).
const (
	OpFetch      = "fetch"
	OpCommit     = "commit"
	OpFiles      = "files"
	OpKafka      = "kafka"
	OpIceberg    = "iceberg"
	OpDeadLetter = "dead_letter"
	StepCut      = "cut"  // the mark (c, "cut:b")
	StepNext     = "next" // b+1
)

// Metrics is what a worker tells the job's metrics (pipeline.Metrics):
// retries by operation, and how long commit steps and sinks' writes took.
type Metrics interface {
	Retried(op string)
	TimeCommit(step string, start time.Time)
	TimeFlush(SinkKind string, start time.Time)
}

// The worker's hooks; a worker without metrics (tests) records nothing.

func (w *Worker) retried(op string) {
	if w.Metrics != nil {
		w.Metrics.Retried(op)
	}
}

func (w *Worker) retrier(op string) func() {
	return func() { w.retried(op) }
}

func (w *Worker) timeCommit(step string, start time.Time) {
	if w.Metrics != nil {
		w.Metrics.TimeCommit(step, start)
	}
}

func (w *Worker) timeFlush(SinkKind string, start time.Time) {
	if w.Metrics != nil {
		w.Metrics.TimeFlush(SinkKind, start)
	}
}

// SinkKind names a sink in metrics: files, kafka, or other (tests).
func SinkKind(s sink.Sink) string {
	switch s.(type) {
	case *sink.Files:
		return OpFiles
	case *sink.Kafka:
		return OpKafka
	case sink.TableSink:
		return OpIceberg
	}
	return "other"
}
