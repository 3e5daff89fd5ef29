package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// IcebergREST starts Apache Iceberg's REST catalog test server
// (scripts/iceberg-rest.sh) with its warehouse in bucket on the S3 server
// (S3Env first), stops it when the test ends, and returns its URI.
func IcebergREST(t *testing.T, bucket string) string {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "iceberg-rest.sh")
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
