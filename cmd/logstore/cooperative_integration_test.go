//go:build integration

package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
)

// revoking matches a member's generation line that gives partitions up:
// the first round of a cooperative rebalance for the member that must let
// them go.
var revoking = regexp.MustCompile(`"msg":"generation".*"revoked":[1-9]`)

// TestE2EMemberDiesBetweenCooperativeRounds: az-a reads a topic alone; az-b
// joins, and the leader's first round takes from az-a the partitions bound
// for az-b (withheld from az-b until az-a lets go). az-a is killed
// (SIGKILL) the moment it learns this, before the follow-up round: its
// partitions are held by a dead member until its session times out, then
// given out. Every record once, with the run again for what the bounded
// members left.
func TestE2EMemberDiesBetweenCooperativeRounds(t *testing.T) {
	const n, partitions, badEvery = 120_000, 12, 100
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 5000)
	slow := strings.Replace(readFile(t, cfg), "  group: ", "  max_records_per_second: 8000\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	type member struct {
		cmd *exec.Cmd
		out testkit.LogBuffer
	}
	start := func(rack string) *member {
		m := &member{cmd: exec.Command(logstoreBinary(t), "run", "-c", cfg, "--until", "now")}
		m.cmd.Env = append(os.Environ(), "LOGSTORE_RACK="+rack)
		m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.cmd.Process.Kill() })
		return m
	}
	waitFor := func(m *member, what *regexp.Regexp) {
		deadline := time.Now().Add(time.Minute)
		for !what.MatchString(m.out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within a minute:\n%s", what, tail(m.out.String(), 30))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	a := start("az-a")
	waitFor(a, regexp.MustCompile(`"msg":"generation"`))
	time.Sleep(1500 * time.Millisecond) // open batches in every partition
	b := start("az-b")
	waitFor(a, revoking)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	t.Logf("az-a killed between the rounds:\n%s", tail(a.out.String(), 6))
	if err := b.cmd.Wait(); err != nil {
		t.Errorf("az-b: %v\n%s", err, tail(b.out.String(), 40))
	}
	if st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-c"); !st.Success() {
		t.Errorf("the run again: %v\n%s", st, tail(out, 30))
	}
	v := checkExactlyOnce(t, dir, n, partitions, badEvery)
	if t.Failed() {
		t.Logf("az-a:\n%s\naz-b:\n%s", a.out.String(), b.out.String())
	}
	t.Logf("rows %d, dead letters %d", v.Rows, v.DeadLetters)
}
