//go:build !nodemo && !notable

package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/logstore/logstore/internal/testkit"
)

// TestDemoWritesATable: `logstore demo --table` (make demo
// DEMO_FLAGS=--table) commits the run's rows to an Iceberg table beside
// the run's folder, and the table holds as many rows as the run wrote; the
// summary says pyiceberg reads it, and the command it suggests prints that
// count (it printed every row as one line of JSON, 102 MB for the default
// run).
func TestDemoWritesATable(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"demo", "--records", "5000", "--output", out, "--table"}, &stdout, &stderr); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	rows := demoSummaryLine(t, stdout.String(), `rows written +(\d+) in`)[1]
	catalogFile := demoSummaryLine(t, stdout.String(), `Iceberg table +logs\.demo, catalog (\S+),`)[1]
	if filepath.Dir(filepath.Dir(catalogFile)) != out {
		t.Errorf("the table's catalog %s is not beside the run's folder in %s", catalogFile, out)
	}
	cat, err := catalog.Load(context.Background(), "logstore", iceberg.Properties{
		"type": "sql", "uri": "file:" + catalogFile, sqlcat.DriverKey: "sqlite", sqlcat.DialectKey: string(sqlcat.SQLite)})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), []string{"logs", "demo"})
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		t.Fatal("the table has no snapshot")
	}
	if got := snap.Summary.Properties["total-records"]; got != rows {
		t.Errorf("the table holds %s rows; the run wrote %s", got, rows)
	}
	if !strings.Contains(stdout.String(), "pyiceberg") {
		t.Errorf("the summary does not say reading the table needs pyiceberg:\n%s", stdout.String())
	}
	read := regexp.MustCompile(`(?m)^ +scripts/read_iceberg\.py (.+)$`).FindStringSubmatch(stdout.String())
	if read == nil {
		t.Fatalf("the summary suggests no read command:\n%s", stdout.String())
	}
	got, err := exec.Command(testkit.PyarrowPython(t), append([]string{"../../scripts/read_iceberg.py"}, strings.Fields(read[1])...)...).Output()
	if err != nil {
		t.Fatalf("the suggested %s: %v", read[0], err)
	}
	if strings.TrimSpace(string(got)) != rows {
		t.Errorf("the suggested %s printed %.200q; want the count %s", read[0], got, rows)
	}
}
