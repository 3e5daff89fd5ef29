package sink

import (
	"context"
	"testing"
)

// plainSink declares nothing: it commits at least once.
type plainSink struct{ Sink }

func (plainSink) Write(context.Context, *Batch) error { return nil }

// The cycle's order comes from how outputs commit: by name, by snapshot,
// at least once, then the transaction that is the batch's record.
func TestOutputsAreOrderedByHowTheyCommit(t *testing.T) {
	files := &Files{}
	eos := &Kafka{cfg: &KafkaOutputConfig{Delivery: DeliveryExactlyOnce}}
	alo := &Kafka{cfg: &KafkaOutputConfig{Delivery: DeliveryAtLeastOnce}}
	other := plainSink{}
	sinks := []Sink{eos, other, files, alo}
	OrderByCommit(sinks)
	want := []Sink{files, other, alo, eos}
	for i := range want {
		if sinks[i] != want[i] {
			t.Fatalf("order %v, want files, the undeclared output, Kafka at least once, Kafka exactly once", sinks)
		}
	}
}
