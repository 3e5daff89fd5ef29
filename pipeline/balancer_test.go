package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/sink"
)

type discardSink struct{}

func (discardSink) Write(context.Context, *sink.Batch) error { return nil }
func (discardSink) Close() error                             { return nil }

// TestJobUsesConfiguredBalancer runs a Job against kfake with each
// rack.balancer and rack.mode and asks the coordinator which protocol the
// group chose, and watches whether fetches carry the rack.
func TestJobUsesConfiguredBalancer(t *testing.T) {
	for _, tc := range []struct {
		rack         string // the rack section's extra lines
		protocol     string
		rackInFetch  bool
		followerMode string
	}{
		{"", "logstore-rack-v1", true, "on"},
		{"balancer: rack-aware", "logstore-rack-v1", true, "on"},
		{"balancer: range", "range", true, "on"},
		{"balancer: round-robin", "roundrobin", true, "on"},
		{"mode: blind", "roundrobin", false, "on"},
		{"mode: blind\n  balancer: range", "range", false, "on"},
	} {
		name := strings.NewReplacer(": ", "=", "\n  ", ",").Replace(tc.rack)
		t.Run(name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.SeedTopics(2, "logs"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			group := "g-" + name
			yaml := fmt.Sprintf(`
kafka:
  brokers: [%s]
  topics: [%s]
  group: %s
  session_timeout: 6s
  heartbeat_interval: 1s
  fetch: {max_wait: 50ms}
rack:
  static: az-a
  providers: [static]
  follower_fetching: %s
  %s
sinks:
  files:
    url: %s
dead_letter:
  on_error: skip
`, strings.Join(c.ListenAddrs(), ", "), "logs", group, tc.followerMode, tc.rack, "file://"+t.TempDir())
			cfg, err := Parse("t.yaml", []byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			job, err := NewJob(context.Background(), cfg, Deps{Log: slog.New(slog.DiscardHandler), Sinks: []sink.Sink{discardSink{}}})
			if err != nil {
				t.Fatal(err)
			}
			defer job.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- job.Run(ctx, Mode{}) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
			}()

			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var got kmsg.DescribeGroupsResponseGroup
			deadline := time.Now().Add(15 * time.Second)
			for {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{group}
				resp, err := req.RequestWith(context.Background(), cl)
				if err == nil && len(resp.Groups) == 1 {
					got = resp.Groups[0]
				}
				if got.State == "Stable" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("group %s not stable within 15s: state %q", group, got.State)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Members of ours offer the balancer's cooperative variant first.
			if want := tc.protocol + "-cooperative"; got.Protocol != want {
				t.Errorf("the group runs protocol %q; want %q", got.Protocol, want)
			}
			// kfake has no racks, so the job runs rack-blind whatever the
			// mode; what the mode decides is whether readers may send one
			// (newWorker: LeaderOnly is !follower).
			if job.follower != tc.rackInFetch {
				t.Errorf("follower fetching %v; want the rack sent in fetches: %v", job.follower, tc.rackInFetch)
			}
		})
	}
}
