//go:build integration

package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2ECooperativeMemberDiesBetweenRounds: a cooperative rebalance takes
// two rounds: in the first the members that keep reading give up the
// partitions that move, in the second the newcomer gets them. Here the
// giving-up member is SIGKILLed between the two: S3 is down, so with
// kafka.revoke: write it is still writing the batch it cut when it dies.
// (The newcomer reaches S3 all along: its start checks that it can write.)
// Its session ends, the second round gives its partitions (the ones that
// were moving and the ones it kept) to the others, and once S3 is back
// every record is in the bucket exactly once: the cut the dead member
// marked is re-cut by the new owner under the same names.
func TestE2ECooperativeMemberDiesBetweenRounds(t *testing.T) {
	const n, partitions, badEvery = 24_000, 6, 100
	bucket, direct, proxy := s3BehindProxy(t)

	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	out := "s3://" + bucket + "/coop"
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, "/unused", 0)
	text := strings.Replace(readFile(t, cfg), "url: file:///unused", "url: "+out, 1)
	// Slow enough that every partition is mid-batch when az-c joins; the
	// moving batches are written before they move (revoke: write).
	text = strings.Replace(text, "  group: ", "  max_records_per_second: 1000\n  revoke: write\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &chaosMember{t: t, cfg: cfg, rack: "az-a"}
	b := &chaosMember{t: t, cfg: cfg, rack: "az-b"}
	a.start()
	b.start()
	defer func() {
		for _, m := range []*chaosMember{a, b} {
			m.stop(syscall.SIGKILL)
		}
	}()
	for deadline := time.Now().Add(90 * time.Second); committedTotal(t, group, topic, partitions) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing committed in 90 s:\n%s", tail(a.output(), 30))
		}
	}

	proxy.SetFailRate(1) // S3 down for a and b: a revoked batch cannot be written
	c := &chaosMember{t: t, cfg: cfg, rack: "az-c", env: []string{"AWS_ENDPOINT_URL_S3=" + direct}}
	c.start()
	defer c.stop(syscall.SIGKILL)
	// The first round: a and b give up a partition each and start writing
	// its batch; the second round waits for them.
	var giver *chaosMember
	for deadline := time.Now().Add(60 * time.Second); giver == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no member gave up a partition in 60 s:\naz-a:\n%s\naz-b:\n%s\naz-c:\n%s", tail(a.output(), 10), tail(b.output(), 10), tail(c.output(), 10))
		}
		for _, m := range []*chaosMember{a, b} {
			if revokedSince(m.output()) {
				giver = m
				break
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // into its write's retries
	if g := generations(giver.output()); g[len(g)-1].Revoked == 0 {
		t.Fatalf("member %s is in generation %d already: the kill must fall between the rounds", giver.rack, g[len(g)-1].Generation)
	}
	giver.stop(syscall.SIGKILL)
	t.Logf("member %s SIGKILLed between the two rounds, writing the batch it gave up", giver.rack)
	time.Sleep(2 * time.Second)
	proxy.SetFailRate(0)

	end := int64(n)
	for deadline := time.Now().Add(3 * time.Minute); committedTotal(t, group, topic, partitions) < end; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("committed %d of %d after 3 min:\n%s", committedTotal(t, group, topic, partitions), end, tail(c.output(), 30))
		}
	}
	for _, m := range []*chaosMember{a, b, c} {
		if m != giver {
			m.stop(syscall.SIGTERM)
		}
	}
	last := generations(c.output())
	t.Logf("az-c's last generation: %d, %d partitions", last[len(last)-1].Generation, last[len(last)-1].Partitions)

	t.Setenv("AWS_ENDPOINT_URL_S3", direct) // pyarrow reads the bucket itself
	v := verifyWithPyarrow(t, out, nil)
	good, bad := expect(n, partitions, badEvery)
	checkCounts(t, v, good, bad)
	checkEveryFile(t, out)
}

// generationLine is a member's "generation" log line.
type generationLine struct {
	Generation int `json:"generation"`
	Partitions int `json:"partitions"`
	Revoked    int `json:"revoked"`
}

// generations are the member's generation lines, in order.
func generations(log string) []generationLine {
	var gs []generationLine
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"msg":"generation"`) {
			continue
		}
		var g generationLine
		if json.Unmarshal([]byte(line), &g) == nil {
			gs = append(gs, g)
		}
	}
	return gs
}

// revokedSince says whether the member's latest generation took
// partitions away from it: it is between the two rounds of a cooperative
// rebalance.
func revokedSince(log string) bool {
	gs := generations(log)
	return len(gs) > 0 && gs[len(gs)-1].Revoked > 0
}
