//go:build !notable

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/iceberg"
)

// tableJob writes a job config whose output is a table on a SQLite
// catalog and a local warehouse, with the columns of jobSchema.
func tableJob(t *testing.T) (path string, cfg *sink.IcebergConfig) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "job.yaml")
	text := fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:9092"], topics: [logs], group: g}
schema:
  columns: [{name: msg, type: string}, {name: ts, type: timestamp}, {name: attrs, type: "map<string,string>"}]
sinks:
  iceberg:
    table: logs.raw
    catalog: {uri: %s, warehouse: "file://%s"}
    spool_dir: %s
dead_letter: {on_error: skip}
`, filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse"), filepath.Join(dir, "spool"))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, c.Sinks.Iceberg
}

var jobSchema = &sink.Schema{Fields: []sink.Field{{Name: "msg", Type: sink.String}, {Name: "ts", Type: sink.Timestamp, Unit: time.Millisecond},
	{Name: "attrs", Type: sink.StringMap}}}

func jobRow(i int64) sink.Row {
	return sink.Row{fmt.Sprint("row ", i), time.Date(2026, 11, 29, 7, 0, 0, int(i)*int(time.Millisecond), time.UTC), map[string]string{"i": fmt.Sprint(i)}}
}

// TestTableExpireKeepsPositions: `logstore table expire` drops old
// snapshots, and `logstore table positions` still shows every partition's
// last offset afterwards (a restart after expiry must not write again what
// the table holds).
func TestTableExpireKeepsPositions(t *testing.T) {
	path, cfg := tableJob(t)
	schema := jobSchema
	tb, err := iceberg.New(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for p := range 3 { // three commits, one per partition
		b := &sink.Batch{Topic: "logs", Partition: p, First: 0, Last: int64(10 * (p + 1)), Schema: schema, Rows: []sink.Row{jobRow(int64(p))}}
		if err := tb.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "table", "expire", "-c", path, "--older-than", "0s", "--retain-last", "1")
	if code != exitOK || !strings.Contains(out, "expired 2 of 3 snapshots") {
		t.Fatalf("table expire: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "table", "positions", "-c", path)
	if code != exitOK {
		t.Fatalf("table positions: exit %d\n%s", code, errOut)
	}
	for p, want := range []string{"logs 0 10 11 expired", "logs 1 20 21 expired", "logs 2 30 31 "} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.Join(strings.Fields(line), " ")+" ", want) {
				found = true
			}
		}
		if !found {
			t.Errorf("partition %d: no line %q in\n%s", p, want, out)
		}
	}
}

// TestTableCompactRewritesSmallFiles: `logstore table compact` replaces a
// partition's small files by one, pyiceberg reads the same rows from it,
// and the positions stay.
func TestTableCompactRewritesSmallFiles(t *testing.T) {
	path, cfg := tableJob(t)
	schema := jobSchema
	tb, err := iceberg.New(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for i := range int64(6) { // six one-row files
		b := &sink.Batch{Topic: "logs", Partition: 0, First: i, Last: i, Schema: schema, Rows: []sink.Row{jobRow(i)}}
		if err := tb.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "table", "compact", "-c", path)
	if code != exitOK || !strings.Contains(out, "rewrote 6 data files into 1") {
		t.Fatalf("table compact: exit %d\n%s%s", code, out, errOut)
	}
	read, err := exec.Command(testkit.PyarrowPython(t), "../../scripts/read_iceberg.py", "--catalog", cfg.Catalog.URI, "--table", cfg.Table).Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v", err)
	}
	var r struct {
		Files []string
		Rows  []map[string]any
	}
	if err := json.Unmarshal(read, &r); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, row := range r.Rows {
		msgs = append(msgs, fmt.Sprint(row["msg"], " ", row["ts"], " ", row["attrs"]))
	}
	slices.Sort(msgs)
	var wants []string
	for i := range 6 {
		frac := fmt.Sprintf(".00%d000", i)
		if i == 0 {
			frac = "" // Python's isoformat leaves out a zero fraction
		}
		wants = append(wants, fmt.Sprintf("row %d 2026-11-29T07:00:00%s+00:00 map[i:%d]", i, frac, i))
	}
	want := strings.Join(wants, ",")
	if len(r.Files) != 1 || strings.Join(msgs, ",") != want {
		t.Errorf("after compaction: %d files, rows %v; want 1 file and rows 0..5", len(r.Files), msgs)
	}
	if _, out, _ = runCLI(t, "table", "positions", "-c", path); !strings.Contains(strings.Join(strings.Fields(out), " "), "logs 0 5 6") {
		t.Errorf("positions after compaction:\n%s", out)
	}
	// The rewritten file keeps the column metrics readers prune by.
	tbl, err := loadTable(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) != 1 {
		t.Fatalf("planning the compacted table: %d files, %v", len(tasks), err)
	}
	df := tasks[0].File
	ts := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	lo, hi := df.LowerBoundValues()[2], df.UpperBoundValues()[2] // ts
	if len(lo) != 8 || len(hi) != 8 || int64(binary.LittleEndian.Uint64(lo)) != ts.UnixMicro() || int64(binary.LittleEndian.Uint64(hi)) != ts.Add(5*time.Millisecond).UnixMicro() {
		t.Errorf("compacted file's ts bounds %x..%x, want 07:00:00.000..07:00:00.005", lo, hi)
	}
	if string(df.LowerBoundValues()[1]) != "row 0" || string(df.UpperBoundValues()[1]) != "row 5" || df.NullValueCounts()[1] != 0 || df.ValueCounts()[1] != 6 {
		t.Errorf("compacted file's msg metrics: %q..%q, %d values, %d nulls", df.LowerBoundValues()[1], df.UpperBoundValues()[1], df.ValueCounts()[1], df.NullValueCounts()[1])
	}
}

// TestTableUpkeepCommand: `logstore table upkeep`, for a CronJob, does the
// job's upkeep once: snapshots expired to the newest kept, positions kept.
func TestTableUpkeepCommand(t *testing.T) {
	path, cfg := tableJob(t)
	tb, err := iceberg.New(context.Background(), cfg, jobSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for i := range int64(4) {
		b := &sink.Batch{Topic: "logs", Partition: 0, First: i, Last: i, Schema: jobSchema, Rows: []sink.Row{jobRow(i)}}
		if err := tb.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "table", "upkeep", "-c", path, "--snapshot-max-age", "0s", "--retain-last", "2")
	if code != exitOK || !strings.Contains(out, "expired 2 of 4 snapshots") || !strings.Contains(out, "deleted 0 orphan files") {
		t.Fatalf("table upkeep: exit %d\n%s%s", code, out, errOut)
	}
	if _, out, _ = runCLI(t, "table", "positions", "-c", path); !strings.Contains(strings.Join(strings.Fields(out), " "), "logs 0 3 4") {
		t.Errorf("positions after upkeep:\n%s", out)
	}
	if code, _, errOut = runCLI(t, "table", "upkeep", "-c", path, "--orphan-min-age", "5m"); code != exitUsage || !strings.Contains(errOut, "--orphan-min-age") {
		t.Errorf("--orphan-min-age 5m: exit %d, %s", code, errOut)
	}
}

// TestTableThatCannotTakeTheSchemaIsAConfigError: a config whose column
// the table holds wider (long, the output writes int) stops the job at
// start with exit 2, a config error that a Job's podFailurePolicy does not
// retry (it exited 1, retried six times), and `logstore check` finds it
// when the catalog answers.
func TestTableThatCannotTakeTheSchemaIsAConfigError(t *testing.T) {
	path, cfg := tableJob(t)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wide := strings.Replace(string(text), "{name: msg, type: string}", "{name: msg, type: string}, {name: n, type: int64}", 1)
	if err := os.WriteFile(path, []byte(wide), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := runMain([]string{"check", "-c", path}, &stdout, &stderr); code != 0 { // no table yet: the job creates it
		t.Fatalf("check of a config whose table does not exist yet: exit %d\n%s", code, stderr.String())
	}
	wideSchema := &sink.Schema{Fields: append(slices.Clone(jobSchema.Fields[:1]), append([]sink.Field{{Name: "n", Type: sink.Int64}}, jobSchema.Fields[1:]...)...)}
	tb, err := iceberg.New(context.Background(), cfg, wideSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb.Close()

	if err := os.WriteFile(path, []byte(strings.Replace(wide, "type: int64", "type: int32", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	narrow := &sink.Schema{Fields: slices.Clone(wideSchema.Fields)}
	narrow.Fields[1].Type = sink.Int32
	_, err = sink.OpenTable(context.Background(), cfg, narrow, nil) // as the job opens it
	if code := exitCode(err, io.Discard); code != exitUsage {
		t.Errorf("the job's start: %v: exit %d, want %d", err, code, exitUsage)
	}
	stdout.Reset()
	stderr.Reset()
	code := runMain([]string{"check", "-c", path}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), `sinks.iceberg: table logs.raw: column "n" is long, the output writes int`) {
		t.Errorf("check: exit %d, want %d naming the column\n%s", code, exitUsage, stderr.String())
	}
}
