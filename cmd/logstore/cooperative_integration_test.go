//go:build integration

package main

import (
	"errors"
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
	slowDown(t, cfg, 8000)
	start := func(rack string) *boundedMember { return startBounded(t, cfg, rack) }
	waitFor := func(m *boundedMember, what *regexp.Regexp) { m.waitFor(t, what.String(), what.MatchString) }
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

// TestE2EFencedTwinExits4: two processes run with one
// kafka.group_instance_id (two pods given one name). The second one's
// join fences the first, which stops with exit code 4 and an error naming
// the key; the second reads on.
func TestE2EFencedTwinExits4(t *testing.T) {
	const n, partitions = 12_000, 12
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, 100)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 5000)
	static := strings.Replace(readFile(t, cfg), "  group: ", "  group_instance_id: twin\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(static), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(rack string) (*exec.Cmd, *testkit.LogBuffer) {
		cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg)
		cmd.Env = append(os.Environ(), "LOGSTORE_RACK="+rack)
		out := &testkit.LogBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, out
	}
	first, firstOut := start("az-a")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(firstOut.String(), `"msg":"generation"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no generation within a minute:\n%s", tail(firstOut.String(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	second, secondOut := start("az-b")
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitFenced || !strings.Contains(firstOut.String(), "kafka.group_instance_id") {
			t.Errorf("the fenced process ended with %v; want exit code %d and an error naming kafka.group_instance_id:\n%s", err, exitFenced, tail(firstOut.String(), 10))
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("the first process still runs 45s after its twin joined:\n%s", tail(firstOut.String(), 20))
	}
	_ = second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Errorf("the twin: %v\n%s", err, tail(secondOut.String(), 20))
	}
}
