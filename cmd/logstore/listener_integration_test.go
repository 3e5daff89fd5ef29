//go:build integration

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline"
)

// TestListenerOnTheCluster runs a streaming member in rack az-a on the
// three-rack cluster and reads its listener as Prometheus and the kubelet
// would: /readyz turns ready after the join, and /metrics shows the rack,
// the match, every partition's lag falling to 0 once all is read, and the
// fetched bytes coming from the member's own rack (follower fetching).
func TestListenerOnTheCluster(t *testing.T) {
	client := testkit.RequireCluster(t)
	// RF 3, one leader in each rack: only follower fetching keeps az-a local.
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1}, []int{3, 1, 2})
	const n = 3000
	p := testkit.Producer(t, topic)
	defer p.Close()
	for i := range n {
		r := &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"ts":"2026-11-29T06:00:00Z","level":"INFO","service":"api","i":%d}`, i)}
		if err := p.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	cfgText := fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [%s]
  group: %s
  start_offset: earliest
rack: {static: az-a, providers: [static]}
schema: {columns: [{name: ts, type: timestamp, required: true}, {name: level, type: string}]}
batch: {max_age: 1s}
sinks: {files: {url: %q}}
dead_letter: {files: true}
`, strings.Join(testkit.Brokers, ","), topic, topic, filepath.Join(dir, "out"))
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := pipeline.NewMetrics(nil)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	job, err := pipeline.NewJob(context.Background(), cfg, pipeline.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "group join") {
		t.Fatalf("/readyz before the join: %d %q", code, body)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx, pipeline.Mode{}) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(60 * time.Second)
	for {
		fams = scrapeFamilies(t, srv)
		if code, _ := get(t, srv, "/readyz"); code == http.StatusOK && sample(fams, "logstore_rows_written_total", nil) == n &&
			len(series(fams, "logstore_consumer_lag")) == 3 && sample(fams, "logstore_consumer_lag", nil) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every record committed with lag 0 within 60 s: rows %v, lag %v over %d partitions",
				sample(fams, "logstore_rows_written_total", nil), sample(fams, "logstore_consumer_lag", nil), len(series(fams, "logstore_consumer_lag")))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v := sample(fams, "logstore_rack_info", map[string]string{"rack": "az-a", "source": "static"}); v != 1 {
		t.Errorf("logstore_rack_info{rack=az-a,source=static} = %v, want 1", v)
	}
	if v := sample(fams, "logstore_rack_matched", nil); v != 1 {
		t.Errorf("logstore_rack_matched = %v, want 1", v)
	}
	same := sample(fams, "logstore_fetch_bytes_total", map[string]string{"locality": "same-rack"})
	cross := sample(fams, "logstore_fetch_bytes_total", map[string]string{"locality": "cross-rack"})
	if same == 0 || cross/(same+cross) > 0.01 {
		t.Errorf("fetched %v bytes same-rack, %v cross-rack; want over 99 %% from az-a", same, cross)
	}
	if v := sample(fams, "logstore_uncommitted_batch_age_seconds", nil); v != 0 {
		t.Errorf("uncommitted age sums to %v with everything committed", v)
	}
	t.Logf("same-rack %v bytes, cross-rack %v bytes (%.2f %%)", same, cross, 100*cross/(same+cross))
}

func scrapeFamilies(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	_, body := get(t, srv, "/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func series(fams map[string]*dto.MetricFamily, name string) []*dto.Metric {
	if f := fams[name]; f != nil {
		return f.Metric
	}
	return nil
}

// sample sums the gauge or counter samples of name whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, m := range series(fams, name) {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match != len(want) {
			continue
		}
		sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return sum
}
