package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func runBackfill(t *testing.T, brokers []string, out string, maxRows int, from, to time.Time) {
	t.Helper()
	runTestJob(t, backfillConfig(brokers, out, fmt.Sprintf("{max_rows: %d}", maxRows)), Mode{From: from, To: to, Prefix: BackfillPrefix(from, to)})
}

// backfillConfig is a backfill's config with the given batch section.
func backfillConfig(brokers []string, out, batch string) string {
	return fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: unused}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: %s
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {files: true}
`, strings.Join(brokers, `", "`), batch, out)
}

// TestBackfillIsIdempotent: a backfill re-run (after a crash, with
// batch.max_rows changed, with records of the range arriving late) writes
// exactly the files of its first run, under _backfill/ where the table's
// readers skip it, with a manifest.
func TestBackfillIsIdempotent(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, "logs"))
	base := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	produceAt := func(n int) { produceTimed(t, c.ListenAddrs(), base, n) }
	produceAt(3000)
	out := t.TempDir()
	from, to := base.Add(100*time.Second), base.Add(2900*time.Second)
	runBackfill(t, c.ListenAddrs(), out, 500_000, from, to)
	first := testkit.FilesUnder(t, out)
	produceAt(200) // late records with timestamps inside the range
	runBackfill(t, c.ListenAddrs(), out, 70, from, to)
	again := testkit.FilesUnder(t, out)
	if !slices.Equal(first, again) {
		t.Errorf("the re-run wrote other files:\n first %v\n again %v", first, again)
	}
	prefix := BackfillPrefix(from, to)
	if !strings.HasPrefix(prefix, "_") || len(first) < 3 {
		t.Fatalf("prefix %s, files %v", prefix, first)
	}
	for _, f := range first {
		if !strings.HasPrefix(f, prefix) {
			t.Errorf("%s is outside %s", f, prefix)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, prefix, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m backfillManifest
	if err := json.Unmarshal(raw, &m); err != nil || !m.Complete || len(m.Ranges["logs"]) != 2 {
		t.Errorf("manifest %s (%v): want it complete with both partitions", raw, err)
	}
}

// produceTimed produces n records to logs, one a second from base.
func produceTimed(t *testing.T, brokers []string, base time.Time, n int) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "logs", Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: &kafka.Transport{}}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: []byte(fmt.Sprintf(`{"n": %d}`, i)), Time: base.Add(time.Duration(i) * time.Second)}
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestBackfillWithDefaultMaxRowsIsRepeatable: with batch.max_rows at its
// default (0) a backfill's stride was min(max_rows, ...) = 0, so no cut was
// planned and batches ended wherever max_bytes, max_age or the budget
// ended them: a re-run of the same range under other flush settings wrote
// other names, every record twice (issue 26, defect 5). Its cut points
// come from offsets alone.
func TestBackfillWithDefaultMaxRowsIsRepeatable(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, "logs"))
	base := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	produceTimed(t, c.ListenAddrs(), base, 3000)
	out := t.TempDir()
	from, to := base.Add(100*time.Second), base.Add(2900*time.Second)
	mode := Mode{From: from, To: to, Prefix: BackfillPrefix(from, to)}
	runTestJob(t, backfillConfig(c.ListenAddrs(), out, "{max_bytes: 20000}"), mode)
	first := testkit.FilesUnder(t, out)
	runTestJob(t, backfillConfig(c.ListenAddrs(), out, "{max_bytes: 70000, max_age: 1ms}"), mode)
	if again := testkit.FilesUnder(t, out); !slices.Equal(first, again) {
		t.Errorf("the re-run wrote other names:\n first %v\n again %v", first, again)
	}
	raw, err := os.ReadFile(filepath.Join(out, mode.Prefix, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m backfillManifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Stride <= 0 {
		t.Errorf("manifest %s (%v): want a stride, the backfill's cut points", raw, err)
	}
}

// TestBackfillRefusesAManifestWithoutCutPoints: a backfill planned by a
// version that chose no stride cannot be re-run under the same names; the
// re-run says so before it writes anything.
func TestBackfillRefusesAManifestWithoutCutPoints(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"))
	base := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	produceTimed(t, c.ListenAddrs(), base, 10)
	out := t.TempDir()
	from, to := base, base.Add(time.Hour)
	prefix := BackfillPrefix(from, to)
	os.MkdirAll(filepath.Join(out, prefix), 0o755)
	old := `{"from": "2026-11-29T06:00:00Z", "to": "2026-11-29T07:00:00Z", "stride": 0, "ranges": {"logs": {"0": [0, 10]}}}`
	if err := os.WriteFile(filepath.Join(out, prefix, manifestName), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runTestJobErr(t, backfillConfig(c.ListenAddrs(), out, "{}"), Mode{From: from, To: to, Prefix: prefix})
	if err == nil || !strings.Contains(err.Error(), "without cut points") || !strings.Contains(err.Error(), "delete "+prefix) {
		t.Errorf("err %v: want a refusal that says to delete %s", err, prefix)
	}
	if files := testkit.FilesUnder(t, out); len(files) != 1 {
		t.Errorf("files %v: want nothing written but the old manifest", files)
	}
}
