package pipeline

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFollowerFetchingAuto answers the auto probe's DescribeConfigs as
// brokers do, and checks the decision and what the operator is told: a
// refused probe warns once, naming the permission to grant.
func TestFollowerFetchingAuto(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     int16  // the resource's error code
		selector string // replica.selector.class; "" unset
		want     bool
		warn     string // a warning must say this; "" no warning
	}{
		{"rack-aware selector", 0, "org.apache.kafka.common.replica.RackAwareReplicaSelector", true, ""},
		{"leader selector", 0, "org.apache.kafka.common.replica.LeaderSelector", false, ""},
		{"no selector", 0, "", false, ""},
		{"not authorized", 31, "", false, mskDescribeConfigsAction},
		{"broker error", 2, "", false, "not readable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.SeedTopics(1, "logs"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.ControlKey(int16(kmsg.DescribeConfigs), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				req := kreq.(*kmsg.DescribeConfigsRequest)
				resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
				for _, r := range req.Resources {
					rr := kmsg.NewDescribeConfigsResponseResource()
					rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, tc.code
					if tc.code == 0 && tc.selector != "" {
						cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
						cfg.Name, cfg.Value = "replica.selector.class", kmsg.StringPtr(tc.selector)
						rr.Configs = append(rr.Configs, cfg)
					}
					resp.Resources = append(resp.Resources, rr)
				}
				return resp, nil, true
			})
			conn, err := NewClients(context.Background(), InputConfig{Brokers: c.ListenAddrs()})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var logs strings.Builder // followerFetching logs from this goroutine only
			log := slog.New(slog.NewTextHandler(&logs, nil))

			if got := followerFetching(context.Background(), conn, "auto", log); got != tc.want {
				t.Fatalf("follower fetching %v, want %v", got, tc.want)
			}
			var warnings []string
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "level=WARN") {
					warnings = append(warnings, line)
				}
			}
			switch {
			case tc.warn == "" && len(warnings) > 0:
				t.Fatalf("unexpected warnings: %q", warnings)
			case tc.warn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warn)):
				t.Fatalf("warnings %q; want one saying %q", warnings, tc.warn)
			}
		})
	}
}
