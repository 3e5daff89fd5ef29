package rack

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPodLabelsFile(t *testing.T) {
	tests := []struct {
		name    string
		content string // "" means no file
		want    []string
		outcome Outcome
	}{
		{name: "EKS pod with zone and zone ID",
			content: "app=\"logstore\"\ntopology.k8s.aws/zone-id=\"apne2-az1\"\ntopology.kubernetes.io/zone=\"ap-northeast-2a\"\n",
			want:    []string{"ap-northeast-2a", "apne2-az1"}, outcome: OutcomeAnswered},
		{name: "zone copied by KEP-4742",
			content: "pod-template-hash=\"5d8f\"\ntopology.kubernetes.io/zone=\"us-central1-a\"\n",
			want:    []string{"us-central1-a"}, outcome: OutcomeAnswered},
		{name: "escaped value",
			content: `topology.kubernetes.io/zone="zone \"x\""` + "\n",
			want:    []string{`zone "x"`}, outcome: OutcomeAnswered},
		{name: "no zone labels", content: "app=\"logstore\"\n", outcome: OutcomeAbsent},
		{name: "no file", outcome: OutcomeAbsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			file := filepath.Join(t.TempDir(), "labels")
			if tt.content != "" {
				if err := os.WriteFile(file, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Detect(context.Background(), Config{Providers: []string{"k8s-labels"}, LabelsFile: file}, discardLog())
			if err != nil {
				t.Fatal(err)
			}
			if res.Trace[0].Outcome != tt.outcome || !slices.Equal(res.Candidates, orEmpty(tt.want)) {
				t.Errorf("got %s %q (%s), want %s %q", res.Trace[0].Outcome, res.Candidates, res.Trace[0].Detail, tt.outcome, tt.want)
			}
		})
	}
}

// fakeAPIServer serves one node like the Kubernetes API does, over TLS, to
// the service account token "sa-token" only, and points the in-cluster
// variables at it. It returns a service account directory holding that token
// and the server's CA.
func fakeAPIServer(t *testing.T, node string, status int, labels string) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer sa-token":
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
		case status != http.StatusOK:
			http.Error(w, `{"kind":"Status","reason":"Forbidden"}`, status)
		case r.URL.Path != "/api/v1/nodes/"+node:
			http.Error(w, `{"kind":"Status","reason":"NotFound"}`, http.StatusNotFound)
		default:
			fmt.Fprintf(w, `{"kind":"Node","apiVersion":"v1","metadata":{"name":%q,"labels":{%s}},"status":{}}`, node, labels)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("sa-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	return dir
}

func TestNodeLabels(t *testing.T) {
	const eksLabels = `"kubernetes.io/hostname":"ip-10-0-1-7","topology.kubernetes.io/region":"ap-northeast-2",` +
		`"topology.kubernetes.io/zone":"ap-northeast-2a","topology.k8s.aws/zone-id":"apne2-az1"`
	tests := []struct {
		name       string
		nodeName   string // NODE_NAME as the pod sees it
		status     int
		labels     string
		noToken    bool
		want       []string
		outcome    Outcome
		detailWant string
	}{
		{name: "EKS node", nodeName: "ip-10-0-1-7", status: 200, labels: eksLabels,
			want: []string{"ap-northeast-2a", "apne2-az1"}, outcome: OutcomeAnswered},
		{name: "zone only", nodeName: "ip-10-0-1-7", status: 200, labels: `"topology.kubernetes.io/zone":"eastus-1"`,
			want: []string{"eastus-1"}, outcome: OutcomeAnswered},
		{name: "no zone labels", nodeName: "ip-10-0-1-7", status: 200, labels: `"kubernetes.io/os":"linux"`,
			outcome: OutcomeAbsent, detailWant: "no topology.kubernetes.io/zone"},
		{name: "forbidden", nodeName: "ip-10-0-1-7", status: 403,
			outcome: OutcomeError, detailWant: "ClusterRole"},
		{name: "wrong node name", nodeName: "other", status: 200, labels: eksLabels,
			outcome: OutcomeError, detailWant: "spec.nodeName"},
		{name: "no NODE_NAME", status: 200, outcome: OutcomeAbsent, detailWant: "NODE_NAME"},
		{name: "no token mounted", nodeName: "ip-10-0-1-7", status: 200, noToken: true,
			outcome: OutcomeAbsent, detailWant: "automountServiceAccountToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			dir := fakeAPIServer(t, "ip-10-0-1-7", tt.status, tt.labels)
			if tt.noToken {
				os.Remove(filepath.Join(dir, "token"))
			}
			t.Setenv(envServiceAccountDir, dir)
			t.Setenv("NODE_NAME", tt.nodeName)

			res := detectOnly(t, "k8s-node")
			got := res.Trace[0]
			if got.Outcome != tt.outcome || !strings.Contains(got.Detail, tt.detailWant) {
				t.Fatalf("trace = %+v, want %s with %q", got, tt.outcome, tt.detailWant)
			}
			if !slices.Equal(res.Candidates, orEmpty(tt.want)) {
				t.Errorf("candidates = %q, want %q", res.Candidates, tt.want)
			}
		})
	}
}
