//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/group"
)

type noHandler struct{}

func (noHandler) Assign(group.Generation) {}
func (noHandler) Revoke(group.Assignment) {}
func (noHandler) Lose(group.Assignment)   {}

// TestClientIDZoneTemplateReachesTheBroker: a kafka.client_id template
// for each service that routes by client id, filled with the zone
// (rack.static: az-b), is the client id the coordinator records for the
// job's group member.
func TestClientIDZoneTemplateReachesTheBroker(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3})
	admin, err := kgo.NewClient(kgo.SeedBrokers(testkit.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for service, template := range map[string]string{
		"WarpStream": "ws_az={zone},logstore", "Bufstream": "zone={zone},logstore", "Aiven": "diskless_az={zone},logstore",
	} {
		t.Run(service, func(t *testing.T) {
			g := fmt.Sprintf("logstore-clientid-%s-%d", service, time.Now().UnixNano())
			cfg := &Config{}
			cfg.Kafka.Brokers, cfg.Kafka.Topics, cfg.Kafka.Group, cfg.Kafka.ClientID = testkit.Brokers, []string{topic}, g, template
			cfg.Rack.Static = "az-b"
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := ZoneClientID(ctx, cfg, nil); err != nil {
				t.Fatal(err)
			}
			conn, err := NewClients(ctx, cfg.Kafka)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			m := group.NewConsumer(group.ConsumerConfig{Group: g, Topics: []string{topic}, Brokers: testkit.Brokers, Dialer: conn.Dialer,
				Assignor: "uniform", RebalanceTimeout: 10 * time.Second})
			run, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- m.Run(run, noHandler{}) }()
			defer func() { stop(); <-done }()
			want := ExpandClientID(template, "az-b")
			var got string
			for ctx.Err() == nil {
				req := kmsg.NewPtrConsumerGroupDescribeRequest()
				req.Groups = []string{g}
				if res, err := req.RequestWith(ctx, admin); err == nil && len(res.Groups) == 1 && len(res.Groups[0].Members) == 1 {
					if got = res.Groups[0].Members[0].ClientID; got == want {
						t.Logf("%s: the coordinator records client id %q", service, got)
						return
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Errorf("%s: the coordinator records client id %q; want %q", service, got, want)
		})
	}
}
