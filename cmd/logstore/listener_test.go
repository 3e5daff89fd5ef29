//go:build !nodemo

package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/pipeline"
)

// demoJobWithListener makes a job (not yet started) for the demo's config on an
// embedded cluster holding n demo logs, with its metrics listener served by
// an httptest server from before the job exists, as `logstore run` serves
// it. It returns the job's constructor so a test can look at /readyz first.
func demoJobWithListener(t *testing.T, n int) (srv *httptest.Server, newJob func() *pipeline.Job) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	if err := produceDemoLogs(context.Background(), cluster.ListenAddrs(), n, 100); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOGSTORE_DEMO_BROKERS", strings.Join(cluster.ListenAddrs(), ","))
	t.Setenv("LOGSTORE_DEMO_OUTPUT", filepath.Join(t.TempDir(), "out"))
	t.Setenv("LOGSTORE_RACK", "")
	// Set here, not left to whatever a demo test before it set: run alone,
	// the test must find the embedded config whole.
	t.Setenv("LOGSTORE_DEMO_ZONE", "az-a")
	cfg, err := pipeline.Parse("demo.yaml (embedded)", demoConfig)
	if err != nil {
		t.Fatal(err)
	}
	m := pipeline.NewMetrics(nil)
	srv = httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv, func() *pipeline.Job {
		job, err := pipeline.NewJob(context.Background(), cfg, pipeline.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { job.Close() })
		return job
	}
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	res, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// scrape reads /metrics: metric family name → the family's samples summed.
func scrape(t *testing.T, srv *httptest.Server) map[string]float64 {
	t.Helper()
	_, body := get(t, srv, "/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] += m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name] += float64(m.Histogram.GetSampleCount())
			default:
				out[name] += 0
			}
		}
	}
	return out
}

// TestReadyzAfterJoin: /healthz answers from the start; /readyz is 503
// until the zone is known, the sinks preflighted and the group joined, 200
// from the join on, and 503 again once the graceful stop begins.
func TestReadyzAfterJoin(t *testing.T) {
	srv, newJob := demoJobWithListener(t, 2000)
	if code, _ := get(t, srv, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz before the job: %d", code)
	}
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "zone detection") {
		t.Fatalf("/readyz before the job: %d %q", code, body)
	}
	job := newJob()
	code, body := get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "group join") || strings.Contains(body, "zone") || strings.Contains(body, "preflight") {
		t.Fatalf("/readyz with the zone found and the sinks open, before the join: %d %q", code, body)
	}
	if n := scrape(t, srv)["logstore_rebalances_total"]; n != 0 {
		t.Fatalf("joined %v times before Run", n)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx, pipeline.Mode{}) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body = get(t, srv, "/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never turned ready: %d %q", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := scrape(t, srv)["logstore_rebalances_total"]; n < 1 {
		t.Errorf("/readyz turned ready with %v joins", n)
	}
	stop()
	code, body = get(t, srv, "/readyz")
	for i := 0; code == http.StatusOK && i < 250; i++ {
		time.Sleep(20 * time.Millisecond)
		code, body = get(t, srv, "/readyz")
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
		t.Errorf("/readyz after the stop began: %d %q", code, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, srv, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while stopping: %d", code)
	}
}
