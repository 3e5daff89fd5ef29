//go:build integration

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// The secure listeners of scripts/kafka-cluster.sh (see its header): SSL
// with required client certificates on node*10000+9094, SASL_SSL with
// SCRAM-SHA-512 on node*10000+9095, both with certificates of a test CA.
const (
	sslBootstrap     = "127.0.0.1:19094,127.0.0.1:29094,127.0.0.1:39094"
	saslSSLBootstrap = "127.0.0.1:19095,127.0.0.1:29095,127.0.0.1:39095"
	scramUser        = "logstore"
	scramPassword    = "logstore-test-secret"
)

// clusterTLSDir is where kafka-cluster.sh keeps the test CA and the client
// certificate.
func clusterTLSDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "kafka-cluster.sh"), "tls-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err != nil {
		t.Fatalf("no test CA in %s (scripts/kafka-cluster.sh start makes it): %v", dir, err)
	}
	return dir
}

// secureConfig is e2eConfig with its brokers replaced by brokers and the
// given lines added to the kafka section.
func secureConfig(t *testing.T, topic, dir, brokers string, kafkaLines ...string) string {
	t.Helper()
	path := e2eConfig(t, topic, topic+"-g", dir, 2000)
	text := readFile(t, path)
	plain := "  brokers: [" + bootstrap + "]\n"
	if !strings.Contains(text, plain) {
		t.Fatal("e2eConfig no longer lists the plaintext brokers on one line")
	}
	text = strings.Replace(text, plain, "  brokers: ["+brokers+"]\n  "+strings.Join(kafkaLines, "\n  ")+"\n", 1)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestE2ESecureListeners runs the job end to end through TLS with a custom
// CA and a client certificate, and through SASL_SSL with SCRAM-SHA-512, and
// reads every record back exactly once.
func TestE2ESecureListeners(t *testing.T) {
	const n, partitions, badEvery = 30_000, 3, 100
	tlsDir := clusterTLSDir(t)
	secretFile := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(secretFile, []byte(scramPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, brokers string
		kafka         []string
		env           []string
	}{
		{"mTLS", sslBootstrap, []string{
			"tls: {enabled: true, ca_file: " + tlsDir + "/ca.crt, cert_file: " + tlsDir + "/client.crt, key_file: " + tlsDir + "/client.key}",
		}, nil},
		{"SCRAM-SHA-512 password from env", saslSSLBootstrap, []string{
			"tls: {enabled: true, ca_file: " + tlsDir + "/ca.crt}",
			"sasl: {mechanism: scram-sha-512, username: " + scramUser + ", password: ${LOGSTORE_TEST_KAFKA_PASSWORD}}",
		}, []string{"LOGSTORE_TEST_KAFKA_PASSWORD=" + scramPassword}},
		{"SCRAM-SHA-512 password from file", saslSSLBootstrap, []string{
			"tls: {enabled: true, ca_file: " + tlsDir + "/ca.crt}",
			"sasl: {mechanism: scram-sha-512, username: " + scramUser + ", password: '${file:" + secretFile + "}'}",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := e2eTopic(t, partitions)
			produceLogs(t, topic, n, partitions, badEvery)
			dir := t.TempDir()
			cfg := secureConfig(t, topic, dir, tc.brokers, tc.kafka...)
			start := time.Now()
			st, out := runLogstore(t, cfg, append(tc.env, "LOGSTORE_RACK=az-a")...)
			if !st.Success() {
				t.Fatalf("logstore run: %v\n%s", st, tail(out, 40))
			}
			t.Logf("read %d records in %s:\n%s", n, time.Since(start).Round(time.Millisecond), summaryOf(out))
			if strings.Contains(out, scramPassword) {
				t.Error("the SCRAM password shows in the job's output")
			}
			// The SASL_SSL listener ends sessions that do not re-authenticate
			// within 5 s; say what the run met, for the record.
			var warnings []string
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
					warnings = append(warnings, line)
				}
			}
			if len(warnings) > 0 {
				t.Logf("%d warnings or errors, the first: %s", len(warnings), strings.Join(warnings[:min(3, len(warnings))], "\n"))
			}
			v := checkExactlyOnce(t, dir, n, partitions, badEvery)
			if v.Rows != n-n/badEvery || v.DeadLetters != n/badEvery {
				t.Errorf("rows %d, dead letters %d; want %d and %d", v.Rows, v.DeadLetters, n-n/badEvery, n/badEvery)
			}
		})
	}
}

// TestSecureListenersRefuseStrangers proves the listeners the test above
// passes through do check: no client certificate, or a wrong SCRAM
// password, and the broker refuses.
func TestSecureListenersRefuseStrangers(t *testing.T) {
	tlsDir := clusterTLSDir(t)
	pem, err := os.ReadFile(filepath.Join(tlsDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client, err := tls.LoadX509KeyPair(filepath.Join(tlsDir, "client.crt"), filepath.Join(tlsDir, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	apiVersions := func(d *kafka.Dialer, addr string) error {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = conn.ApiVersions()
		return err
	}
	withCert := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12}
	noCert := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	good, _ := scram.Mechanism(scram.SHA512, scramUser, scramPassword)
	bad, _ := scram.Mechanism(scram.SHA512, scramUser, "not-the-password")
	addr := strings.Split(sslBootstrap, ",")[0]
	saslAddr := strings.Split(saslSSLBootstrap, ",")[0]
	for _, tc := range []struct {
		name   string
		dialer *kafka.Dialer
		addr   string
		ok     bool
	}{
		{"SSL with the client certificate", &kafka.Dialer{TLS: withCert}, addr, true},
		{"SSL without a client certificate", &kafka.Dialer{TLS: noCert}, addr, false},
		{"SSL, broker certificate not from a trusted CA", &kafka.Dialer{TLS: &tls.Config{Certificates: withCert.Certificates, MinVersion: tls.VersionTLS12}}, addr, false},
		{"SASL_SSL with the SCRAM password", &kafka.Dialer{TLS: noCert, SASLMechanism: good}, saslAddr, true},
		{"SASL_SSL with a wrong SCRAM password", &kafka.Dialer{TLS: noCert, SASLMechanism: bad}, saslAddr, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.dialer.Timeout = 10 * time.Second
			err := apiVersions(tc.dialer, tc.addr)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("the broker accepted it")
			case !tc.ok:
				var unknownCA x509.UnknownAuthorityError
				t.Logf("refused as it should be: %v (unknown CA: %v)", err, errors.As(err, &unknownCA))
			}
		})
	}
}

// TestSecretsNeverPrinted runs `check` and a short job, at debug level, with
// a SCRAM password (from the environment) and an S3 secret key (from a file)
// in the config, and finds neither in anything logstore printed. The run
// uses both, so they were really read: the job authenticates to the
// SASL_SSL listener and writes to the S3 server with the config's keys only.
func TestSecretsNeverPrinted(t *testing.T) {
	const n, partitions = 5_000, 3
	bucket := s3Env(t)
	accessKey, s3Secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	secretFile := filepath.Join(t.TempDir(), "s3-secret-key")
	if err := os.WriteFile(secretFile, []byte(s3Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsDir := clusterTLSDir(t)
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, 1000)
	cfg := secureConfig(t, topic, "/unused", saslSSLBootstrap,
		"tls: {enabled: true, ca_file: "+tlsDir+"/ca.crt}",
		"sasl: {mechanism: scram-sha-512, username: "+scramUser+", password: ${LOGSTORE_TEST_KAFKA_PASSWORD}}")
	text := strings.Replace(readFile(t, cfg), "    url: file:///unused\n",
		"    url: s3://"+bucket+"/raw\n    s3: {access_key_id: "+accessKey+", secret_access_key: '${file:"+secretFile+"}'}\n", 1)
	text = strings.Replace(text, "  level: info\n", "  level: debug\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The S3 keys reach the job through the config only.
	env := []string{"LOGSTORE_TEST_KAFKA_PASSWORD=" + scramPassword, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "LOGSTORE_RACK=az-b"}

	check := exec.Command(logstoreBinary(t), "check", "-c", cfg)
	check.Env = append(os.Environ(), env...)
	checked, err := check.CombinedOutput()
	if err != nil {
		t.Fatalf("logstore check: %v\n%s", err, checked)
	}
	if got := strings.Count(string(checked), "<redacted>"); got != 2 {
		t.Errorf("check shows <redacted> %d times, want 2 (kafka.sasl.password, sinks.files.s3.secret_access_key):\n%s", got, checked)
	}

	st, out := runLogstore(t, cfg, env...)
	if !st.Success() {
		t.Fatalf("logstore run: %v\n%s", st, tail(out, 40))
	}
	if got := committedTotal(t, topic+"-g", topic, partitions); got != n {
		t.Errorf("committed %d of %d records", got, n)
	}
	debugLines := strings.Count(out, `"level":"DEBUG"`)
	if debugLines == 0 {
		t.Error("no debug lines: the run did not log at the level that says the most")
	}
	for name, secret := range map[string]string{"SCRAM password": scramPassword, "S3 secret key": s3Secret} {
		for what, text := range map[string]string{"check": string(checked), "the run's log": out} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows in %s", name, what)
			}
		}
	}
	t.Logf("check output and %d log lines (%d at debug) hold neither secret", strings.Count(out, "\n"), debugLines)
}
