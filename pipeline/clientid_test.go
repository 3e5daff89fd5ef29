package pipeline

import (
	"strings"
	"testing"

	"github.com/logstore/logstore/rack"
)

func TestClientIDZoneIsTheAZIDWhereTheProviderGivesOne(t *testing.T) {
	tests := []struct {
		zone rack.Identity
		want string
	}{
		{rack.Identity{Name: "ap-northeast-2a", ID: "apne2-az1"}, "apne2-az1"},
		{rack.Identity{Name: "europe-west1-b"}, "europe-west1-b"},
	}
	for _, tt := range tests {
		if got := ClientIDZone(tt.zone); got != tt.want {
			t.Errorf("ClientIDZone(%+v) = %q, want %q", tt.zone, got, tt.want)
		}
	}
	for template, want := range map[string]string{
		"ws_az={zone},logstore":       "ws_az=apne2-az1,logstore",
		"zone={zone},logstore":        "zone=apne2-az1,logstore",
		"diskless_az={zone},logstore": "diskless_az=apne2-az1,logstore",
		"logstore":                    "logstore",
	} {
		if got := ExpandClientID(template, "apne2-az1"); got != want {
			t.Errorf("ExpandClientID(%q) = %q, want %q", template, got, want)
		}
	}
}

func TestClientIDRefusesAnUnknownPlaceholder(t *testing.T) {
	if err := validateClientID("ws_az={zone},logstore"); err != nil {
		t.Errorf("{zone}: %v", err)
	}
	err := validateClientID("ws_az={az},logstore")
	if err == nil || !strings.Contains(err.Error(), "kafka.client_id") || !strings.Contains(err.Error(), "{zone}") {
		t.Errorf("{az}: %v; want an error naming kafka.client_id and {zone}", err)
	}
}
