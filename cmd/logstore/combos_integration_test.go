//go:build integration

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/sink"
)

// TestE2EOutputsUsersRunKeepTheirGuaranteesThroughKills: the combinations
// of outputs users run most, on the real cluster, SIGKILLed at steps of
// the commit cycle and then run to the end (the wide matrix, every
// combination and every step, is pipeline's
// TestEveryRecordOnceWhateverStepAStopFalls on the in-process cluster).
// Every source record ends up once as a row or as a dead letter in the
// exactly-once outputs; a dead-letter topic beside no exactly-once Kafka
// holds every dead letter at least once.
func TestE2EOutputsUsersRunKeepTheirGuaranteesThroughKills(t *testing.T) {
	const n, partitions, maxRows, badEvery = 600, 2, 100, 10
	t.Run("files_kafka_eos_dlq_topic", func(t *testing.T) {
		topic, out, dlq := e2eTopic(t, partitions), e2eTopic(t, 1), e2eTopic(t, 1)
		produceLogs(t, topic, n, partitions, badEvery)
		cfg := e2eConfig(t, topic, topic+"-g", t.TempDir(), maxRows)
		rewrite(t, cfg, "dead_letter:\n  files: true\n",
			fmt.Sprintf("  kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}\ndead_letter:\n  topic: %s\n", out, dlq))
		staticMember(t, cfg)
		killAndFinishKafka(t, cfg, sink.FailInTxn+":2", sink.FailTxnEnding+":1", sink.FailTxnCommitted+":1")
		rows, dead := sourcesOf(t, out, true, n-n/badEvery), sourcesOf(t, dlq, true, n/badEvery)
		eachSourceOnce(t, n, partitions, badEvery, rows, dead, 0)
	})
	t.Run("table_dlq_topic", func(t *testing.T) {
		topic, dlq := e2eTopic(t, partitions), e2eTopic(t, 1)
		produceLogs(t, topic, n, partitions, badEvery)
		bucket := s3Env(t)
		catalog := filepath.Join(t.TempDir(), "catalog.db")
		cfg := icebergConfig(t, topic, catalog, bucket, maxRows)
		rewrite(t, cfg, "dead_letter:\n  on_error: skip # the generated records are all good\n", "dead_letter:\n  topic: "+dlq+"\n")
		// A kill after the table's snapshot and before the dead letters
		// were produced lost them before they went first.
		killAndFinishKafka(t, cfg, sink.FailTableCommitted+":2", sink.FailTableCommitted+":1")
		rows := map[string]int{}
		for _, r := range readIceberg(t, catalog, "logs."+strings.ReplaceAll(topic, "-", "_")).Rows {
			rows[fmt.Sprintf("%d:%d", r.Partition, r.Offset)]++
		}
		// Each kill may leave every partition's batch to be written again.
		eachSourceOnce(t, n, partitions, badEvery, rows, sourcesOf(t, dlq, true, n/badEvery), 2*partitions*maxRows/badEvery)
	})
	// Killed after a transaction committed and before the table's snapshot
	// of its batches, then the group's offsets are lost (the group renamed,
	// sinks.kafka.adopt_positions_of naming the old one, stands for
	// offsets expired or deleted): the table is behind the
	// Kafka output, whose own record is its positions topic. Before that
	// topic the batch came to the output topic again (100 rows twice);
	// with it but before commits named their batch's first offset, the
	// table, which held nothing yet, lost it (80 rows and dead letters).
	t.Run("table_kafka_eos_dlq_topic_offsets_lost", func(t *testing.T) {
		const partitions = 1 // the first batch cut after the loss is the one read again
		topic, out, dlq := e2eTopic(t, partitions), e2eTopic(t, 1), e2eTopic(t, 1)
		produceLogs(t, topic, n, partitions, badEvery)
		catalog := filepath.Join(t.TempDir(), "catalog.db")
		cfg := icebergConfig(t, topic, catalog, s3Env(t), maxRows)
		rewrite(t, cfg, "dead_letter:\n  on_error: skip # the generated records are all good\n",
			fmt.Sprintf("  kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}\ndead_letter:\n  topic: %s\n", out, dlq))
		if st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-a", "LOGSTORE_FAILPOINT="+sink.FailTxnCommitted+":2"); st.Success() {
			t.Fatalf("the run was not killed:\n%s", tail(log, 20))
		}
		rewrite(t, cfg, "group: "+topic+"-g\n", "group: "+topic+"-g2\n")
		rewrite(t, cfg, "delivery: exactly_once,", "delivery: exactly_once, adopt_positions_of: "+topic+"-g,")
		// Killed again as the first batch is cut: a batch read again for
		// the table alone must not move the group's offset back behind the
		// Kafka output with its cut mark (120 rows twice in the chaos suite).
		killAndFinishKafka(t, cfg, sink.FailMarked+":1")
		table := map[string]int{}
		for _, r := range readIceberg(t, catalog, "logs."+strings.ReplaceAll(topic, "-", "_")).Rows {
			table[fmt.Sprintf("%d:%d", r.Partition, r.Offset)]++
		}
		dead := sourcesOf(t, dlq, true, n/badEvery)
		eachSourceOnce(t, n, partitions, badEvery, table, dead, 0)
		eachSourceOnce(t, n, partitions, badEvery, sourcesOf(t, out, true, n-n/badEvery), dead, 0)
	})
}

// rewrite replaces old by new in the config file cfg.
func rewrite(t *testing.T, cfg, old, new string) {
	t.Helper()
	text := readFile(t, cfg)
	if !strings.Contains(text, old) {
		t.Fatalf("%q is not in the config", old)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(text, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// staticMember makes cfg's member static, so a run after a kill takes the
// partitions and the transactional id back at once (aborting the killed
// run's open transaction) instead of waiting out its session and
// transaction_timeout.
func staticMember(t *testing.T, cfg string) {
	t.Helper()
	rewrite(t, cfg, "  session_timeout: 10s\n", "  group_instance_id: member-1\n  session_timeout: 10s\n")
}

// killAndFinishKafka runs the job once for each failpoint, killed there,
// then once to the end.
func killAndFinishKafka(t *testing.T, cfg string, failpoints ...string) {
	t.Helper()
	for _, fp := range failpoints {
		start := time.Now()
		st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-a", "LOGSTORE_FAILPOINT="+fp)
		if st.Success() {
			t.Fatalf("the run was not killed at %s:\n%s", fp, tail(log, 20))
		}
		t.Logf("killed at %s after %s", fp, time.Since(start).Round(100*time.Millisecond))
	}
	start := time.Now()
	if st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-a"); !st.Success() {
		t.Fatalf("the run after the kills: %v\n%s", st, tail(log, 20))
	}
	t.Logf("the run after the kills took %s", time.Since(start).Round(100*time.Millisecond))
}

// sourcesOf counts the source records (partition:offset) of topic's
// records.
func sourcesOf(t *testing.T, topic string, committed bool, want int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, r := range readIsolated(t, topic, committed, want) {
		seen[sourceOf(r)]++
	}
	return seen
}

// eachSourceOnce checks that every good record of produceLogs(n,
// partitions, badEvery) is once in rows and every bad one in dead: once,
// or, when deadAgain > 0, at least once with at most deadAgain repeats.
func eachSourceOnce(t *testing.T, n, partitions, badEvery int, rows, dead map[string]int, deadAgain int) {
	t.Helper()
	bad, again := 0, 0
	for i := range n {
		src := fmt.Sprintf("%d:%d", i%partitions, i/partitions)
		in, other, what := rows, dead, "rows"
		if i%badEvery == badEvery-1 {
			in, other, what = dead, rows, "dead letters"
		}
		c := in[src]
		if what == "dead letters" && deadAgain > 0 && c > 1 {
			again += c - 1
			c = 1
		}
		if c != 1 || other[src] != 0 {
			if bad++; bad <= 10 {
				t.Errorf("record %s: %d times in the %s, %d in the other output", src, in[src], what, other[src])
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d records in all not where they belong once", bad)
	}
	for what, out := range map[string]map[string]int{"rows": rows, "dead letters": dead} {
		for src, c := range out {
			var p, o int
			if _, err := fmt.Sscanf(src, "%d:%d", &p, &o); err != nil || p >= partitions || o >= n/partitions {
				t.Errorf("the %s hold %d records of source %q, which was not produced", what, c, src)
			}
		}
	}
	if again > deadAgain {
		t.Errorf("%d dead letters written again, more than the %d of the batches in flight at the kills", again, deadAgain)
	} else if again > 0 {
		t.Logf("%d dead letters written again (the topic is at least once beside no exactly-once Kafka)", again)
	}
}
