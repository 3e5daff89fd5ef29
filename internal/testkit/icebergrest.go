package testkit

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// IcebergREST starts Apache Iceberg's REST catalog test server
// (scripts/iceberg-rest.sh) with its warehouse in bucket on the S3 server
// (S3Env first), stops it when the test ends, and returns its URI. Each
// server has a port and a state folder of its own, so tests of several
// packages, which go test runs at once, each have theirs.
func IcebergREST(t *testing.T, bucket string) string {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "iceberg-rest.sh")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	env := append(os.Environ(), "ICEBERG_REST_WAREHOUSE=s3://"+bucket+"/warehouse",
		"ICEBERG_REST_PORT="+port, "ICEBERG_REST_STATE="+t.TempDir())
	run := func(verb string) ([]byte, error) {
		cmd := exec.Command("bash", script, verb)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	if out, err := run("start"); err != nil {
		t.Fatalf("iceberg-rest.sh start (scripts/setup.sh resolves its jars): %v\n%s", err, out)
	} else {
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := run("stop"); err != nil {
			t.Errorf("iceberg-rest.sh stop: %v\n%s", err, out)
		}
	})
	return "http://127.0.0.1:" + port
}
