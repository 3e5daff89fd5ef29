package fetch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestTopicIDChangesWhenTheTopicIsRecreated: the id is the topic's, not
// its name's: deleting the topic and creating it again gives another.
func TestTopicIDChangesWhenTheTopicIsRecreated(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := func() string {
		client := NewClient(ClientConfig{Brokers: c.ListenAddrs(), Log: slog.New(slog.DiscardHandler)})
		defer client.Close()
		id, err := client.TopicID(ctx, "logs")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := id()
	if len(first) != 32 || first != id() {
		t.Fatalf("topic id %q: want 32 hex digits, the same when asked again", first)
	}
	admin := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	if _, err := admin.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{"logs"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "logs", NumPartitions: 1, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	if again := id(); again == first || len(again) != 32 {
		t.Errorf("topic id %q after the topic was recreated, %q before: want a new one", again, first)
	}
}
