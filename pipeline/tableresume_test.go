package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/iceberg"
)

// TestTableOnlyJobResumesAfterTheTable: a job whose only output is a table
// and whose group lost its offsets (expired, deleted) resumes after the
// table's last batch, not from kafka.on_no_offset, where batches cut
// elsewhere than before would straddle what the table holds.
func TestTableOnlyJobResumesAfterTheTable(t *testing.T) {
	dir := t.TempDir()
	cfg := sink.Config{Iceberg: &sink.IcebergConfig{Table: "logs.raw", SpoolDir: filepath.Join(dir, "spool"),
		Catalog: sink.IcebergCatalog{URI: filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse")}}}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	schema := &sink.Schema{Fields: []sink.Field{{Name: "msg", Type: sink.String}}}
	ctx := context.Background()
	tbl, err := iceberg.New(ctx, cfg.Iceberg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	store := worker.TableResume{Table: tbl}
	if _, ok, err := store.LoadResume(ctx, "logs", 0); ok || err != nil {
		t.Fatalf("an empty table: ok %v, err %v; want nothing", ok, err)
	}
	b := &sink.Batch{Topic: "logs", Partition: 0, First: 100, Last: 199, Schema: schema, TopicID: "id-1"}
	for range 50 {
		b.Rows = append(b.Rows, sink.Row{"x"})
	}
	if err := tbl.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	out, ok, err := store.LoadResume(ctx, "logs", 0)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if out.First != 100 || out.Last != 199 || out.Next != 200 || out.TopicID != "id-1" || time.Since(out.Written) > time.Minute {
		t.Errorf("resume record %+v, want 100..199, next 200, topic id-1, written now", out)
	}
	for _, tc := range []struct {
		name  string
		group position
		want  int64
	}{
		{"offsets lost", position{Offset: -1, Cut: -1}, 200},
		{"group behind", position{Offset: 50, Cut: -1}, 200},
		{"the pending cut committed to the table", position{Offset: 100, Cut: 199}, 200},
		{"group ahead (batches with no rows)", position{Offset: 300, Cut: -1}, 300},
	} {
		if s, err := start.Decide(start.Known{Topic: "logs", Group: tc.group, Table: out.Known()}); err != nil || s.Offset != tc.want {
			t.Errorf("%s: starts at %d (%v), want %d", tc.name, s.Offset, err, tc.want)
		}
	}
}

// tableJobConfig is a job of group whose only output is the table of
// tableConfig(dir), cutting every maxRows records, starting at start.
func tableJobConfig(brokers []string, dir, group, start string, maxRows int) string {
	return fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: %s, start_offset: %s}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: %d}
sinks: {%s}
dead_letter: {on_error: skip}
`, strings.Join(brokers, `", "`), group, start, maxRows, strings.TrimSuffix(tableConfig(dir), ", "))
}

// tableRecords is the row count of the table of tableConfig(dir).
func tableRecords(t *testing.T, dir string) int64 {
	t.Helper()
	tbl := tableOfDir(t, dir)
	defer tbl.Close()
	n, err := tbl.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTableTakesEachRecordOnceFromAnyStart: what a user expects of a
// table when a job reads again what it holds. A second job with a new
// group (kafka.start_offset earliest, cutting elsewhere) writes only what
// the table lacks: its positions win over the earlier start. A backfill
// or replay of a job with a table stops before reading, saying what to
// run instead, and leaves the table as it was.
func TestTableTakesEachRecordOnceFromAnyStart(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, "logs"))
	base := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	produceTimed(t, c.ListenAddrs(), base, 300)
	dir := t.TempDir()
	runTestJob(t, tableJobConfig(c.ListenAddrs(), dir, "first", "earliest", 40), Mode{UntilNow: true})
	if n := tableRecords(t, dir); n != 300 {
		t.Fatalf("the first job: %d rows, want 300", n)
	}
	produceTimed(t, c.ListenAddrs(), base.Add(300*time.Second), 100)
	runTestJob(t, tableJobConfig(c.ListenAddrs(), dir, "second", "earliest", 70), Mode{UntilNow: true})
	if n := tableRecords(t, dir); n != 400 {
		t.Errorf("a new group from earliest: %d rows, want 400 (each record once)", n)
	}
	from, to := base, base.Add(time.Hour)
	err := runTestJobErr(t, tableJobConfig(c.ListenAddrs(), dir, "unused", "earliest", 70), Mode{From: from, To: to, Prefix: BackfillPrefix(from, to)})
	if err == nil || !strings.Contains(err.Error(), "sinks.files only") || !strings.Contains(err.Error(), "kafka.start_offset") {
		t.Errorf("a backfill into the table ended with %v; want it refused, naming what to run instead", err)
	}
	if n := tableRecords(t, dir); n != 400 {
		t.Errorf("after the refused backfill: %d rows, want 400", n)
	}
}
