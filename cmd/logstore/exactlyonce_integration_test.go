//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/sink"
)

// TestE2EKafkaExactlyOnceAcrossKillAndRebalance: two members with
// sinks.kafka.delivery: exactly_once; one is SIGKILLed in the middle of a
// transaction (its batch's rows produced, its dead letters and next not),
// the other takes its partitions at the rebalance that follows, waiting
// for the dead member's transaction to be aborted; the killed member comes
// back, and the group rebalances again. A read_committed consumer of the
// output topic then reads every good source record once, and the
// dead-letter topic every bad one once; read_uncommitted shows the aborted
// rows were written (the test killed a transaction, not an idle member).
func TestE2EKafkaExactlyOnceAcrossKillAndRebalance(t *testing.T) {
	const n, partitions, badEvery = 6_000, 6, 50
	topic := e2eTopic(t, partitions)
	out := e2eTopic(t, 3)
	dlq := e2eTopic(t, 1)
	produceLogs(t, topic, n, partitions, badEvery)
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, t.TempDir(), 250)
	text := strings.Replace(readFile(t, cfg), "dead_letter:\n  files: true\n",
		fmt.Sprintf("  kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 2s}\ndead_letter:\n  files: true\n  topic: %s\n", out, dlq), 1)
	text = strings.Replace(text, "session_timeout: 10s", "session_timeout: 6s\n  rebalance_timeout: 10s", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	victim := &chaosMember{t: t, cfg: cfg, rack: "az-a"}
	survivor := &chaosMember{t: t, cfg: cfg, rack: "az-b"}
	os.Setenv("LOGSTORE_FAILPOINT", sink.FailInTxn+":3")
	victim.start()
	os.Unsetenv("LOGSTORE_FAILPOINT")
	survivor.start()
	defer survivor.stop(syscall.SIGTERM)
	select {
	case <-victim.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the member never reached its third transaction:\n%s", tail(victim.output(), 20))
	}
	if st := victim.cmd.ProcessState; st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the member ended otherwise than killed at the failpoint (%v):\n%s", victim.cmd.ProcessState, tail(victim.output(), 20))
	}
	// The survivor takes everything once the victim's session expires,
	// then the victim comes back and takes its share again.
	time.Sleep(8 * time.Second)
	victim.start()
	defer victim.stop(syscall.SIGTERM)
	deadline := time.Now().Add(90 * time.Second)
	for committedTotal(t, group, topic, partitions) < int64(n/partitions*partitions) {
		if time.Now().After(deadline) {
			t.Fatalf("the group committed %d of %d\nsurvivor:\n%s\nvictim:\n%s", committedTotal(t, group, topic, partitions), n,
				tail(survivor.output(), 20), tail(victim.output(), 20))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(survivor.output(), `"generation"`) {
		t.Fatalf("no rebalance logged by the survivor:\n%s", tail(survivor.output(), 20))
	}

	// What the dead member's open transaction cost: the wait for it to
	// be aborted (transaction_timeout, and the brokers' 10 s sweep).
	for _, line := range strings.Split(survivor.output()+victim.output(), "\n") {
		if strings.Contains(line, "the open transaction ended") {
			t.Logf("taking over: %s", line)
		}
	}
	good := n - n/badEvery
	seen := map[string]int{}
	for _, r := range readIsolated(t, out, true, good) {
		seen[sourceOf(r)]++
	}
	for pos, c := range seen {
		if c != 1 {
			t.Errorf("source record %s read %d times with read_committed", pos, c)
		}
	}
	if len(seen) != good {
		t.Errorf("%d distinct source records in the output topic with read_committed, want %d; missing: %s", len(seen), good, missingRanges(seen, n, partitions, badEvery))
		t.Logf("survivor:\n%s\nvictim after its restart:\n%s", tail(survivor.output(), 30), tail(victim.output(), 30))
	}
	if all := len(readIsolated(t, out, false, good+1)); all <= good {
		t.Errorf("read_uncommitted reads %d records, no more than the %d committed: no transaction was cut short", all, good)
	}
	letters := map[string]int{}
	for _, r := range readIsolated(t, dlq, true, n/badEvery) {
		letters[sourceOf(r)]++
	}
	for pos, c := range letters {
		if c != 1 {
			t.Errorf("dead letter %s read %d times with read_committed", pos, c)
		}
	}
	if len(letters) != n/badEvery {
		t.Errorf("%d distinct dead letters, want %d", len(letters), n/badEvery)
	}
}

// missingRanges names the good source records seen lacks, as runs per
// partition.
func missingRanges(seen map[string]int, n, partitions, badEvery int) string {
	var b strings.Builder
	for p := 0; p < partitions; p++ {
		start := -1
		for o := 0; o <= n/partitions; o++ {
			i := o*partitions + p
			missing := o < n/partitions && i%badEvery != badEvery-1 && seen[fmt.Sprintf("%d:%d", p, o)] == 0
			if missing && start < 0 {
				start = o
			}
			if !missing && start >= 0 && (o == n/partitions || (o*partitions+p)%badEvery != badEvery-1) {
				fmt.Fprintf(&b, " %d:%d-%d", p, start, o-1)
				start = -1
			}
		}
	}
	return b.String()
}

// sourceOf is a produced record's source partition:offset.
func sourceOf(r *kgo.Record) string {
	var p, o string
	for _, h := range r.Headers {
		switch h.Key {
		case sink.HeaderSourcePartition:
			p = string(h.Value)
		case sink.HeaderSourceOffset:
			o = string(h.Value)
		}
	}
	return p + ":" + o
}

// readIsolated reads topic from the start, read_committed or not, until it
// is quiet for two seconds (or 60 s passed); want is what the caller
// expects, for the log.
func readIsolated(t *testing.T, topic string, committed bool, want int) []*kgo.Record {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	deadline, quiet := time.Now().Add(60*time.Second), time.Time{}
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r); got++ })
		// Everything is committed before this is called: a quiet
		// partition set is the end, however many records came.
		if quiet.IsZero() || got > 0 {
			quiet = time.Now()
		} else if time.Since(quiet) > 2*time.Second {
			break
		}
	}
	t.Logf("%s (read_committed %v): %d records, %d expected", topic, committed, len(recs), want)
	return recs
}
