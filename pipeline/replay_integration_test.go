//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
)

// TestReplayRetriedAfterTimeoutWritesOnce: the README said "a produce
// retried after a timeout can write a record twice" — kafka-go's Writer
// sends a timed-out batch again as new records. Here the broker's answer
// to the first Produce is lost (the broker wrote the records; the client
// waits out its timeout and retries): every record must be in the topic
// once.
func TestReplayRetriedAfterTimeoutWritesOnce(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})
	const n = 200
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"key":"k%d","value":"record %d","partition":0}`+"\n", i, i)
	}
	lost := testkit.NewLostAnswers(1)
	conn := &Clients{
		Brokers:   testkit.Brokers,
		Dialer:    &kafka.Dialer{ClientID: "replay-test", Timeout: 10 * time.Second, DialFunc: lost.Dial},
		Transport: &kafka.Transport{Dial: lost.Dial},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sent, err := ReplayFile(ctx, conn, topic, strings.NewReader(lines.String()), slog.New(slog.DiscardHandler))
	if err != nil || sent != n {
		t.Fatalf("replay: %d sent, %v", sent, err)
	}
	if lost.Lost.Load() != 1 {
		t.Fatalf("%d answers lost; the test needs one", lost.Lost.Load())
	}
	counts := countValues(t, topic, n)
	for i := range n {
		if c := counts[fmt.Sprintf("record %d", i)]; c != 1 {
			t.Errorf("record %d is in the topic %d times", i, c)
		}
	}
}

// countValues reads topic from the start until want records came and a
// second passed without more, and counts each value.
func countValues(t *testing.T, topic string, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testkit.Brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	counts := map[string]int{}
	total := 0
	deadline := time.Now().Add(30 * time.Second)
	quietUntil := time.Time{}
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) { counts[string(r.Value)]++; got++ })
		total += got
		if total >= want {
			if quietUntil.IsZero() {
				quietUntil = time.Now().Add(time.Second)
			} else if got == 0 && time.Now().After(quietUntil) {
				break
			}
		}
	}
	return counts
}
