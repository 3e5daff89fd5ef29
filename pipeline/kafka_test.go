package pipeline

import (
	"context"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClientsAskMetadataOfTheInputTopicsOnly: the transport that routes
// ListOffsets and the like refreshes its metadata every TTL from any
// broker, often in another zone. It must ask for the input topics, not
// for every topic of the cluster (before: a Metadata request with no topic
// list, the whole cluster's partitions and replicas, twice a minute per
// member).
func TestClientsAskMetadataOfTheInputTopicsOnly(t *testing.T) {
	c, err := kfake.NewCluster(kfake.SeedTopics(1, "logs", "other-1", "other-2", "other-3"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu    sync.Mutex
		asked [][]string // the topics of each Metadata request; nil: all
	)
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		mu.Lock()
		defer mu.Unlock()
		if req.Topics == nil {
			asked = append(asked, nil)
		} else {
			var names []string
			for _, tp := range req.Topics {
				if tp.Topic != nil {
					names = append(names, *tp.Topic)
				}
			}
			asked = append(asked, names)
		}
		return nil, nil, false
	})
	conn, err := NewClients(context.Background(), InputConfig{Brokers: c.ListenAddrs(), Topics: []string{"logs"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Client.ListOffsets(context.Background(), &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{"logs": {kafka.FirstOffsetOf(0)}}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 {
		t.Fatal("the transport asked for no metadata")
	}
	for _, names := range asked {
		if len(names) != 1 || names[0] != "logs" {
			t.Errorf("a Metadata request for %v (nil: every topic of the cluster); want only the input topic [logs]", names)
		}
	}
}
