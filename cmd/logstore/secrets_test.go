package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/pipeline"
)

// TestCheckRedactsSecrets: a SASL password from the environment and an S3
// secret key from a file are read (a missing file is an error at its
// file:line) and shown by `check` only as <redacted>.
func TestCheckRedactsSecrets(t *testing.T) {
	const password, s3Secret = "Kafka-Pa55word", "S3-secret/Key+9"
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "s3-secret-key")
	if err := os.WriteFile(keyFile, []byte(s3Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOGSTORE_TEST_PASSWORD", password)
	config := func(secretRef string) string {
		path := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(path, jobWithSecrets("${LOGSTORE_TEST_PASSWORD}", secretRef), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	code, stdout, stderr := runCLI(t, "check", "-c", config("${file:"+keyFile+"}"))
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"password: <redacted>", "secret_access_key: <redacted>", "access_key_id: AKIDEXAMPLE"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check does not show %q:\n%s", want, stdout)
		}
	}
	for _, secret := range []string{password, s3Secret} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("check printed %q", secret)
		}
	}

	path := config("${file:" + dir + "/missing}")
	code, _, stderr = runCLI(t, "check", "-c", path)
	if want := path + ":15:26: sinks.files.s3.secret_access_key: secret file"; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("missing secret file: exit %d, %q; want exit %d and %q", code, stderr, exitUsage, want)
	}
}

// A password from the environment reaches the client whole, whatever YAML
// it holds, and a bad one never shows in an error.
func TestSecretFromEnvironmentIsNotYAML(t *testing.T) {
	for _, password := range []string{"@Top-secret", "Top: secret", "Top #secret", "[Top-secret", `"Top-secret`, `it's \ "both"`, "tab\tand ünïcode", "   spaces  "} {
		t.Run(password, func(t *testing.T) {
			t.Setenv("LOGSTORE_TEST_PASSWORD", password)
			cfg, err := pipeline.Parse("job.yaml", jobWithSecrets("${LOGSTORE_TEST_PASSWORD}   # from the pod's secret", "not-used"))
			if err != nil {
				if strings.Contains(err.Error(), strings.Fields(password)[0]) {
					t.Errorf("the error shows the password: %v", err)
				}
				t.Fatal(err)
			}
			if got := cfg.Kafka.SASL.Password.Reveal(); got != password {
				t.Errorf("password %q reached the config as %q", password, got)
			}
		})
	}
}

// jobWithSecrets is a job with a SCRAM password (line 9) and an S3 secret
// key (line 15) written as given.
func jobWithSecrets(password, s3SecretKey string) []byte {
	return []byte(fmt.Sprintf(`kafka:
  brokers: [127.0.0.1:9096]
  topics: [logs]
  group: g
  tls: {enabled: true}
  sasl:
    mechanism: scram-sha-512
    username: logstore
    password: %s
sinks:
  files:
    url: s3://bucket/logs
    s3:
      access_key_id: AKIDEXAMPLE
      secret_access_key: %s
dead_letter: {on_error: skip}
`, password, s3SecretKey))
}
