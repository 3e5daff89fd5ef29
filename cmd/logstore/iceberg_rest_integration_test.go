//go:build integration

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// icebergREST starts Apache Iceberg's REST catalog test server
// (scripts/iceberg-rest.sh) with its warehouse in bucket, stops it when the
// test ends, and returns its URI.
func icebergREST(t *testing.T, bucket string) string {
	t.Helper()
	script := filepath.Join("..", "..", "scripts", "iceberg-rest.sh")
	start := exec.Command("bash", script, "start")
	start.Env = append(os.Environ(), "ICEBERG_REST_WAREHOUSE=s3://"+bucket+"/warehouse")
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("iceberg-rest.sh start (scripts/setup.sh resolves its jars): %v\n%s", err, out)
	} else {
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "stop").CombinedOutput(); err != nil {
			t.Errorf("iceberg-rest.sh stop: %v\n%s", err, out)
		}
	})
	uri, err := exec.Command("bash", script, "uri").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(uri))
}

// TestE2EIcebergRESTCatalogExactlyOnce runs the table sink against a real
// REST catalog (Iceberg's own test server, its table metadata on the S3
// server), kills the job with SIGKILL after a batch's files are stored and
// after a commit before the offset commit, restarts it, and reads the table
// with pyiceberg through the same REST catalog: every record once.
func TestE2EIcebergRESTCatalogExactlyOnce(t *testing.T) {
	const n, partitions = 3000, 3
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, 0)
	bucket := s3Env(t)
	uri := icebergREST(t, bucket)
	cfg := icebergConfig(t, topic, "unused", bucket, 250)
	text := readFile(t, cfg)
	sqlCatalog := "catalog: {type: sql, uri: unused, warehouse: \"s3://" + bucket + "/warehouse\"}"
	if !strings.Contains(text, sqlCatalog) {
		t.Fatalf("icebergConfig changed; no %q in\n%s", sqlCatalog, text)
	}
	// The warehouse is the server's; the job sends none of its own.
	text = strings.Replace(text, sqlCatalog, "catalog: {type: rest, uri: \""+uri+"\"}", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	killAndFinish(t, cfg, "table-files-written:2", "table-committed:3")

	table := "logs." + strings.ReplaceAll(topic, "-", "_")
	r := readIceberg(t, uri, table)
	r.checkEachRecordOnce(t, n, partitions)
	if r.Types["ts"] != "timestamptz" || r.Types["labels"] != "map<string, string>" {
		t.Errorf("types through the REST catalog: %v", r.Types)
	}
	if strings.Join(r.Spec, ",") != "hour(ts),identity(level)" {
		t.Errorf("partition spec %v", r.Spec)
	}
	for _, f := range r.Files {
		if !strings.HasPrefix(f, "s3://"+bucket+"/warehouse/") {
			t.Errorf("data file %s is not in the REST catalog's warehouse", f)
			break
		}
	}
	t.Logf("%d rows in %d data files, %d snapshots, through %s", r.Count, len(r.Files), r.Snapshots, uri)
}
