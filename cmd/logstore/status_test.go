package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/logstore/logstore/pipeline"
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
	share, err := memberLocalShare(context.Background(), &http.Client{Timeout: time.Second}, srv.URL+"/metrics", "m1")
	if err != nil || share == nil || *share != 0.95 {
		t.Errorf("share %v, %v; want 0.95", share, err)
	}
	if share, _ := memberLocalShare(context.Background(), &http.Client{Timeout: time.Second}, "http://127.0.0.1:1/metrics", "m1"); share != nil {
		t.Errorf("an unreachable member's share is %v; want unknown", *share)
	}
}

// TestStatusLocalShareIsTheMembersOwn: status reads a member's /metrics at
// its host and the config's port; what answers there may be another
// member (several members on one host, where the port is the first one's;
// a member SIGKILLed and not yet out of the group, whose host and port a
// new process took). Its share is then unknown, not the other's (before:
// every member on the host showed the first one's 100.0 %).
func TestStatusLocalShareIsTheMembersOwn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `logstore_group_member{member_id="m1"} 1
logstore_fetch_bytes_total{broker="1",broker_rack="az-a",locality="same-rack"} 100
`)
	}))
	defer srv.Close()
	client := &http.Client{Timeout: time.Second}
	if share, err := memberLocalShare(context.Background(), client, srv.URL+"/metrics", "m1"); share == nil || *share != 1 {
		t.Errorf("m1's own endpoint: share %v, %v; want 1", share, err)
	}
	if share, _ := memberLocalShare(context.Background(), client, srv.URL+"/metrics", "m2"); share != nil {
		t.Errorf("m2 read at m1's endpoint: share %v; want unknown", *share)
	}
	st := &groupStatus{Members: []memberStatus{{ID: "m1", Host: "127.0.0.1"}, {ID: "m2", Host: "127.0.0.1"}}}
	readLocalShares(context.Background(), st, strings.TrimPrefix(srv.URL, "http://"))
	var out strings.Builder
	if err := writeStatus(&out, st, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "100.0%") || !strings.Contains(out.String(), "unknown") {
		t.Errorf("status of two members on one host:\n%s\nwant m1 100.0%% and m2 unknown", out.String())
	}
}

// TestStatusFindsEachMemberOnOneHost: three members on one host, two of
// them serving /metrics on the config's port and the next one (as members
// started side by side on one machine do), the third SIGKILLed and not yet
// out of the group. Each live member shows its own share, the killed one
// unknown (before: only the member on the config's port had a share).
func TestStatusFindsEachMemberOnOneHost(t *testing.T) {
	serve := func(t *testing.T, ln net.Listener, member string, same, cross int) {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "logstore_group_member{member_id=%q} 1\n", member)
			fmt.Fprintf(w, "logstore_fetch_bytes_total{broker=\"1\",broker_rack=\"az-a\",locality=\"same-rack\"} %d\n", same)
			fmt.Fprintf(w, "logstore_fetch_bytes_total{broker=\"2\",broker_rack=\"az-b\",locality=\"cross-rack\"} %d\n", cross)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	first, second := consecutivePorts(t)
	serve(t, first, "m1", 100, 0)
	serve(t, second, "m2", 3, 1)
	st := &groupStatus{Members: []memberStatus{{ID: "m1", Host: "127.0.0.1"}, {ID: "m2", Host: "127.0.0.1"}, {ID: "m3", Host: "127.0.0.1"}}}
	readLocalShares(context.Background(), st, first.Addr().String())
	want := map[string]string{"m1": "1", "m2": "0.75", "m3": "unknown"}
	for _, m := range st.Members {
		got := "unknown"
		if m.LocalShare != nil {
			got = strconv.FormatFloat(*m.LocalShare, 'g', -1, 64)
		}
		if got != want[m.ID] {
			t.Errorf("member %s: local share %s (metrics %s); want %s", m.ID, got, m.Metrics, want[m.ID])
		}
	}
	if st.Members[1].Metrics != "http://"+second.Addr().String()+"/metrics" {
		t.Errorf("m2's metrics at %s; want the port after the config's, %s", st.Members[1].Metrics, second.Addr())
	}
}

// consecutivePorts listens on two ports of 127.0.0.1, the second one
// after the first.
func consecutivePorts(t *testing.T) (net.Listener, net.Listener) {
	for range 50 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1)))
		if err == nil {
			return a, b
		}
		a.Close()
	}
	t.Fatal("no two consecutive free ports on 127.0.0.1")
	return nil, nil
}

// memberLocalShare is what status takes for memberID from the endpoint at
// url: same-rack bytes over all bytes of logstore_fetch_bytes_total, when
// the process there is that member (its logstore_group_member; a version
// without it is taken at its word).
func memberLocalShare(ctx context.Context, client *http.Client, url, memberID string) (*float64, error) {
	ep, err := readMetricsEndpoint(ctx, client, url)
	if err != nil {
		return nil, err
	}
	if len(ep.members) > 0 && !slices.Contains(ep.members, memberID) {
		return nil, fmt.Errorf("%s is member %s's endpoint, not %s's", url, strings.Join(ep.members, ","), memberID)
	}
	return ep.share(), nil
}

func TestStatusPendingCut(t *testing.T) {
	for meta, want := range map[string]int64{"cut:219 topic:abc layout:0123 {}": 219, "cut:5": 5, "": -1, "other": -1} {
		if got := pendingCut(meta); got != want {
			t.Errorf("pendingCut(%q) = %d, want %d", meta, got, want)
		}
	}
}

// TestStatusSpeaksMSKIAM: `logstore status` reaches an MSK cluster on its
// IAM listener as the job does (kafka.sasl.mechanism aws-msk-iam): the
// client signs kafka-cluster:Connect with the SDK's credentials for the
// broker's region. Before, status refused the mechanism and sent users to
// kafka-consumer-groups.
func TestStatusSpeaksMSKIAM(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSTATUSTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	k := pipeline.InputConfig{Brokers: []string{"b-1.demo.kafka.eu-west-1.amazonaws.com:9098"}, Group: "g"}
	k.TLS.Enabled = true
	k.SASL.Mechanism = "aws-msk-iam"
	cl, err := statusClient(context.Background(), k)
	if err != nil {
		t.Fatalf("status with aws-msk-iam: %v", err)
	}
	defer cl.Close()
	mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	if len(mechs) != 1 || mechs[0].Name() != "AWS_MSK_IAM" {
		t.Fatalf("SASL mechanisms %v; want AWS_MSK_IAM", mechs)
	}
	_, first, err := mechs[0].Authenticate(context.Background(), k.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	var signed map[string]string
	if err := json.Unmarshal(first, &signed); err != nil {
		t.Fatalf("the first SASL message is not JSON: %v: %s", err, first)
	}
	if signed["action"] != "kafka-cluster:Connect" || !strings.HasPrefix(signed["x-amz-credential"], "AKIDSTATUSTEST/") || !strings.Contains(signed["x-amz-credential"], "/eu-west-1/kafka-cluster/") {
		t.Errorf("signed %v; want kafka-cluster:Connect with the environment's key for eu-west-1", signed)
	}
}
