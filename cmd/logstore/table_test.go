package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/iceberg"
)

// TestTableExpireKeepsPositions: `logstore table expire` drops old
// snapshots, and `logstore table positions` still shows every partition's
// last offset afterwards (a restart after expiry must not write again what
// the table holds).
func TestTableExpireKeepsPositions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	cfgText := fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:9092"], topics: [logs], group: g}
schema:
  columns: [{name: msg, type: string}]
sinks:
  iceberg:
    table: logs.raw
    catalog: {uri: %s, warehouse: "file://%s"}
    spool_dir: %s
dead_letter: {on_error: skip}
`, filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse"), filepath.Join(dir, "spool"))
	if err := os.WriteFile(path, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	schema := &sink.Schema{Fields: []sink.Field{{Name: "msg", Type: sink.String}}}
	tb, err := iceberg.New(context.Background(), cfg.Sinks.Iceberg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for p := range 3 { // three commits, one per partition
		b := &sink.Batch{Topic: "logs", Partition: p, First: 0, Last: int64(10 * (p + 1)), Schema: schema, Rows: []sink.Row{{"x"}}}
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
