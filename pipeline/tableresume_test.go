package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/start"
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
	store := tableResume{tbl}
	if _, ok, err := store.loadResume(ctx, "logs", 0); ok || err != nil {
		t.Fatalf("an empty table: ok %v, err %v; want nothing", ok, err)
	}
	b := &sink.Batch{Topic: "logs", Partition: 0, First: 100, Last: 199, Schema: schema, TopicID: "id-1"}
	for range 50 {
		b.Rows = append(b.Rows, sink.Row{"x"})
	}
	if err := tbl.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	out, ok, err := store.loadResume(ctx, "logs", 0)
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
		if s, err := start.Decide(start.Known{Topic: "logs", Group: tc.group, Table: out.known()}); err != nil || s.Offset != tc.want {
			t.Errorf("%s: starts at %d (%v), want %d", tc.name, s.Offset, err, tc.want)
		}
	}
}
