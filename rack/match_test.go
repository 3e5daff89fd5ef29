package rack

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	aws := Identity{Name: "ap-northeast-2a", ID: "apne2-az1"}
	msk := []string{"apne2-az1", "apne2-az2", "apne2-az3"}
	selfManaged := []string{"ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c"}
	tests := []struct {
		name        string
		zone        Identity
		brokerRacks []string
		mode        string
		want        string
		matched     bool
	}{
		{"MSK racks pick the zone ID", aws, msk, "auto", "apne2-az1", true},
		{"self-managed racks pick the zone name", aws, selfManaged, "auto", "ap-northeast-2a", true},
		{"broker spelling wins", aws, []string{"AP-NORTHEAST-2A"}, "auto", "AP-NORTHEAST-2A", true},
		{"no match is rack-blind", aws, []string{"az-a", "az-b"}, "auto", "", false},
		{"brokers without racks is rack-blind", aws, []string{}, "auto", "", false},
		{"unknown brokers keep the name", aws, nil, "auto", "ap-northeast-2a", false},
		{"forced name", aws, msk, "name", "ap-northeast-2a", false},
		{"forced id", aws, selfManaged, "id", "apne2-az1", false},
		{"forced id, matching", aws, msk, "id", "apne2-az1", true},
		{"forced id, none known", Identity{Name: "us-central1-a"}, nil, "id", "", false},
		{"as-is is the first candidate", aws, msk, "as-is", "ap-northeast-2a", false},
		{"user-given rack in auto", userGiven("az-b"), []string{"az-a", "az-b"}, "auto", "az-b", true},
		{"user-given rack forced to id", userGiven("az-b"), []string{"az-a", "az-b"}, "id", "az-b", true},
		{"nothing detected", Identity{}, msk, "auto", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, matched := Match(tt.zone, tt.brokerRacks, tt.mode)
			if got != tt.want || matched != tt.matched {
				t.Errorf("Match = %q, %v; want %q, %v", got, matched, tt.want, tt.matched)
			}
		})
	}
}

func TestMatchBrokersWarnsOnce(t *testing.T) {
	aws := Result{Zone: Identity{Name: "ap-northeast-2a", ID: "apne2-az1"}, Candidates: []string{"ap-northeast-2a", "apne2-az1"}, Source: "aws-imds"}
	tests := []struct {
		name        string
		result      Result
		brokerRacks []string
		mode        string
		warning     []string // all in the one warning; nil: no warning
	}{
		{name: "match is quiet", result: aws, brokerRacks: []string{"apne2-az2", "apne2-az1", "apne2-az1"}, mode: "auto"},
		{name: "no match names candidates and broker racks", result: aws, brokerRacks: []string{"az-b", "az-a", "az-b"}, mode: "auto",
			warning: []string{"no broker rack matches", "reading rack-blind", "ap-northeast-2a", "apne2-az1", "broker_racks=\"[az-a az-b]\""}},
		{name: "brokers without racks", result: aws, brokerRacks: []string{"", ""}, mode: "auto",
			warning: []string{"broker.rack is unset", "reading rack-blind"}},
		{name: "forced kind missing", result: Result{Zone: Identity{Name: "us-east-2b"}, Candidates: []string{"us-east-2b"}}, brokerRacks: []string{"use2-az2"}, mode: "id",
			warning: []string{"reports no zone id", "reading rack-blind"}},
		{name: "forced rack matching no broker", result: aws, brokerRacks: []string{"az-a"}, mode: "name",
			warning: []string{"matches no broker rack", "using it anyway"}},
		{name: "nothing detected: Detect already warned", result: Result{}, brokerRacks: []string{"az-a"}, mode: "auto"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := capturedLog()
			res := tt.result
			res.MatchBrokers(tt.brokerRacks, tt.mode, log)
			out := buf.String()
			if n := strings.Count(out, "level=WARN"); n != min(len(tt.warning), 1) {
				t.Fatalf("%d warnings, want %d:\n%s", n, min(len(tt.warning), 1), out)
			}
			for _, w := range tt.warning {
				if !strings.Contains(out, w) {
					t.Errorf("warning lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name        string
		brokerRacks []string
		want        string
		matched     bool
	}{
		{"MSK brokers", []string{"apne2-az3", "apne2-az1", "apne2-az2"}, "apne2-az1", true},
		{"self-managed brokers", []string{"ap-northeast-2a", "ap-northeast-2c"}, "ap-northeast-2a", true},
		{"other brokers", []string{"az-a", "az-b", "az-c"}, "", false},
		{"brokers unknown", nil, "ap-northeast-2a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			srv := httptest.NewServer(fakeIMDS("ap-northeast-2a", "apne2-az1"))
			defer srv.Close()
			t.Setenv(envIMDSEndpoint, srv.URL)

			res, err := Resolve(context.Background(), Config{Providers: []string{"env", "aws-imds"}}, tt.brokerRacks, discardLog())
			if err != nil {
				t.Fatal(err)
			}
			if res.Rack != tt.want || res.Matched != tt.matched || res.Source != "aws-imds" {
				t.Errorf("rack %q matched %v from %q; want %q matched %v from aws-imds", res.Rack, res.Matched, res.Source, tt.want, tt.matched)
			}
		})
	}
}
