package rack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// platformEnv is every variable a provider reads; isolate clears them so the
// host the tests run on cannot answer for a fake.
var platformEnv = []string{
	envRack, "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "NODE_NAME", envServiceAccountDir,
	envIMDSEndpoint, envIMDSEndpointMode, envIMDSDisabled, envECSMetadata, envGCEMetadataHost, envAzureIMDSEndpoint,
}

func isolate(t *testing.T) {
	t.Helper()
	for _, v := range platformEnv {
		t.Setenv(v, "")
	}
}

// detectOnly runs Detect over the named providers with test-sized timeouts.
func detectOnly(t *testing.T, providers ...string) Result {
	t.Helper()
	res, err := Detect(context.Background(), Config{
		Providers:       providers,
		ProviderTimeout: time.Second,
		Budget:          3 * time.Second,
		LabelsFile:      t.TempDir() + "/labels",
	}, discardLog())
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	return res
}

// fakeIMDS answers like EC2's instance metadata service with IMDSv2
// required: no token, no metadata.
func fakeIMDS(name, id string) http.HandlerFunc {
	const token = "fake-token"
	values := map[string]string{
		"/latest/meta-data/placement/availability-zone":    name,
		"/latest/meta-data/placement/availability-zone-id": id,
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			ttl := r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds")
			if ttl == "" {
				http.Error(w, "missing ttl", http.StatusBadRequest)
				return
			}
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", ttl)
			fmt.Fprint(w, token)
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != token {
			http.Error(w, "", http.StatusUnauthorized)
			return
		}
		if v := values[r.URL.Path]; v != "" {
			fmt.Fprint(w, v)
			return
		}
		http.NotFound(w, r)
	}
}

// requireHeader answers 400 unless the request carries the header a metadata
// server demands, as GCE and Azure do.
func requireHeader(key, value, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(key) != value {
			http.Error(w, "missing "+key, http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, body)
	}
}

func serveBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }
}

// The documented answers, trimmed to a realistic few fields.
const (
	ecsTaskJSON = `{"Cluster":"arn:aws:ecs:us-east-2:111122223333:cluster/default",
		"TaskARN":"arn:aws:ecs:us-east-2:111122223333:task/default/158d1c8083dd49d6b527399fd6414f5c",
		"Family":"logstore","Revision":"3","DesiredStatus":"RUNNING","KnownStatus":"RUNNING",
		"Containers":[{"Name":"logstore"}],"LaunchType":"FARGATE","AvailabilityZone":"us-east-2b"}`
	azureComputeJSON = `{"azEnvironment":"AzurePublicCloud","location":"eastus","name":"logstore-0",
		"vmSize":"Standard_D4s_v5","zone":"1","platformFaultDomain":"0"}`
)

func TestMetadataEndpoints(t *testing.T) {
	tests := []struct {
		name, provider, env string
		path                string // appended to the server URL in env
		handler             http.HandlerFunc
		want                []string
		outcome             Outcome
		detail              string
	}{
		{name: "IMDSv2 name and ID", provider: "aws-imds", env: envIMDSEndpoint,
			handler: fakeIMDS("ap-northeast-2a", "apne2-az1"),
			want:    []string{"ap-northeast-2a", "apne2-az1"}, outcome: OutcomeAnswered},
		{name: "IMDS without zone ID", provider: "aws-imds", env: envIMDSEndpoint,
			handler: fakeIMDS("us-east-1a", ""),
			want:    []string{"us-east-1a"}, outcome: OutcomeAnswered},
		{name: "IMDS refusing tokens", provider: "aws-imds", env: envIMDSEndpoint,
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "", http.StatusForbidden) },
			outcome: OutcomeError, detail: "403"},
		{name: "ECS task metadata v4", provider: "aws-ecs", env: envECSMetadata, path: "/v4/abc-123",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v4/abc-123/task" {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, ecsTaskJSON)
			},
			want: []string{"us-east-2b"}, outcome: OutcomeAnswered},
		{name: "ECS task without zone", provider: "aws-ecs", env: envECSMetadata,
			handler: serveBody(`{"Cluster":"default"}`),
			outcome: OutcomeError, detail: "no AvailabilityZone"},
		{name: "GCE zone", provider: "gcp", env: envGCEMetadataHost,
			handler: requireHeader("Metadata-Flavor", "Google", "projects/123456789/zones/us-central1-a"),
			want:    []string{"us-central1-a"}, outcome: OutcomeAnswered},
		{name: "GCE answering something else", provider: "gcp", env: envGCEMetadataHost,
			handler: requireHeader("Metadata-Flavor", "Google", "us-central1-a"),
			outcome: OutcomeError, detail: "not projects/N/zones/ZONE"},
		{name: "Azure zone and location", provider: "azure", env: envAzureIMDSEndpoint,
			handler: requireHeader("Metadata", "true", azureComputeJSON),
			want:    []string{"eastus-1", "1"}, outcome: OutcomeAnswered},
		{name: "Azure VM in no zone", provider: "azure", env: envAzureIMDSEndpoint,
			handler: requireHeader("Metadata", "true", `{"location":"westus","zone":""}`),
			outcome: OutcomeAbsent, detail: "in no availability zone"},
		{name: "configured endpoint failing", provider: "azure", env: envAzureIMDSEndpoint,
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) },
			outcome: OutcomeError, detail: "HTTP 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			value := srv.URL + tt.path
			if tt.env == envGCEMetadataHost {
				value = strings.TrimPrefix(value, "http://") // a host:port, like Google's libraries take
			}
			t.Setenv(tt.env, value)

			res := detectOnly(t, tt.provider)
			got := res.Trace[0]
			if got.Outcome != tt.outcome || !strings.Contains(got.Detail, tt.detail) {
				t.Fatalf("trace = %+v, want outcome %s with detail containing %q", got, tt.outcome, tt.detail)
			}
			if want := orEmpty(tt.want); !slices.Equal(res.Candidates, want) {
				t.Errorf("candidates = %q, want %q", res.Candidates, want)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestAbsentWithoutTheirVariable(t *testing.T) {
	isolate(t)
	res := detectOnly(t, "static", "env", "k8s-labels", "k8s-node", "aws-ecs")
	for _, e := range res.Trace {
		if e.Outcome != OutcomeAbsent {
			t.Errorf("%s: %s (%s), want absent", e.Provider, e.Outcome, e.Detail)
		}
		if e.Elapsed > 50*time.Millisecond {
			t.Errorf("%s took %s to see it is absent; it should not touch the network", e.Provider, e.Elapsed)
		}
	}
}

func TestUserGivenRack(t *testing.T) {
	tests := []struct {
		name, static, env string
		wantRack, source  string
	}{
		{name: "static", static: "az-a", wantRack: "az-a", source: "static"},
		{name: "env", env: " apne2-az1 ", wantRack: "apne2-az1", source: "env"},
		{name: "static before env", static: "az-a", env: "az-b", wantRack: "az-a", source: "static"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			t.Setenv(envRack, tt.env)
			res, err := Detect(context.Background(), Config{Static: tt.static, Providers: []string{"static", "env"}}, discardLog())
			if err != nil {
				t.Fatal(err)
			}
			if res.Rack != tt.wantRack || res.Source != tt.source || !slices.Equal(res.Candidates, []string{tt.wantRack}) {
				t.Errorf("got rack %q from %q, candidates %q; want %q from %q", res.Rack, res.Source, res.Candidates, tt.wantRack, tt.source)
			}
		})
	}
}

// At a platform's own link-local address a refusal means another platform;
// at an address the user configured it is an error to fix.
func TestEndpointNotHere(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	statusErr := &httpStatusError{url: "http://169.254.169.254/x", status: 404}
	tests := []struct {
		name       string
		configured bool
		err        error
		wantAbsent bool
	}{
		{"nothing listening", false, dialErr, true},
		{"another cloud answering", false, statusErr, true},
		{"configured, nothing listening", true, dialErr, false},
		{"configured, refusing", true, statusErr, false},
		{"other failure", false, errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := endpoint{base: "http://169.254.169.254", configured: tt.configured}
			var absent *absentError
			if got := errors.As(ep.notHere(tt.err, "on GCE"), &absent); got != tt.wantAbsent {
				t.Errorf("absent = %v, want %v", got, tt.wantAbsent)
			}
		})
	}
}

// What a user on EC2 sees when IMDS is not answering the way it should.
func TestIMDSUnreachable(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		return "http://" + ln.Addr().String()
	}
	tests := []struct {
		name     string
		endpoint func(t *testing.T) string
		outcome  Outcome
		detail   []string
	}{
		// A container behind a hop limit of 1: the token's answer never comes.
		{"silent", silentServer, OutcomeTimeout, []string{"did not answer", "hop limit to 2", "rack.static"}},
		{"refused at a configured endpoint", refused, OutcomeError, []string{"IMDS at http://127.0.0.1:", "refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			t.Setenv(envIMDSEndpoint, tt.endpoint(t))
			const providerTimeout = 2 * time.Second
			res, err := Detect(context.Background(), Config{Providers: []string{"aws-imds"}, ProviderTimeout: providerTimeout}, discardLog())
			if err != nil {
				t.Fatal(err)
			}
			got := res.Trace[0]
			if got.Outcome != tt.outcome {
				t.Errorf("outcome %s (%s), want %s", got.Outcome, got.Detail, tt.outcome)
			}
			for _, d := range tt.detail {
				if !strings.Contains(got.Detail, d) {
					t.Errorf("detail %q lacks %q", got.Detail, d)
				}
			}
			// Fail fast like the AWS SDK, not at the end of the provider's time.
			if got.Elapsed >= providerTimeout {
				t.Errorf("took %s, the whole provider timeout", got.Elapsed)
			}
		})
	}
}
