//go:build integration

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
)

// icebergConfig is a job over topic into an Iceberg table: the SQLite
// catalog in dir, the warehouse in bucket on the test S3 server.
func icebergConfig(t *testing.T, topic, catalog, bucket string, maxRows int) string {
	t.Helper()
	cfg := fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [%s]
  group: %s-g
  # Static: a restarted member takes its partitions back at once instead
  # of waiting out the killed one's session.
  group_instance_id: member-1
  session_timeout: 10s
  heartbeat_interval: 1s
  fetch: {max_wait: 200ms, max_bytes: 1048576}
rack:
  providers: [env]
schema:
  columns:
    - {name: ts, type: timestamp, unit: ms, required: true}
    - {name: level, type: string, required: true}
    - {name: service, type: string, required: true}
    - {name: status, type: int32, source: http.status}
    - {name: latency_ms, type: float64, source: http.latency_ms}
    - {name: labels, type: "map<string,string>"}
    - {name: kafka_partition, type: int32, source: kafka.partition}
    - {name: kafka_offset, type: int64, source: kafka.offset}
batch:
  max_rows: %d
  max_age: 2s
sinks:
  iceberg:
    table: logs.%s
    catalog: {type: sql, uri: %s, warehouse: "s3://%s/warehouse"}
    partition_by: [{column: ts, transform: hour}, {column: level}]
dead_letter:
  on_error: skip # the generated records are all good
log:
  level: info
  format: json
`, bootstrap, topic, topic, maxRows, strings.ReplaceAll(topic, "-", "_"), catalog, bucket)
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type icebergRead struct {
	Types     map[string]string
	Spec      []string
	Snapshots int
	Files     []string
	Count     int
	Rows      []struct {
		Partition int   `json:"kafka_partition"`
		Offset    int64 `json:"kafka_offset"`
	}
}

// readIceberg reads the table with pyiceberg (scripts/read_iceberg.py), from
// the catalog (a SQLite file, or a REST catalog's http URI) and the S3
// server, as a user's reader would.
func readIceberg(t *testing.T, catalog, table string) icebergRead {
	t.Helper()
	python := testkit.PyarrowPython(t)
	kind := "--catalog"
	if strings.HasPrefix(catalog, "http") {
		kind = "--rest"
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "read_iceberg.py"), kind, catalog, "--table", table,
		"--s3-endpoint", os.Getenv("AWS_ENDPOINT_URL_S3"), "--s3-key", os.Getenv("AWS_ACCESS_KEY_ID"), "--s3-secret", os.Getenv("AWS_SECRET_ACCESS_KEY"))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pyiceberg (run scripts/setup.sh if it is missing): %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var r icebergRead
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %.500s", err, out)
	}
	return r
}

// killAndFinish runs the job once for each failpoint, each run killed with
// SIGKILL there, then once to the end. After a kill past the commit the
// restart finds the pending cut in the table (the table is the output's
// resume record), or re-cuts it and finds the table holds it: some run must
// say so.
func killAndFinish(t *testing.T, cfg string, failpoints ...string) {
	t.Helper()
	var outs strings.Builder
	for _, fp := range failpoints {
		start := time.Now()
		st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a", "LOGSTORE_FAILPOINT="+fp)
		outs.WriteString(out)
		t.Logf("killed at %s after %s", fp, time.Since(start).Round(100*time.Millisecond))
		ws, _ := st.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("failpoint %s: the run was not killed (%v):\n%s", fp, st, tail(out, 20))
		}
	}
	st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a")
	outs.WriteString(out)
	if !st.Success() {
		t.Fatalf("final run: %v\n%s", st, tail(out, 40))
	}
	if all := outs.String(); !strings.Contains(all, "the pending cut is in the output whole") && !strings.Contains(all, "the table holds this batch already") {
		t.Error("no run met a batch the table held: the kills after the commit were not answered by the table")
	}
}

// checkEachRecordOnce: offsets 0..n/partitions-1 of every partition are in
// the table once each, and nothing else is.
func (r icebergRead) checkEachRecordOnce(t *testing.T, n, partitions int) {
	t.Helper()
	seen := map[[2]int64]int{}
	for _, row := range r.Rows {
		seen[[2]int64{int64(row.Partition), row.Offset}]++
	}
	for p := range partitions {
		for off := range int64(n / partitions) {
			if c := seen[[2]int64{int64(p), off}]; c != 1 {
				t.Errorf("partition %d offset %d: %d rows in the table, want 1", p, off, c)
			}
		}
	}
	if r.Count != n {
		t.Errorf("the table has %d rows, want %d", r.Count, n)
	}
}

// TestE2EIcebergExactlyOnceThroughCrashes kills the job with SIGKILL after
// a batch's data files are stored and before their commit, and after the
// commit before the offset commit (a duplicate commit attempt, which the
// table's positions answer), restarts it each time, and
// reads the table with pyiceberg: every source record exactly once, with
// the types the config gives.
func TestE2EIcebergExactlyOnceThroughCrashes(t *testing.T) {
	const n, partitions = 6000, 3
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, 0)
	bucket := s3Env(t) // the S3 server's endpoint and credentials, for the job and pyiceberg
	catalog := filepath.Join(t.TempDir(), "catalog.db")
	// 2,000 records a partition in batches of 500: 12 commits in all.
	cfg := icebergConfig(t, topic, catalog, bucket, 500)
	killAndFinish(t, cfg, "table-files-written:2", "table-committed:2", "table-files-written:3", "table-committed:3")

	table := "logs." + strings.ReplaceAll(topic, "-", "_")
	r := readIceberg(t, catalog, table)
	r.checkEachRecordOnce(t, n, partitions)
	want := map[string]string{"ts": "timestamptz", "level": "string", "status": "int", "latency_ms": "double", "labels": "map<string, string>", "kafka_offset": "long"}
	for col, typ := range want {
		if r.Types[col] != typ {
			t.Errorf("column %s is %q, want %q", col, r.Types[col], typ)
		}
	}
	if strings.Join(r.Spec, ",") != "hour(ts),identity(level)" {
		t.Errorf("partition spec %v", r.Spec)
	}
	for _, f := range r.Files {
		if !strings.HasPrefix(f, "s3://"+bucket+"/warehouse/logs.db/") || !strings.Contains(f, "/data/ts_hour=") {
			t.Errorf("data file %s is not below the table's data folder", f)
			break
		}
	}
	t.Logf("%d rows in %d data files, %d snapshots", r.Count, len(r.Files), r.Snapshots)

	// Where the table stands, as `logstore table positions` shows it.
	pos, err := exec.Command(logstoreBinary(t), "table", "positions", "-c", cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("table positions: %v\n%s", err, pos)
	}
	last := map[string]string{}
	for _, line := range strings.Split(string(pos), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == topic {
			last[f[1]] = f[2]
		}
	}
	for p := range partitions {
		if got, want := last[fmt.Sprint(p)], fmt.Sprint(n/partitions-1); got != want {
			t.Errorf("table positions: partition %d at %q, want %s:\n%s", p, got, want, pos)
		}
	}
}
