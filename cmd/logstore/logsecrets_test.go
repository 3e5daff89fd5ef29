package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestSecretsStayOutOfLogs runs the job on an embedded cluster that demands
// SASL/PLAIN into an in-process S3, with the SASL credentials and a static
// S3 secret key in the config, at log level debug: once with the right
// password and once with a wrong one (the error paths are where secrets
// leak), and `logstore check`. No output line may hold a secret.
func TestSecretsStayOutOfLogs(t *testing.T) {
	const user, password, wrong, s3Secret = "logstore", "sasl-pw-7f3a9c51", "wrong-pw-e61b0d44", "s3-secret-4b8e20aa"
	secrets := []string{password, wrong, s3Secret}
	backend := s3mem.New()
	if err := backend.CreateBucket("logs"); err != nil {
		t.Fatal(err)
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer s3srv.Close()
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(v, "")
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "logs"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", user, password))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	produce(t, cluster.ListenAddrs(), user, password, 50)

	dir := t.TempDir()
	writeConfig := func(name, pw string) string {
		path := filepath.Join(dir, name)
		cfg := fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [logs]
  group: secrets-test
  start_offset: earliest
  sasl: {mechanism: plain, username: %s, password: %q}
rack: {static: az-a, providers: [static]}
sinks:
  files:
    url: s3://logs/%s
    s3: {endpoint: %q, region: us-east-1, access_key_id: AKIDLOGSTORETEST, secret_access_key: %q}
dead_letter: {files: true}
log: {level: debug, format: json}
run: {shutdown_timeout: 5s, progress_interval: 1s}
`, brokers, user, pw, name, s3srv.URL, s3Secret)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good, bad := writeConfig("good.yaml", password), writeConfig("bad.yaml", wrong)

	for _, run := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"check", []string{"check", "-c", good}, true},
		{"run", []string{"run", "-c", good, "--until", "now"}, true},
		{"run with a wrong password", []string{"run", "-c", bad, "--until", "now"}, false},
	} {
		t.Run(run.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code, stdout, stderr := runCLIContext(ctx, run.args...)
			if (code == exitOK) != run.ok {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if run.name == "run" && !strings.Contains(stdout, "rows written     50 ") {
				t.Errorf("the run did not write the 50 records to S3:\n%s", stdout)
			}
			if run.name == "run" && strings.Count(stderr, "\n") < 3 {
				t.Errorf("only %d log lines at debug level; the test sees too little:\n%s", strings.Count(stderr, "\n"), stderr)
			}
			for _, s := range secrets {
				for i, line := range strings.Split(stdout+stderr, "\n") {
					if strings.Contains(line, s) {
						t.Errorf("output line %d holds a password: %s", i+1, line)
					}
				}
			}
		})
	}
}

// runCLIContext runs the CLI in-process until ctx ends (a cancelled context
// is the graceful stop, as a SIGTERM would be).
func runCLIContext(ctx context.Context, args ...string) (int, string, string) {
	var stdout, stderr strings.Builder
	cmd, ok := commands[args[0]]
	if !ok {
		return exitUsage, "", "unknown command " + args[0]
	}
	err := cmd.run(ctx, args[1:], &stdout, &stderr)
	return exitCode(err, &stderr), stdout.String(), stderr.String()
}

func produce(t *testing.T, brokers []string, user, password string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		r := &kgo.Record{Topic: "logs", Value: fmt.Appendf(nil, `{"ts":"2026-11-29T06:00:%02dZ","level":"INFO","i":%d}`, i%60, i)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("producing with SASL: %v", err)
		}
	}
}
