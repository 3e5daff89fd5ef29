//go:build integration

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testkit"
)

// icebergREST starts the REST catalog (testkit.IcebergREST) and returns
// its URI.
func icebergREST(t *testing.T, bucket string) string { return testkit.IcebergREST(t, bucket) }

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
