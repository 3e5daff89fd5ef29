package rack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/confkey"
)

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// capturedLog records warnings and above, as a user would see them.
func capturedLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), &buf
}

// silentServer accepts connections and never answers: a metadata endpoint
// behind a hop limit, or a firewall that swallows the reply.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// The case the issue names: an endpoint takes the connection and never
// answers; detection still ends inside its budget with the next answer.
func TestSilentEndpointFallsThroughWithinBudget(t *testing.T) {
	isolate(t)
	silent := silentServer(t)
	t.Setenv(envIMDSEndpoint, silent)
	t.Setenv(envGCEMetadataHost, strings.TrimPrefix(silent, "http://"))
	azure := httptest.NewServer(requireHeader("Metadata", "true", azureComputeJSON))
	defer azure.Close()
	t.Setenv(envAzureIMDSEndpoint, azure.URL)

	const budget = 2 * time.Second
	start := time.Now()
	res, err := Detect(context.Background(), Config{
		Providers:       []string{"aws-imds", "gcp", "azure"},
		ProviderTimeout: 400 * time.Millisecond,
		Budget:          budget,
	}, discardLog())
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed > budget+250*time.Millisecond {
		t.Errorf("detection took %s, budget %s", elapsed, budget)
	}
	if res.Rack != "eastus-1" || res.Source != "azure" {
		t.Errorf("rack %q from %q, want eastus-1 from azure", res.Rack, res.Source)
	}
	want := []Outcome{OutcomeTimeout, OutcomeTimeout, OutcomeAnswered}
	for i, e := range res.Trace {
		if e.Outcome != want[i] {
			t.Errorf("%s: %s (%s), want %s", e.Provider, e.Outcome, e.Detail, want[i])
		}
	}
	if d := res.Trace[0].Detail; !strings.Contains(d, "hop limit to 2") || !strings.Contains(d, "rack.static") {
		t.Errorf("IMDS timeout detail %q should tell a container user to set the hop limit to 2", d)
	}
}

func TestBudgetBoundsTheChain(t *testing.T) {
	isolate(t)
	silent := silentServer(t)
	t.Setenv(envGCEMetadataHost, strings.TrimPrefix(silent, "http://"))
	t.Setenv(envAzureIMDSEndpoint, silent)

	const budget = 500 * time.Millisecond
	start := time.Now()
	res, err := Detect(context.Background(), Config{
		Providers:       []string{"gcp", "azure"},
		ProviderTimeout: 2 * time.Second,
		Budget:          budget,
	}, discardLog())
	if elapsed := time.Since(start); elapsed > budget+250*time.Millisecond {
		t.Errorf("detection took %s, budget %s", elapsed, budget)
	}
	if err != nil || res.Rack != "" {
		t.Fatalf("got rack %q, err %v; want rack-blind and no error", res.Rack, err)
	}
	if e := res.Trace[1]; e.Outcome != OutcomeTimeout || !strings.Contains(e.Detail, "not tried") {
		t.Errorf("azure: %s (%s), want timeout, not tried", e.Outcome, e.Detail)
	}
}

// A provider stuck where its context cannot reach (a read from a hung mount)
// must not hold start-up.
func TestStuckProviderIsLeftBehind(t *testing.T) {
	isolate(t)
	release := make(chan struct{})
	defer close(release)
	saved := providers["env"]
	providers["env"] = provider{find: func(context.Context, Config) (Identity, error) {
		<-release
		return Identity{}, nil
	}}
	defer func() { providers["env"] = saved }()

	start := time.Now()
	res, err := Detect(context.Background(), Config{
		Static:          "az-b",
		Providers:       []string{"env", "static"},
		ProviderTimeout: 200 * time.Millisecond,
	}, discardLog())
	if elapsed := time.Since(start); err != nil || elapsed > time.Second {
		t.Fatalf("err %v after %s", err, elapsed)
	}
	if res.Rack != "az-b" || res.Trace[0].Outcome != OutcomeTimeout {
		t.Errorf("rack %q, first trace %+v; want az-b after env timed out", res.Rack, res.Trace[0])
	}
}

func TestNoAnswerIsRackBlind(t *testing.T) {
	isolate(t)
	log, buf := capturedLog()
	res, err := Detect(context.Background(), Config{Providers: []string{"env", "aws-ecs"}}, log)
	if err != nil || res.Rack != "" {
		t.Fatalf("rack %q, err %v; want rack-blind and no error", res.Rack, err)
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 || !strings.Contains(buf.String(), "reading rack-blind") {
		t.Errorf("want one rack-blind warning, got:\n%s", buf)
	}
}

func TestStaticAnswersEvenWhenLeftOutOfTheChain(t *testing.T) {
	isolate(t)
	res, err := Detect(context.Background(), Config{Static: "az-c", Providers: []string{"env"}}, discardLog())
	if err != nil || res.Rack != "az-c" || res.Source != "static" {
		t.Errorf("rack %q from %q, err %v; want az-c from static", res.Rack, res.Source, err)
	}
}

func TestDetectRejectsUnknownProvider(t *testing.T) {
	_, err := Detect(context.Background(), Config{Providers: []string{"env", "openstack"}}, discardLog())
	var keyErr *confkey.Error
	if !errors.As(err, &keyErr) || keyErr.Key != "providers[1]" {
		t.Errorf("err = %v, want a *confkey.Error on providers[1]", err)
	}
}

func TestEveryDefaultProviderExists(t *testing.T) {
	for _, name := range DefaultProviders {
		if providers[name].find == nil {
			t.Errorf("provider %q is in DefaultProviders but not implemented", name)
		}
	}
}

// The shape `logstore rack --json` prints.
func TestResultJSON(t *testing.T) {
	isolate(t)
	t.Setenv(envRack, "az-a")
	res, err := Detect(context.Background(), Config{Providers: []string{"static", "env"}}, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Rack       string
		Source     string
		Candidates []string
		Trace      []struct{ Provider, Outcome, Detail, Elapsed string }
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Rack != "az-a" || got.Source != "env" || len(got.Candidates) != 1 || len(got.Trace) != 2 {
		t.Fatalf("json = %s", b)
	}
	if got.Trace[0].Outcome != "absent" {
		t.Errorf("static outcome = %q, want absent", got.Trace[0].Outcome)
	}
	if _, err := time.ParseDuration(got.Trace[1].Elapsed); err != nil {
		t.Errorf("elapsed %q is not a duration: %v", got.Trace[1].Elapsed, err)
	}

	t.Setenv(envRack, "")
	blind, err := Detect(context.Background(), Config{Providers: []string{"env"}}, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(blind); !strings.Contains(string(b), `"rack":"","source":"","candidates":[]`) {
		t.Errorf("a rack-blind result should print an empty rack and [] candidates, got %s", b)
	}
}
