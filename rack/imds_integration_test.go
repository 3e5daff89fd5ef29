//go:build integration

package rack

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testkit"
)

func TestIMDSMockGivesZoneNameAndID(t *testing.T) {
	isolate(t)
	endpoint := testkit.StartIMDSMock(t, "ap-northeast-2a", "apne2-az1")
	t.Setenv(envIMDSEndpoint, endpoint)

	// The mock must refuse IMDSv1, or this test would not show we speak v2.
	resp, err := http.Get(endpoint + "/latest/meta-data/placement/availability-zone")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an IMDSv1 request got HTTP %d; start the mock with IMDSv2 enforced (-I)", resp.StatusCode)
	}

	// The whole default chain, as a worker on EC2 runs it.
	res, err := Detect(context.Background(), Config{LabelsFile: filepath.Join(t.TempDir(), "labels")}, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	if res.Source != "aws-imds" || res.Zone != (Identity{Name: "ap-northeast-2a", ID: "apne2-az1"}) {
		t.Fatalf("zone %+v from %q; want ap-northeast-2a / apne2-az1 from aws-imds\ntrace: %s", res.Zone, res.Source, traceSummary(res.Trace))
	}

	tests := []struct {
		name        string
		brokerRacks []string
		want        string
	}{
		{"MSK brokers", []string{"apne2-az1", "apne2-az2", "apne2-az3"}, "apne2-az1"},
		{"self-managed brokers", []string{"ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c"}, "ap-northeast-2a"},
		{"brokers in other zones", []string{"az-a", "az-b", "az-c"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := capturedLog()
			res, err := Resolve(context.Background(), Config{Providers: []string{"aws-imds"}}, tt.brokerRacks, log)
			if err != nil {
				t.Fatal(err)
			}
			if res.Rack != tt.want {
				t.Errorf("rack %q, want %q", res.Rack, tt.want)
			}
			if warned := strings.Contains(buf.String(), "reading rack-blind"); warned != (tt.want == "") {
				t.Errorf("rack-blind warning = %v, want %v:\n%s", warned, tt.want == "", buf)
			}
		})
	}
}
