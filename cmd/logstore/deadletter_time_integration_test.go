//go:build integration

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/sink"
)

// TestE2EDeadLetterStampedInTheFarFutureReachesTheTopic: malformed records
// stamped in microseconds as milliseconds (the year 58,000) go to the
// dead-letter topic, which refuses such a timestamp (Kafka 4's
// message.timestamp.after.max.ms is an hour); the run retried the produce,
// or the transaction with exactly_once, forever and its partition stood
// still. Each letter must reach the topic once, its own timestamp in a
// header, in both deliveries.
func TestE2EDeadLetterStampedInTheFarFutureReachesTheTopic(t *testing.T) {
	for _, delivery := range []string{sink.DeliveryAtLeastOnce, sink.DeliveryExactlyOnce} {
		t.Run(delivery, func(t *testing.T) {
			t.Parallel() // topics and groups of their own
			topic, out, dlq := e2eTopic(t, 3), e2eTopic(t, 1), e2eTopic(t, 1)
			produceLogs(t, topic, 300, 3, 0)
			odd := produceOddRecords(t, topic, 100, 0) // partition 2, offsets 100-104: three malformed, two good
			cfg := e2eConfig(t, topic, topic+"-g", t.TempDir(), 1000)
			text := strings.Replace(readFile(t, cfg), "dead_letter:\n  files: true\n", fmt.Sprintf(
				"  kafka: {topic: %s, delivery: %s, transaction_timeout: 5s}\ndead_letter:\n  files: true\n  topic: %s\n", out, delivery, dlq), 1)
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg, "--until", "now")
			cmd.Env = append(os.Environ(), "LOGSTORE_RACK=az-a")
			var log strings.Builder
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- cmd.Wait() }()
			select {
			case err := <-ended:
				if err != nil {
					t.Fatalf("the run: %v\n%s", err, tail(log.String(), 20))
				}
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-ended
				t.Fatalf("the run did not end within 60 s:\n%s", tail(log.String(), 10))
			}
			want := map[string]bool{}
			for _, o := range odd.offsets {
				if o.bad {
					want[fmt.Sprintf("%d:%d", o.partition, o.offset)] = true
				}
			}
			letters := readIsolated(t, dlq, true, len(want))
			seen := map[string]int{}
			for _, r := range letters {
				seen[sourceOf(r)]++
				var stamped string
				for _, h := range r.Headers {
					if h.Key == "logstore.timestamp" {
						stamped = string(h.Value)
					}
				}
				if ms, _ := strconv.ParseInt(stamped, 10, 64); ms != microsAsMillis {
					t.Errorf("dead letter %s: header logstore.timestamp %q, want the record's own %d", sourceOf(r), stamped, microsAsMillis)
				}
			}
			for pos := range want {
				if seen[pos] != 1 {
					t.Errorf("dead letter %s read %d times, want once", pos, seen[pos])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("dead letters %v, want %v", seen, want)
			}
		})
	}
}
