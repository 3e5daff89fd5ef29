//go:build integration

package main

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/loggen"

	"github.com/logstore/logstore/internal/testkit"
)

// TestSASLSessionsExpireThroughALongRun: the SASL_SSL listener ends every
// SCRAM session after 5 s (connections.max.reauth.ms). A streaming run of
// 30 s through it (six session lifetimes for every connection), while records are produced all along, must renew its
// sessions in place: no fallback to another rack's leader, no rebalance
// after the first assignment, and every record exactly once.
func TestSASLSessionsExpireThroughALongRun(t *testing.T) {
	const partitions, badEvery, runFor = 3, 100, 30 * time.Second
	tlsDir := clusterTLSDir(t)
	topic := e2eTopic(t, partitions)
	group := topic + "-g"
	dir := t.TempDir()
	cfg := secureConfig(t, topic, dir, saslSSLBootstrap,
		"tls: {enabled: true, ca_file: "+tlsDir+"/ca.crt}",
		"sasl: {mechanism: scram-sha-512, username: "+scramUser+", password: ${LOGSTORE_TEST_KAFKA_PASSWORD}}")

	cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg)
	cmd.Env = append(cmd.Environ(), "LOGSTORE_TEST_KAFKA_PASSWORD="+scramPassword, "LOGSTORE_RACK=az-a")
	var out testkit.LogBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // only if the test fails before the stop

	// Records all through the run: 500 every 100 ms.
	produced := streamLogs(t, topic, partitions, badEvery, runFor, 500, 100*time.Millisecond)
	n := int(produced)
	for deadline := time.Now().Add(60 * time.Second); committedTotal(t, group, topic, partitions) < produced; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records committed 60 s after the producer stopped:\n%s", committedTotal(t, group, topic, partitions), n, tail(out.String(), 30))
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, tail(out.String(), 30))
	}
	log := out.String()
	t.Logf("produced %d records over %s:\n%s", n, runFor, summaryOf(log))

	c := countLogLines(log)
	t.Logf("log: %d generations, %d rebalances, %d fallbacks to the leader, %d read retries, %d commit retries, %d group warnings, %d lines naming EOF, %d warnings in all",
		c.generations, c.rebalances, c.fallbacks, c.readRetries, c.commitRetries, c.groupWarnings, c.eof, len(c.warnings))
	for _, w := range c.warnings[:min(5, len(c.warnings))] {
		t.Logf("warning: %s", w)
	}
	if c.fallbacks != 0 {
		t.Errorf("%d fallbacks to the leader: an expiring session looked like a lost replica", c.fallbacks)
	}
	if c.generations != 1 || c.rebalances != 0 {
		t.Errorf("%d generations, %d rebalances; want the first assignment only", c.generations, c.rebalances)
	}
	if c.eof != 0 {
		t.Errorf("%d log lines name an EOF: a broker closed a connection whose session ended", c.eof)
	}
	v := checkExactlyOnce(t, dir, n, partitions, badEvery)
	if v.Rows != n-n/badEvery || v.DeadLetters != n/badEvery {
		t.Errorf("rows %d, dead letters %d; want %d and %d", v.Rows, v.DeadLetters, n-n/badEvery, n/badEvery)
	}
}

// logCounts are what a job's JSON log says about its connections and group.
type logCounts struct {
	generations, rebalances, fallbacks, readRetries, commitRetries, groupWarnings, eof int
	warnings                                                                           []string
}

var logMsg = regexp.MustCompile(`"msg":"((?:[^"\\]|\\.)*)"`)

func countLogLines(log string) logCounts {
	var c logCounts
	for _, line := range strings.Split(log, "\n") {
		m := logMsg.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		msg := m[1]
		switch {
		case msg == "generation":
			c.generations++
		case msg == "rejoining the group" || msg == "joining the group failed; joining again":
			c.rebalances++
		case msg == "preferred read replica failed; reading from the leader":
			c.fallbacks++
		case msg == "retrying" || msg == "fetch failed; retrying":
			c.readRetries++
		case strings.HasPrefix(msg, "commit") && strings.HasSuffix(msg, "failed; retrying"):
			c.commitRetries++
		case msg == "heartbeat failed; trying again":
			c.groupWarnings++
		}
		if strings.Contains(line, "EOF") {
			c.eof++
		}
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			c.warnings = append(c.warnings, line)
		}
	}
	return c
}

// streamLogs produces, every tick for d, the next perTick records of the
// sequence produceLogs writes (record i to partition i%partitions), through
// the plaintext listener, and returns how many it wrote.
func streamLogs(t *testing.T, topic string, partitions, badEvery int, d time.Duration, perTick int, tick time.Duration) int64 {
	t.Helper()
	w := &kafka.Writer{
		Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		BatchSize: perTick, BatchTimeout: 5 * time.Millisecond, Compression: kafka.Lz4,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
			i, _ := strconv.Atoi(string(m.Headers[0].Value))
			return i % partitions
		}),
	}
	defer w.Close()
	gen := loggen.New(7, e2eStart, time.Millisecond)
	gen.BadEvery = badEvery
	var i int64
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-ticker.C {
		batch := make([]kafka.Message, 0, perTick)
		for range perTick {
			key, value, at := gen.Next()
			idx := i
			i++
			batch = append(batch, kafka.Message{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...), Time: at,
				Headers: []kafka.Header{{Key: "i", Value: []byte(strconv.FormatInt(idx, 10))}}})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.WriteMessages(ctx, batch...)
		cancel()
		if err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	return i
}
