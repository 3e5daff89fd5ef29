//go:build integration

package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/logstore/logstore/sink"
)

// TestE2EKafkaExactlyOnceLastBatchNotProducedAgainAfterOffsetsLost: a
// member killed after its last batch's transaction committed and before
// the resume record said so leaves the record pending; the next run finds
// the group past it and has nothing to read. When the group's offsets are
// then lost (expired after offsets.retention.minutes; here a new group
// name), the pending record must not make a run cut that batch again and
// produce it a second time: the group was past it, so the output holds it.
func TestE2EKafkaExactlyOnceLastBatchNotProducedAgainAfterOffsetsLost(t *testing.T) {
	const n, batch = 400, 100
	topic, out := e2eTopic(t, 1), e2eTopic(t, 1)
	produceLogs(t, topic, n, 1, 0)
	dir := t.TempDir()
	job := func(group string) string {
		cfg := e2eConfig(t, topic, group, dir, batch)
		text := strings.Replace(readFile(t, cfg), "dead_letter:\n", fmt.Sprintf("  kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}\ndead_letter:\n", out), 1)
		// Static: the second run takes the partition back at once.
		text = strings.Replace(text, "  session_timeout: 10s\n", "  group_instance_id: member-1\n  session_timeout: 10s\n", 1)
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := job(topic + "-g")
	fp := fmt.Sprintf("%s:%d", sink.FailTxnCommitted, n/batch)
	st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-a", "LOGSTORE_FAILPOINT="+fp)
	if ws, _ := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the run was not killed at %s (%v):\n%s", fp, st, tail(log, 20))
	}
	if st, log = runLogstore(t, cfg, "LOGSTORE_RACK=az-a"); !st.Success() {
		t.Fatalf("the run after the kill: %v\n%s", st, tail(log, 20))
	}
	if st, log = runLogstore(t, job(topic+"-g2"), "LOGSTORE_RACK=az-a"); !st.Success() {
		t.Fatalf("the run without the group's offsets: %v\n%s", st, tail(log, 20))
	}
	seen := map[string]int{}
	for _, r := range readIsolated(t, out, true, n) {
		seen[sourceOf(r)]++
	}
	for o := range n {
		if c := seen[fmt.Sprintf("0:%d", o)]; c != 1 {
			t.Errorf("source record 0:%d read %d times with read_committed", o, c)
		}
	}
	if t.Failed() {
		t.Logf("the run without the group's offsets:\n%s", tail(log, 20))
	}
}
