package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadCommitted counts each value of topic on brokers that a
// read_committed consumer sees: it reads until want records came (or 5 s
// passed), then a moment more, long enough for a duplicate to show up.
// want 0 reads for half a second.
func ReadCommitted(t testing.TB, brokers []string, topic string, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen, n := map[string]int{}, 0
	deadline := time.Now().Add(5 * time.Second)
	if want == 0 {
		deadline = time.Now().Add(500 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
		cancel()
		if soon := time.Now().Add(300 * time.Millisecond); want > 0 && n >= want && soon.Before(deadline) {
			deadline = soon
		}
	}
	return seen
}
