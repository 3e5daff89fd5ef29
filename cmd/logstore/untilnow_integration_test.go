//go:build integration

package main

import (
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestE2EUntilNowWaitsForADeadMembersPartitions: a streaming member (az-a,
// slowed down) shares the group with a bounded member (az-b, --until now)
// and is SIGKILLed once both hold partitions. The bounded member reads its
// own partitions in a second or two, while the dead member's stay assigned
// to it until its session ends. It must stay in the group, be given them
// and read them: every record once when it exits 0. It used to end at its
// own share with exit code 0 and the rest unread; here it ended at once,
// 0 records read, because the cooperative first round gives a newcomer
// nothing until the others let go.
func TestE2EUntilNowWaitsForADeadMembersPartitions(t *testing.T) {
	const n, partitions, badEvery = 6_000, 6, 100
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	group := topic + "-g"
	slow := e2eConfig(t, topic, group, dir, 5000)
	slowDown(t, slow, 50)
	a := &chaosMember{t: t, cfg: slow, rack: "az-a"}
	a.start()
	defer a.stop(syscall.SIGKILL)
	for deadline := time.Now().Add(time.Minute); !regexp.MustCompile(`"msg":"generation"`).MatchString(a.output()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("az-a: no generation within a minute:\n%s", tail(a.output(), 20))
		}
	}
	b := startBounded(t, e2eConfig(t, topic, group, dir, 5000), "az-b")
	b.waitFor(t, "az-b given partitions", regexp.MustCompile(`"msg":"generation".*"partitions":[1-9]`).MatchString)
	a.stop(syscall.SIGKILL)
	killed := time.Now()
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("az-b: %v\n%s", err, tail(b.out.String(), 30))
	}
	t.Logf("az-b ended %s after az-a was killed:\n%s", time.Since(killed).Round(100*time.Millisecond), summaryOf(b.out.String()))
	checkExactlyOnce(t, dir, n, partitions, badEvery)
}
