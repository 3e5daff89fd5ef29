//go:build integration

package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestE2ERecreatedTopicUnderExactlyOnceStops (issue 45, defect 2) on the
// real cluster: an exactly-once job writing Kafka alone read 100 records
// of a topic that is then deleted and created again with 150. Kafka drops
// the group's offsets with the topic; the positions topic's record of the
// old topic (next 100) stood in for them, and the job read the new topic
// from 100: 100 of its 150 records in no output, nothing counted lost,
// and no stop under on_offset_out_of_range: fail. The record names the
// topic's id: the job stops, naming the partition, the recreated topic and
// what it holds, and produces nothing of the new topic.
func TestE2ERecreatedTopicUnderExactlyOnceStops(t *testing.T) {
	const n = 100
	topic, out := e2eTopic(t, 1), e2eTopic(t, 1)
	produceLogs(t, topic, n, 1, 0)
	cfg := e2eConfig(t, topic, topic+"-g", t.TempDir(), 40)
	text := readFile(t, cfg) // the Kafka output in place of the files
	rewrite(t, cfg, text[strings.Index(text, "  files:\n"):strings.Index(text, "log:\n")],
		fmt.Sprintf("  kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}\ndead_letter:\n  on_error: skip\n", out))
	if st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-a"); !st.Success() {
		t.Fatalf("first run: %v\n%s", st, tail(log, 30))
	}
	recreateE2ETopic(t, topic, 1)
	produceLogs(t, topic, n+n/2, 1, 0)

	st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-a")
	if st.Success() || st.ExitCode() != 1 {
		t.Fatalf("the run over the recreated topic ended with %v, want exit 1:\n%s", st, tail(log, 30))
	}
	for _, want := range []string{topic + "/0", "deleted and recreated", "next 100", "holds [0, 150)"} {
		if !strings.Contains(log, want) {
			t.Errorf("the error does not say %q:\n%s", want, tail(log, 15))
		}
	}
	seen := map[string]int{}
	for _, r := range readIsolated(t, out, true, n) {
		seen[sourceOf(r)]++
	}
	for o := range n {
		if c := seen[fmt.Sprintf("0:%d", o)]; c != 1 {
			t.Errorf("source record 0:%d of the old topic read %d times with read_committed, want once", o, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d source records in the output, want the old topic's %d alone", len(seen), n)
	}
}
