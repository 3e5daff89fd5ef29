package testkit

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// S3Env points this test and the processes it starts at the S3 server of
// scripts/s3-server.sh (its endpoint and test credentials, as `env`
// prints them) and returns a fresh bucket, named from prefix.
func S3Env(t *testing.T, prefix string) string {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "s3-server.sh")
	if out, err := exec.Command("bash", script, "status").CombinedOutput(); err != nil {
		t.Fatalf("the S3 server is not up (%s): start it with scripts/s3-server.sh start", strings.TrimSpace(string(out)))
	}
	env, err := exec.Command("bash", script, "env").Output()
	if err != nil {
		t.Fatalf("scripts/s3-server.sh env: %v", err)
	}
	for _, line := range strings.Split(string(env), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "="); ok {
			t.Setenv(k, v)
		}
	}
	bucket := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	CreateBucket(t, bucket)
	return bucket
}

// S3ObjectFile is the file that holds bucket/key on the S3 server's disk:
// its posix backend keeps every object as a file, so a test can age one
// (os.Chtimes sets the object's Last-Modified), which no S3 call can.
func S3ObjectFile(t testing.TB, bucket, key string) string {
	t.Helper()
	return filepath.Join(StateDir(t), "s3", "data", bucket, filepath.FromSlash(key))
}
