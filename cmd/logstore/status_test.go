package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStatusLocalShareFromMetrics: a member's local share is its same-rack
// fetched bytes over all it fetched, as its /metrics counts them.
func TestStatusLocalShareFromMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `# HELP logstore_fetch_bytes_total Bytes fetched.
logstore_fetch_bytes_total{broker="1",broker_rack="az-a",locality="same-rack"} 9.5e+06
logstore_fetch_bytes_total{broker="2",broker_rack="az-b",locality="cross-rack"} 500000
logstore_fetch_bytes_total{broker="3",broker_rack="az-c",locality="cross-rack"} 0
`)
	}))
	defer srv.Close()
	share, err := memberLocalShare(context.Background(), &http.Client{Timeout: time.Second}, srv.URL+"/metrics")
	if err != nil || share == nil || *share != 0.95 {
		t.Errorf("share %v, %v; want 0.95", share, err)
	}
	if share, _ := memberLocalShare(context.Background(), &http.Client{Timeout: time.Second}, "http://127.0.0.1:1/metrics"); share != nil {
		t.Errorf("an unreachable member's share is %v; want unknown", *share)
	}
}

func TestStatusPendingCut(t *testing.T) {
	for meta, want := range map[string]int64{"cut:219 topic:abc layout:0123 {}": 219, "cut:5": 5, "": -1, "other": -1} {
		if got := pendingCut(meta); got != want {
			t.Errorf("pendingCut(%q) = %d, want %d", meta, got, want)
		}
	}
}
