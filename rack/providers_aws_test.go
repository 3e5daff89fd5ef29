package rack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// imdsV1Only answers like an instance that never enabled IMDSv2 (or an
// emulator of one): the token request is not found, and metadata comes to
// anyone who asks without a token.
func imdsV1Only(tokenless *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") == "" {
			tokenless.Add(1)
		}
		switch r.URL.Path {
		case "/latest/meta-data/placement/availability-zone":
			fmt.Fprint(w, "eu-west-1b")
		case "/latest/meta-data/placement/availability-zone-id":
			fmt.Fprint(w, "euw1-az2")
		default:
			http.NotFound(w, r)
		}
	}
}

// IMDSv1 is used only when rack.imds_v1_fallback says so; by default not
// one request goes out without a session token.
func TestIMDSv1OnlyWhenConfigured(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fallback  bool
		outcome   Outcome
		want      []string
		detail    string
		tokenless bool
	}{
		{"default: IMDSv2 only", false, OutcomeError, nil, "imds_v1_fallback", false},
		{"rack.imds_v1_fallback: true", true, OutcomeAnswered, []string{"eu-west-1b", "euw1-az2"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			var tokenless atomic.Int32
			srv := httptest.NewServer(imdsV1Only(&tokenless))
			defer srv.Close()
			t.Setenv(envIMDSEndpoint, srv.URL)
			res, err := Detect(context.Background(), Config{
				Providers: []string{"aws-imds"}, ProviderTimeout: time.Second, Budget: 3 * time.Second,
				IMDSv1Fallback: tc.fallback,
			}, discardLog())
			if err != nil {
				t.Fatal(err)
			}
			got := res.Trace[0]
			if got.Outcome != tc.outcome || !strings.Contains(got.Detail, tc.detail) {
				t.Fatalf("trace = %+v, want outcome %s with detail containing %q", got, tc.outcome, tc.detail)
			}
			if want := orEmpty(tc.want); !slices.Equal(res.Candidates, want) {
				t.Errorf("candidates = %q, want %q", res.Candidates, want)
			}
			if (tokenless.Load() > 0) != tc.tokenless {
				t.Errorf("%d requests without a token; want some: %v", tokenless.Load(), tc.tokenless)
			}
		})
	}
}

// TestIMDSTokenForbiddenSaysWhy: an IMDS that answers the token request
// with 403 was reported as "GET …/api/token" (the request is a PUT) with
// advice to require IMDSv2, which does not help: IMDS answers 403 when it is
// disabled on the instance or when the request carries X-Forwarded-For (it
// passed a proxy).
func TestIMDSTokenForbiddenSaysWhy(t *testing.T) {
	isolate(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	t.Setenv(envIMDSEndpoint, srv.URL)
	res, err := Detect(context.Background(), Config{
		Providers: []string{"aws-imds"}, ProviderTimeout: time.Second, Budget: 3 * time.Second,
	}, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	got := res.Trace[0]
	if got.Outcome != OutcomeError {
		t.Fatalf("trace = %+v, want an error", got)
	}
	for _, want := range []string{"PUT " + srv.URL + "/latest/api/token", "HTTP 403", "disabled", "X-Forwarded-For", "rack.static"} {
		if !strings.Contains(got.Detail, want) {
			t.Errorf("the detail does not say %q:\n%s", want, got.Detail)
		}
	}
	for _, wrong := range []string{"GET " + srv.URL + "/latest/api/token", "http-tokens required"} {
		if strings.Contains(got.Detail, wrong) {
			t.Errorf("the detail says %q:\n%s", wrong, got.Detail)
		}
	}
}
